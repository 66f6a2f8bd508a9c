package mysqlsim

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shipstream/bloodraven/pkg/gtid"
)

// expr is a parsed scalar expression of the small subset the simulator
// evaluates: literals, system variables, column names and function calls.
type expr struct {
	kind  exprKind
	text  string // literal text, variable or function or column name
	sc    scope
	args  []expr
	star  bool // COUNT(*) or SELECT *
	isNum bool
}

type exprKind int

const (
	eLiteral exprKind = iota
	eNull
	eSysVar
	eCall
	eColumn
	eStar
)

type selItem struct {
	e    expr
	name string // column name in the result: alias or the expression text
}

func (c *cursor) parseExpr() (expr, error) {
	t := c.next()
	switch {
	case t.kind == tString:
		return expr{kind: eLiteral, text: t.text}, nil
	case t.kind == tNumber:
		return expr{kind: eLiteral, text: t.text, isNum: true}, nil
	case t.isPunct("-") && c.peek().kind == tNumber:
		n := c.next()
		return expr{kind: eLiteral, text: "-" + n.text, isNum: true}, nil
	case t.isPunct("*"):
		return expr{kind: eStar, star: true}, nil
	case t.isPunct("("):
		e, err := c.parseExpr()
		if err != nil {
			return e, err
		}
		if !c.acceptPunct(")") {
			return e, c.errHere()
		}
		return e, nil
	case t.kind == tSysVar:
		name, sc := t.text, scopeDefault
		if lower := strings.ToLower(name); strings.HasPrefix(lower, "global.") {
			name, sc = name[7:], scopeGlobal
		} else if strings.HasPrefix(lower, "session.") {
			name, sc = name[8:], scopeSession
		} else if strings.HasPrefix(lower, "local.") {
			name, sc = name[6:], scopeSession
		}
		return expr{kind: eSysVar, text: strings.ToLower(name), sc: sc}, nil
	case t.isKw("NULL"):
		return expr{kind: eNull}, nil
	case t.isKw("TRUE"):
		return expr{kind: eLiteral, text: "1", isNum: true}, nil
	case t.isKw("FALSE"):
		return expr{kind: eLiteral, text: "0", isNum: true}, nil
	case t.kind == tIdent || t.kind == tQIdent:
		if t.kind == tIdent && c.acceptPunct("(") {
			call := expr{kind: eCall, text: strings.ToUpper(t.text)}
			if c.acceptPunct(")") {
				return call, nil
			}
			for {
				a, err := c.parseExpr()
				if err != nil {
					return a, err
				}
				call.args = append(call.args, a)
				if c.acceptPunct(")") {
					return call, nil
				}
				if !c.acceptPunct(",") {
					return call, c.errHere()
				}
			}
		}
		name := t.text
		if c.acceptPunct(".") { // qualified column: keep the column part
			n, err := c.ident()
			if err != nil {
				return expr{}, err
			}
			name = n
		}
		return expr{kind: eColumn, text: name}, nil
	}
	c.i--
	return expr{}, c.errHere()
}

// parseSelectList reads "item [[AS] alias], ..." and stops before FROM or the end.
func (c *cursor) parseSelectList() ([]selItem, error) {
	var items []selItem
	for {
		start := c.peek().pos
		e, err := c.parseExpr()
		if err != nil {
			return nil, err
		}
		end := c.toks[c.i-1].end
		item := selItem{e: e, name: strings.TrimSpace(c.sql[start:end])}
		if c.acceptKw("AS") {
			t := c.next()
			if t.kind != tIdent && t.kind != tQIdent && t.kind != tString {
				c.i--
				return nil, c.errHere()
			}
			item.name = t.text
		} else if t := c.peek(); (t.kind == tIdent && !t.isKw("FROM", "WHERE", "LIMIT")) || t.kind == tQIdent {
			item.name = c.next().text
		}
		items = append(items, item)
		if !c.acceptPunct(",") {
			return items, nil
		}
	}
}

func (s *Server) execSelect(sess *session, c *cursor) (*table, error) {
	items, err := c.parseSelectList()
	if err != nil {
		return nil, err
	}
	if c.acceptKw("FROM") {
		db, name, err := c.qualifiedName()
		if err != nil {
			return nil, err
		}
		if t, ok, err := s.selectReplicationTable(sess, db, name, items, c); ok { // pfs_repl.go
			return t, err
		}
		if isPluginsTable(db, name) { // plugins.go
			return s.selectPlugins(items, c)
		}
		if isSchemataTable(db, name) { // schemata.go
			return s.selectSchemata(sess, items, c)
		}
		if c.acceptKw("WHERE") || c.acceptKw("ORDER") || c.acceptKw("LIMIT") || c.acceptKw("GROUP") {
			return nil, errNotSupported("WHERE, ORDER BY, GROUP BY and LIMIT in the Bloodraven MySQL simulator")
		}
		if err := c.expectEnd(); err != nil {
			return nil, err
		}
		if strings.EqualFold(db, "mysql") && strings.EqualFold(name, "user") {
			return s.selectMySQLUser(sess, items) // grants.go
		}
		if strings.EqualFold(name, "processlist") && (strings.EqualFold(db, "performance_schema") || strings.EqualFold(db, "information_schema")) {
			return s.selectProcesslist(sess, items, strings.EqualFold(db, "performance_schema"))
		}
		return s.selectTable(sess, db, name, items)
	}
	if err := c.expectEnd(); err != nil {
		return nil, err
	}
	return s.evalItems(sess, items)
}

// selectExprs evaluates a select list without FROM (SELECT and DO).
func (s *Server) selectExprs(sess *session, c *cursor) (*table, error) {
	items, err := c.parseSelectList()
	if err != nil {
		return nil, err
	}
	if err := c.expectEnd(); err != nil {
		return nil, err
	}
	return s.evalItems(sess, items)
}

func (s *Server) evalItems(sess *session, items []selItem) (*table, error) {
	t := &table{rows: [][]any{make([]any, len(items))}}
	for i, it := range items {
		v, typ, err := s.eval(sess, it.e)
		if err != nil {
			return nil, err
		}
		t.cols = append(t.cols, column{it.name, typ})
		t.rows[0][i] = v
	}
	return t, nil
}

// eval computes one expression. Values are nil, int64, uint64 or string.
func (s *Server) eval(sess *session, e expr) (any, colType, error) {
	switch e.kind {
	case eNull:
		return nil, colString, nil
	case eLiteral:
		if e.isNum {
			if n, err := strconv.ParseInt(e.text, 10, 64); err == nil {
				return n, colInt, nil
			}
			return e.text, colString, nil
		}
		return e.text, colString, nil
	case eSysVar:
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.getVarLocked(sess, e.text, e.sc)
	case eCall:
		return s.call(sess, e)
	case eColumn:
		if strings.HasPrefix(e.text, "@") {
			return s.userVar(sess, e.text[1:]) // dump.go
		}
		return nil, 0, myErr(1054, "Unknown column '%s' in 'field list'", e.text)
	}
	return nil, 0, errParse("*")
}

func (s *Server) evalArgs(sess *session, e expr, min, max int) ([]any, error) {
	if len(e.args) < min || len(e.args) > max {
		return nil, myErr(1582, "Incorrect parameter count in the call to native function '%s'", e.text)
	}
	out := make([]any, len(e.args))
	for i, a := range e.args {
		v, _, err := s.eval(sess, a)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func argString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	}
	return ""
}

func parseSetArg(v any) (gtid.Set, error) {
	str := argString(v)
	set, err := gtid.Parse(str)
	if err != nil {
		return gtid.Set{}, errMalformedGTIDSet(str)
	}
	return set, nil
}

// call evaluates the functions the product uses.
func (s *Server) call(sess *session, e expr) (any, colType, error) {
	switch e.text {
	case "GTID_SUBTRACT", "GTID_SUBSET":
		args, err := s.evalArgs(sess, e, 2, 2)
		if err != nil {
			return nil, 0, err
		}
		typ := colString
		if e.text == "GTID_SUBSET" {
			typ = colInt
		}
		if args[0] == nil || args[1] == nil {
			return nil, typ, nil
		}
		a, err := parseSetArg(args[0])
		if err != nil {
			return nil, 0, err
		}
		b, err := parseSetArg(args[1])
		if err != nil {
			return nil, 0, err
		}
		if e.text == "GTID_SUBSET" {
			return boolInt(a.IsSubsetOf(b)), colInt, nil
		}
		return a.Subtract(b).String(), colString, nil
	case "WAIT_FOR_EXECUTED_GTID_SET":
		return s.waitForExecutedGTIDSet(sess, e)
	case "CONNECTION_ID":
		return sess.id, colUint, nil
	case "VERSION":
		return Version, colString, nil
	case "DATABASE", "SCHEMA":
		s.mu.Lock()
		defer s.mu.Unlock()
		if sess.db == "" {
			return nil, colString, nil
		}
		return sess.db, colString, nil
	case "USER", "CURRENT_USER", "SESSION_USER", "SYSTEM_USER":
		host := sess.host
		if i := strings.LastIndex(host, ":"); i >= 0 {
			host = host[:i]
		}
		if e.text == "CURRENT_USER" {
			host = sess.accountHost()
		}
		return sess.user.Name + "@" + host, colString, nil
	case "SLEEP":
		args, err := s.evalArgs(sess, e, 1, 1)
		if err != nil {
			return nil, 0, err
		}
		d, _ := strconv.ParseFloat(argString(args[0]), 64)
		select {
		case <-time.After(time.Duration(d * float64(time.Second))):
			return int64(0), colInt, nil
		case <-sess.killed:
			return int64(1), colInt, nil
		case <-s.queryKillCh(sess):
			return int64(1), colInt, nil
		}
	case "UNIX_TIMESTAMP": // a replica's receiver asks for the source's clock
		return time.Now().Unix(), colInt, nil
	case "NOW", "CURRENT_TIMESTAMP", "UTC_TIMESTAMP":
		return s.evalNow(sess, e)
	}
	return nil, 0, myErr(1305, "FUNCTION %s does not exist", strings.ToLower(e.text))
}

// evalNow is NOW([fsp]) (manual, "Date and Time Functions"): the time with
// fsp (0 to 6) fractional-second digits; a larger fsp gives 1426. The
// simulator's time zone is UTC.
func (s *Server) evalNow(sess *session, e expr) (any, colType, error) {
	args, err := s.evalArgs(sess, e, 0, 1)
	if err != nil {
		return nil, 0, err
	}
	fsp := 0
	if len(args) == 1 {
		if fsp, err = strconv.Atoi(argString(args[0])); err != nil || fsp < 0 {
			return nil, 0, myErr(1064, "You have an error in your SQL syntax near '%s'", argString(args[0]))
		}
		if fsp > 6 {
			return nil, 0, myErr(1426, "Too-big precision %d specified for '%s'. Maximum is 6.", fsp, strings.ToLower(e.text))
		}
	}
	layout := "2006-01-02 15:04:05"
	if fsp > 0 {
		layout += "." + strings.Repeat("0", fsp)
	}
	return time.Now().UTC().Truncate(time.Microsecond).Format(layout), colString, nil
}

func (s *Server) queryKillCh(sess *session) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess.queryKil == nil {
		return nil
	}
	return sess.queryKil
}

// waitForExecutedGTIDSet implements WAIT_FOR_EXECUTED_GTID_SET(set[, timeout]):
// 0 once gtid_executed contains set, 1 on timeout; no timeout (or 0) waits
// indefinitely; a negative timeout is an error (MySQL 8.0.18+).
func (s *Server) waitForExecutedGTIDSet(sess *session, e expr) (any, colType, error) {
	args, err := s.evalArgs(sess, e, 1, 2)
	if err != nil {
		return nil, 0, err
	}
	if args[0] == nil {
		return nil, 0, myErr(ErWrongArguments, "Incorrect arguments to WAIT_FOR_EXECUTED_GTID_SET.")
	}
	want, err := parseSetArg(args[0])
	if err != nil {
		return nil, 0, err
	}
	var timeout time.Duration
	if len(args) == 2 {
		secs, perr := strconv.ParseFloat(argString(args[1]), 64)
		if perr != nil || secs < 0 || math.IsNaN(secs) {
			return nil, 0, myErr(ErWrongArguments, "Incorrect arguments to WAIT_FOR_EXECUTED_GTID_SET.")
		}
		timeout = time.Duration(secs * float64(time.Second))
	}
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	s.mu.Lock()
	sess.state = "Waiting for GTID to be committed"
	qk := sess.queryKil
	s.mu.Unlock()
	for {
		s.mu.Lock()
		done := want.IsSubsetOf(s.st.executed)
		changed := s.waitChangeLocked()
		s.mu.Unlock()
		if done {
			return int64(0), colInt, nil
		}
		select {
		case <-changed:
		case <-deadline:
			return int64(1), colInt, nil
		case <-sess.killed:
			return nil, 0, myErr(ErQueryInterrupted, "Query execution was interrupted")
		case <-qk:
			return nil, 0, myErr(ErQueryInterrupted, "Query execution was interrupted")
		}
	}
}

// processlistColumns are performance_schema.processlist's columns (the
// information_schema table has the same first eight).
var processlistColumns = []column{
	{"ID", colUint}, {"USER", colString}, {"HOST", colString}, {"DB", colString},
	{"COMMAND", colString}, {"TIME", colInt}, {"STATE", colString}, {"INFO", colString},
	{"EXECUTION_ENGINE", colString},
}

// processlistRowsLocked lists sessions visible to sess: all of them with the
// PROCESS privilege, otherwise only its own user's (as MySQL does).
func (s *Server) processlistRowsLocked(sess *session) [][]any {
	var rows [][]any
	ids := make([]uint64, 0, len(s.sessions))
	for id := range s.sessions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		o := s.sessions[id]
		if o.command == "Connect" && o.user.Name == "" {
			continue
		}
		if !sess.hasPrivilege("PROCESS") && o.user.Name != sess.user.Name {
			continue
		}
		var db, info, state any
		if o.db != "" {
			db = o.db
		}
		if o.info != "" {
			info = o.info
		}
		state = o.state
		rows = append(rows, []any{o.id, o.user.Name, o.host, db, o.command,
			int64(time.Since(o.since) / time.Second), state, info, "PRIMARY"})
	}
	rows = append(rows, s.replicationProcesslistLocked()...)
	return rows
}

// selectProcesslist answers SELECT … FROM performance_schema.processlist or
// information_schema.processlist. The performance_schema table shows an empty
// USER or HOST as NULL (storage/perfschema/table_processlist.cc): the
// replication threads, whose host is empty, have HOST NULL there.
func (s *Server) selectProcesslist(sess *session, items []selItem, perfSchema bool) (*table, error) {
	s.mu.Lock()
	rows := s.processlistRowsLocked(sess)
	s.mu.Unlock()
	if perfSchema {
		for _, r := range rows {
			for _, i := range []int{1, 2} { // USER, HOST
				if r[i] == "" {
					r[i] = nil
				}
			}
		}
	}
	return project(processlistColumns, rows, items)
}

// project picks the selected columns (or *) from a full table.
func project(cols []column, rows [][]any, items []selItem) (*table, error) {
	var idx []int
	out := &table{}
	for _, it := range items {
		switch it.e.kind {
		case eStar:
			for i, c := range cols {
				idx = append(idx, i)
				out.cols = append(out.cols, c)
			}
		case eColumn:
			found := false
			for i, c := range cols {
				if strings.EqualFold(c.name, it.e.text) {
					idx = append(idx, i)
					name := it.name
					if name == it.e.text {
						name = c.name
					}
					out.cols = append(out.cols, column{name, c.typ})
					found = true
					break
				}
			}
			if !found {
				return nil, myErr(1054, "Unknown column '%s' in 'field list'", it.e.text)
			}
		case eCall:
			if it.e.text == "COUNT" && len(it.e.args) == 1 && it.e.args[0].kind == eStar && len(items) == 1 {
				return &table{cols: []column{{it.name, colInt}}, rows: [][]any{{int64(len(rows))}}}, nil
			}
			return nil, errNotSupported("functions other than COUNT(*) over tables in the Bloodraven MySQL simulator")
		default:
			return nil, errNotSupported("expressions over tables in the Bloodraven MySQL simulator")
		}
	}
	for _, r := range rows {
		nr := make([]any, len(idx))
		for j, i := range idx {
			nr[j] = r[i]
		}
		out.rows = append(out.rows, nr)
	}
	return out, nil
}

func (s *Server) selectTable(sess *session, db, name string, items []selItem) (*table, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if db == "" {
		db = sess.db
	}
	if db == "" {
		return nil, myErr(ErNoDB, "No database selected")
	}
	if !sess.hasTablePrivilege(db, name, "SELECT") {
		return nil, myErr(ErTableAccessDenied, "SELECT command denied to user '%s'@'%s' for table '%s'", sess.user.Name, sess.accountHost(), name)
	}
	t, err := s.readTableLocked(sess, db, name) // backuplocks.go: a consistent snapshot's read view
	if err != nil {
		return nil, err
	}
	cols := make([]column, len(t.cols))
	for i, c := range t.cols {
		cols[i] = column{c, colString}
	}
	rows := make([][]any, len(t.rows))
	for i, r := range t.rows {
		nr := make([]any, len(r))
		for j, v := range r {
			if v != nil {
				v = argString(v)
			}
			nr[j] = v
		}
		rows[i] = nr
	}
	return project(cols, rows, items)
}
