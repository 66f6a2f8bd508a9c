package mysqlsim

import (
	"sort"
	"strings"
)

func (s *Server) execShow(sess *session, c *cursor) (*table, error) {
	switch {
	case c.acceptKw("REPLICA", "STATUS"):
		channel := ""
		if c.acceptKw("FOR", "CHANNEL") {
			name, err := c.stringLit()
			if err != nil {
				return nil, err
			}
			channel = name
		}
		if err := c.expectEnd(); err != nil {
			return nil, err
		}
		if !sess.hasAnyPrivilege("REPLICATION CLIENT", "SUPER") {
			return nil, errNeedPrivilege("SUPER, REPLICATION CLIENT")
		}
		if channel != "" {
			return nil, myErr(3074, "Replica channel '%s' does not exist.", channel)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.replicaStatusLocked(), nil
	case c.acceptKw("STATUS"), c.acceptKw("GLOBAL", "STATUS"), c.acceptKw("SESSION", "STATUS"): // authstats.go
		return s.showStatus(c)
	case c.acceptKw("PLUGINS"): // plugins.go
		return s.showPlugins(c)
	case c.acceptKw("PROCESSLIST"), c.acceptKw("FULL", "PROCESSLIST"):
		if err := c.expectEnd(); err != nil {
			return nil, err
		}
		s.mu.Lock()
		rows := s.processlistRowsLocked(sess)
		s.mu.Unlock()
		t := &table{cols: []column{{"Id", colUint}, {"User", colString}, {"Host", colString}, {"db", colString},
			{"Command", colString}, {"Time", colInt}, {"State", colString}, {"Info", colString}}}
		for _, r := range rows {
			t.rows = append(t.rows, r[:8])
		}
		return t, nil
	case c.acceptKw("BINARY", "LOG", "STATUS"):
		if err := c.expectEnd(); err != nil {
			return nil, err
		}
		if !sess.hasAnyPrivilege("REPLICATION CLIENT", "SUPER") {
			return nil, errNeedPrivilege("SUPER, REPLICATION CLIENT")
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.binaryLogStatusLocked(), nil
	case c.acceptKw("REPLICAS"), c.acceptKw("SLAVE", "HOSTS"): // dump.go
		return s.showReplicas(sess, c)
	case c.acceptKw("BINARY", "LOGS"):
		return s.showBinaryLogs(sess, c)
	case c.acceptKw("BINLOG", "EVENTS"):
		return s.showBinlogEvents(sess, c)
	case c.peek().isKw("TABLES", "FULL"): // showtables.go
		return s.showTables(sess, c)
	case c.acceptKw("DATABASES"), c.acceptKw("SCHEMAS"):
		if err := c.expectEnd(); err != nil {
			return nil, err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		t := &table{cols: []column{{"Database", colString}}}
		var names []string
		for n := range s.st.dbs {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			t.rows = append(t.rows, []any{n})
		}
		return t, nil
	}
	// SHOW [GLOBAL|SESSION] VARIABLES [LIKE 'pattern']
	sc := scopeSession
	if c.acceptKw("GLOBAL") {
		sc = scopeGlobal
	} else {
		c.acceptKw("SESSION")
	}
	if !c.acceptKw("VARIABLES") {
		return nil, c.errHere()
	}
	pattern := "%"
	if c.acceptKw("LIKE") {
		p, err := c.stringLit()
		if err != nil {
			return nil, err
		}
		pattern = p
	}
	if err := c.expectEnd(); err != nil {
		return nil, err
	}
	var names []string
	for n, def := range sysVars {
		if sc == scopeGlobal && def.kind == sessionOnly {
			continue
		}
		if likeMatch(strings.ToLower(pattern), n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	t := &table{cols: []column{{"Variable_name", colString}, {"Value", colString}}}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range names {
		vsc := sc
		if sysVars[n].kind == globalOnly {
			vsc = scopeGlobal
		}
		v, typ, err := s.getVarLocked(sess, n, vsc)
		if err != nil {
			continue
		}
		str := argString(v)
		if typ == colInt && (n == "read_only" || n == "super_read_only" || n == "offline_mode" || n == "log_bin" || n == "log_replica_updates" || n == "skip_replica_start" || n == "autocommit" || n == "sql_log_bin" || n == "relay_log_purge" || n == "relay_log_recovery") {
			str = map[string]string{"0": "OFF", "1": "ON"}[str]
		}
		t.rows = append(t.rows, []any{n, str})
	}
	return t, nil
}

// likeMatch implements SQL LIKE with % and _ (no escapes).
func likeMatch(p, s string) bool {
	if p == "" {
		return s == ""
	}
	switch p[0] {
	case '%':
		for i := 0; i <= len(s); i++ {
			if likeMatch(p[1:], s[i:]) {
				return true
			}
		}
		return false
	case '_':
		return s != "" && likeMatch(p[1:], s[1:])
	}
	return s != "" && s[0] == p[0] && likeMatch(p[1:], s[1:])
}
