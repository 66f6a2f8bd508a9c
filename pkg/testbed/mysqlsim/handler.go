package mysqlsim

import (
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/server"
)

// authHandler resolves credentials for one connection.
type authHandler struct {
	s    *Server
	sess *session
}

// GetCredential names the account's plugin; the password is checked by
// authProvider (auth.go) against the account store, so the credential
// holds no password (go-mysql only needs it to be non-empty). An unknown
// user gets caching_sha2_password and fails as a wrong password (1045), as
// in MySQL.
func (a *authHandler) GetCredential(username string) (server.Credential, bool, error) {
	plugin := CachingSHA2Password
	if acct := a.s.loginAccount(username, a.sess.conn.RemoteAddr()); acct != nil {
		plugin = acct.plugin
	}
	return server.Credential{Passwords: []string{"(account store)"}, AuthPluginName: plugin}, true, nil
}

func (a *authHandler) OnAuthSuccess(c *server.Conn) error {
	acct := a.s.loginAccount(c.GetUser(), c.RemoteAddr())
	if acct == nil { // dropped during the handshake
		return myErr(ErAccessDenied, "Access denied for user '%s'@'%s' (using password: YES)", c.GetUser(), a.sess.clientHost())
	}
	if acct.locked {
		return myErr(ErAccountLocked, "Access denied for user '%s'@'%s'. Account is locked.", acct.user, acct.host)
	}
	a.s.mu.Lock()
	a.sess.user = User{Name: acct.user, Plugin: acct.plugin}
	a.sess.acctHost = acct.host
	a.sess.privs.Store(loginPrivs(acct))
	a.sess.program = c.Attributes()["program_name"]
	a.sess.secure = connIsTLS(c)   // transport.go
	err := a.s.admitLocked(a.sess) // connlimit.go
	a.s.mu.Unlock()
	return err
}

func (a *authHandler) OnAuthFailure(*server.Conn, error) {}

// handler implements go-mysql's server.Handler for one connection.
type handler struct {
	s    *Server
	sess *session
	conn *server.Conn
}

func (h *handler) UseDB(db string) (err error) {
	defer h.recoverTo(&err)
	_, err = h.s.exec(h.sess, "USE "+quoteIdent(db), false)
	return err
}

func (h *handler) HandleQuery(query string) (res *gomysql.Result, err error) {
	defer h.recoverTo(&err)
	stmts, err := splitStatements(query)
	if err != nil {
		return nil, err
	}
	if len(stmts) == 0 {
		return nil, myErr(1065, "Query was empty")
	}
	for _, stmt := range stmts {
		if res, err = h.s.exec(h.sess, stmt, false); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func (h *handler) HandleFieldList(string, string) ([]*gomysql.Field, error) {
	return nil, myErr(1047, "Unknown command")
}

func (h *handler) HandleStmtPrepare(query string) (params, columns int, ctx any, err error) {
	defer h.recoverTo(&err)
	toks, err := lex(query)
	if err != nil {
		return 0, 0, nil, err
	}
	for _, t := range toks {
		if t.kind == tParam {
			params++
		}
	}
	return params, 0, query, nil
}

func (h *handler) HandleStmtExecute(_ any, query string, args []any) (res *gomysql.Result, err error) {
	defer h.recoverTo(&err)
	text, err := bindParams(query, args)
	if err == nil {
		res, err = h.s.exec(h.sess, text, true)
	}
	if err != nil {
		return h.writeErrorDirectly(err)
	}
	return res, nil
}

// writeErrorDirectly works around go-mysql wrapping COM_STMT_EXECUTE errors
// (errors.Trace), which would turn every MySQL error number into 1105: the
// error packet is written here and an already-finished result is returned so
// the library writes nothing more.
func (h *handler) writeErrorDirectly(err error) (*gomysql.Result, error) {
	me, ok := err.(*gomysql.MyError)
	if !ok {
		me = myErr(1105, "%s", err.Error())
	}
	data := make([]byte, 4, 16+len(me.Message))
	data = append(data, gomysql.ERR_HEADER, byte(me.Code), byte(me.Code>>8), '#')
	data = append(data, me.State...)
	data = append(data, me.Message...)
	if werr := h.conn.WritePacket(data); werr != nil {
		return nil, werr
	}
	done := &gomysql.Resultset{
		Fields:        []*gomysql.Field{{Name: []byte("x")}},
		Streaming:     gomysql.StreamingMultiple,
		StreamingDone: true,
	}
	return gomysql.NewResult(done), nil
}

func (h *handler) HandleStmtClose(any) error { return nil }

func (h *handler) HandleOtherCommand(cmd byte, data []byte) error {
	switch cmd {
	case gomysql.COM_SET_OPTION, gomysql.COM_RESET_CONNECTION:
		return nil
	case gomysql.COM_REGISTER_SLAVE: // dump.go
		return h.s.registerReplica(h.sess, data)
	case gomysql.COM_BINLOG_DUMP_GTID:
		return h.s.binlogDumpGTID(h.sess, h.conn, data)
	}
	return myErr(1047, "Unknown command")
}

// recoverTo turns a panic in statement handling into error 1105 so that one
// bad statement cannot take the whole process (and every simulated server in
// it) down.
func (h *handler) recoverTo(err *error) {
	if r := recover(); r != nil {
		h.s.log.Error("statement handler panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		*err = myErr(1105, "simulator internal error: %v", r)
	}
}

// bindParams substitutes prepared-statement arguments into the statement as
// literals, so prepared and interpolated execution share one code path.
func bindParams(query string, args []any) (string, error) {
	toks, err := lex(query)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	last, n := 0, 0
	for _, t := range toks {
		if t.kind != tParam {
			continue
		}
		if n >= len(args) {
			return "", myErr(ErWrongArguments, "Incorrect arguments to mysqld_stmt_execute")
		}
		sb.WriteString(query[last:t.pos])
		lit, err := literal(args[n])
		if err != nil {
			return "", err
		}
		sb.WriteString(lit)
		last, n = t.end, n+1
	}
	sb.WriteString(query[last:])
	return sb.String(), nil
}

func literal(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "NULL", nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case uint64:
		return strconv.FormatUint(x, 10), nil
	case int8, int16, int32, uint8, uint16, uint32, int:
		return fmt.Sprint(x), nil
	case float32, float64:
		return fmt.Sprint(x), nil
	case []byte:
		return quoteString(string(x)), nil
	case string:
		return quoteString(x), nil
	case gomysql.TypedBytes:
		return quoteString(string(x.Bytes)), nil
	case *gomysql.TypedBytes:
		return quoteString(string(x.Bytes)), nil
	case time.Time:
		return quoteString(x.Format("2006-01-02 15:04:05.999999")), nil
	default:
		return "", myErr(ErWrongArguments, "Incorrect arguments to mysqld_stmt_execute (type %T)", v)
	}
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }
