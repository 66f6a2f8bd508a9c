package mysqlsim

import (
	"errors"
	"sort"
	"strconv"
	"strings"
	"sync"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
)

// Failed connection attempts (docs/mysql-simulator.md, "Accounts and
// privileges"). MySQL 9.7 exposes them as:
//
//   - the status variable Aborted_connects ("The number of failed attempts
//     to connect to the MySQL server", manual "Server Status Variables"):
//     every connection whose handshake did not end logged in, a wrong
//     password as much as a locked account, a refused extra connection or a
//     client that hung up mid-handshake; reset by a restart like every
//     status variable. The simulator answers it in SHOW [GLOBAL] STATUS.
//   - performance_schema.host_cache.COUNT_AUTHENTICATION_ERRORS, per client
//     host; MySQL keeps no host cache entry for loopback clients (manual
//     "DNS Lookups and the Host Cache"), the only clients the simulator
//     accepts, so that table would always be empty here and is not
//     modelled.
//
// MySQL has no per-user count of failed authentications outside the
// connection_control component, which the product does not load. Tests
// need one (did any consumer fail to log in during a rotation?), so the
// simulator keeps it in Go only, FailedAuthentications, never in SQL.

// authStats is guarded by its own mutex: the authentication path must not
// take Server.mu while go-mysql holds the connection.
type authStats struct {
	mu sync.Mutex
	// failed counts access-denied logins (1045) by the user name the
	// client sent, since the Server was created (across restarts).
	failed map[string]uint64
	// aborted is Aborted_connects of the server generation abortedGen.
	aborted    uint64
	abortedGen uint64
}

func (s *Server) stats() *authStats { return &s.authStats }

// FailedAuthentications is, by the user name clients sent, how many logins
// this Server refused with 1045 "Access denied" (wrong or missing password,
// unknown user) since it was created, across restarts. A locked account or
// a refused extra connection is not an authentication failure (it counts
// in Aborted_connects only).
func (s *Server) FailedAuthentications() map[string]uint64 {
	a := s.stats()
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]uint64, len(a.failed))
	for u, n := range a.failed {
		out[u] = n
	}
	return out
}

// countAuthResult records the outcome of one authentication exchange.
func (s *Server) countAuthResult(user string, err error) {
	var me *gomysql.MyError
	if err == nil || !errors.As(err, &me) || me.Code != ErAccessDenied {
		return
	}
	a := s.stats()
	a.mu.Lock()
	if a.failed == nil {
		a.failed = map[string]uint64{}
	}
	a.failed[user]++
	a.mu.Unlock()
}

// countAbortedConnect is Aborted_connects++ for the running generation.
func (s *Server) countAbortedConnect(gen uint64) {
	a := s.stats()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.abortedGen != gen {
		a.aborted, a.abortedGen = 0, gen
	}
	a.aborted++
}

// abortedConnectsLocked is Aborted_connects since the last start.
func (s *Server) abortedConnectsLocked() uint64 {
	a := s.stats()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.abortedGen != s.gen {
		return 0
	}
	return a.aborted
}

// showStatus answers SHOW [GLOBAL | SESSION] STATUS [LIKE 'pattern'] for
// the status variables the simulator keeps: Aborted_connects (global) and
// Threads_connected. Others are absent rather than invented.
func (s *Server) showStatus(c *cursor) (*table, error) {
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
	s.mu.Lock()
	vals := map[string]uint64{"Aborted_connects": s.abortedConnectsLocked(), "Threads_connected": uint64(len(s.sessions))}
	s.mu.Unlock()
	names := make([]string, 0, len(vals))
	for n := range vals {
		if likeMatch(strings.ToLower(pattern), strings.ToLower(n)) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	t := &table{cols: []column{{"Variable_name", colString}, {"Value", colString}}}
	for _, n := range names {
		t.rows = append(t.rows, []any{n, strconv.FormatUint(vals[n], 10)})
	}
	return t, nil
}
