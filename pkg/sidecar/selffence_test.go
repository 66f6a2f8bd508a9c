package sidecar_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/shipstream/bloodraven/pkg/logschema"
	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/protocol"
	"github.com/shipstream/bloodraven/pkg/sidecar"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
	"github.com/shipstream/bloodraven/pkg/testbed/portlease"
)

// The fencing sequence against a real mysqld process: the simulator command
// runs as a child process of the test with its administrative interface
// open and a pid file naming it (as mysqld's pid-file would), and the
// sidecar runs in-process, isolated from the operator. Writers keep writing
// as the application throughout. Each case checks what the world holds:
// when mysqld itself first answered super_read_only=ON or its process
// ended, and that no writer saw a write acknowledged after the fence
// deadline.

var simBinary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	// The driver logs every connection the fence kills; the tests judge
	// by what the writers saw instead.
	_ = driver.SetLogger(log.New(io.Discard, "", 0))
	code := m.Run()
	if simBinary.dir != "" {
		os.RemoveAll(simBinary.dir)
	}
	os.Exit(code)
}

// buildSim builds cmd/bloodraven-mysqlsim once per test binary.
func buildSim(t testing.TB) string {
	t.Helper()
	simBinary.once.Do(func() {
		if simBinary.dir, simBinary.err = os.MkdirTemp("", "sidecar-fence-"); simBinary.err != nil {
			return
		}
		simBinary.path = filepath.Join(simBinary.dir, "bloodraven-mysqlsim")
		out, err := exec.Command("go", "build", "-o", simBinary.path, "github.com/shipstream/bloodraven/cmd/bloodraven-mysqlsim").CombinedOutput()
		if err != nil {
			simBinary.err = fmt.Errorf("go build bloodraven-mysqlsim: %v\n%s", err, out)
		}
	})
	if simBinary.err != nil {
		t.Fatal(simBinary.err)
	}
	return simBinary.path
}

// freeAddr leases a loopback port for a child process for the whole test
// (portlease): a restarted child listens on it again.
func freeAddr(t testing.TB) string {
	return portlease.AddrForTest(t)
}

// simProcess is a simulated mysqld running as a child process.
type simProcess struct {
	addr, adminAddr, control string
	pidFile                  string
	cmd                      *exec.Cmd
	exited                   chan struct{}
	exitedAt                 time.Time
}

func startSimProcess(t testing.TB) *simProcess {
	t.Helper()
	bin := buildSim(t)
	dir := t.TempDir()
	users := filepath.Join(dir, "users")
	lines := ""
	for _, u := range simtest.Users() {
		lines += fmt.Sprintf("%s:%s:%s:%s\n", u.Name, u.Password, u.Plugin, u.Role)
	}
	if err := os.WriteFile(users, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &simProcess{addr: freeAddr(t), adminAddr: freeAddr(t), control: freeAddr(t),
		pidFile: filepath.Join(dir, "mysqld.pid"), exited: make(chan struct{})}
	p.cmd = exec.Command(bin, "-listen", p.addr, "-admin-addr", p.adminAddr, "-control-addr", p.control,
		"-name", "iad", "-server-id", "1", "-server-uuid", simtest.UUID(1), "-users-file", users)
	// Without -datadir the simulator keeps its binary log in a temporary
	// directory that only a clean shutdown removes; most of these children
	// are killed, so it goes under the test's own directory.
	p.cmd.Env = append(os.Environ(), "TMPDIR="+dir)
	logf, err := os.Create(filepath.Join(dir, "mysqlsim.log"))
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		p.exitedAt = time.Now()
		logf.Close()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill() // our own child, by its PID
			<-p.exited
		}
	})
	// mysqld writes its pid file at start; the simulator command does not,
	// so the test writes it for its child.
	if err := os.WriteFile(p.pidFile, []byte(strconv.Itoa(p.cmd.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	admin := p.open(t, p.adminAddr, simtest.NativeUser, simtest.NativePass, "test-admin")
	deadline := time.Now().Add(20 * time.Second)
	for admin.PingContext(context.Background()) != nil {
		if time.Now().After(deadline) {
			t.Fatal("the simulator process did not answer on its administrative interface")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return p
}

func (p *simProcess) open(t testing.TB, addr, user, pass, program string) *sql.DB {
	t.Helper()
	c, err := mysql.Open(mysql.Options{Addr: addr, User: user, Password: pass, Program: program,
		DialTimeout: time.Second, ReadTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.DB()
}

// running asks the kernel, not the test's own bookkeeping: a child killed
// a moment ago is a zombie until the goroutine waiting on it is scheduled
// and reaps it, and a zombie runs nothing (proc(5): state Z). A loaded CI
// machine once showed that window between the sidecar's Exited verdict and
// the reap.
func (p *simProcess) running() bool {
	select {
	case <-p.exited:
		return false
	default:
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/stat")
	if err != nil {
		return false // reaped in between
	}
	// The state is the first field after the command, which ends at the
	// last ')'.
	rest := strings.TrimSpace(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return rest != "" && rest[0] != 'Z' && rest[0] != 'X'
}

func (p *simProcess) fault(t testing.TB, path string) {
	t.Helper()
	resp, err := http.Post("http://"+p.control+path, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s", path, resp.Status)
	}
}

// superReadOnly asks mysqld itself over the administrative interface.
func superReadOnly(db *sql.DB) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var v int64
	err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.super_read_only").Scan(&v)
	return v == 1, err
}

// writers are application clients that keep writing, each on its own
// connection, reconnecting after errors, and record every acknowledged
// write.
type writers struct {
	mu   sync.Mutex
	acks []time.Time
	errs map[string]int
	stop chan struct{}
	wg   sync.WaitGroup
}

func startWriters(t testing.TB, p *simProcess, n int) *writers {
	t.Helper()
	w := &writers{errs: map[string]int{}, stop: make(chan struct{})}
	for i := 0; i < n; i++ {
		db := p.open(t, p.addr, simtest.AppUser, simtest.AppPass, "app-writer")
		db.SetMaxOpenConns(1)
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for id := int64(i) * 1_000_000; ; id++ {
				select {
				case <-w.stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				_, err := db.ExecContext(ctx, "INSERT INTO shop.orders VALUES (?)", id)
				cancel()
				w.mu.Lock()
				if err == nil {
					w.acks = append(w.acks, time.Now())
				} else {
					w.errs[errClass(err)]++
				}
				w.mu.Unlock()
				time.Sleep(10 * time.Millisecond)
			}
		}()
	}
	t.Cleanup(w.halt)
	return w
}

func (w *writers) halt() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	w.wg.Wait()
}

func (w *writers) acked() []time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Time(nil), w.acks...)
}

func errClass(err error) string {
	switch {
	case mysql.IsReadOnly(err):
		return "1290 read-only"
	case mysql.IsNumber(err, mysqlsim.ErQueryInterrupted):
		return "1317 interrupted"
	case mysql.IsNumber(err, mysqlsim.ErConCount):
		return "1040 too many connections"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	default:
		return "connection lost or refused"
	}
}

// fenceCase is one situation the fencing sequence must get through.
type fenceCase struct {
	name    string
	writers int
	// beforeSidecar and beforeCut set the situation up; admin is a
	// connection on the administrative interface (a DBA's, not the
	// sidecar's account).
	beforeSidecar func(t testing.TB, p *simProcess, admin *sql.DB)
	beforeCut     func(t testing.TB, p *simProcess, admin *sql.DB)
}

// idleOpenTransaction leaves an application connection in BEGIN with a
// write, never committed: the fence waits for it.
func idleOpenTransaction(t testing.TB, p *simProcess, _ *sql.DB) {
	db := p.open(t, p.addr, simtest.AppUser, simtest.AppPass, "app-idle")
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"BEGIN", "INSERT INTO shop.orders VALUES (-1)"} {
		if _, err := conn.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// conn stays open and idle in its transaction until the test ends.
}

var fenceCases = []fenceCase{
	{name: "IdleOpenTransaction", writers: 4, beforeCut: idleOpenTransaction},
	{name: "LargeTransactionRollingBack", writers: 4, beforeCut: func(t testing.TB, p *simProcess, admin *sql.DB) {
		// A killed transaction rolls back for a minute, far past the
		// escalation point.
		p.fault(t, "/rollback-time?duration=1m")
		idleOpenTransaction(t, p, admin)
	}},
	{name: "AllClientConnectionsInUse", writers: 4, beforeSidecar: func(t testing.TB, p *simProcess, admin *sql.DB) {
		// max_connections application sessions (the writers) and a DBA's
		// session on the one connection reserved for CONNECTION_ADMIN:
		// nobody gets another connection on the ordinary interface.
		if _, err := admin.Exec("SET GLOBAL max_connections = 4"); err != nil {
			t.Fatal(err)
		}
	}},
}

// fenceResult is what one case measured.
type fenceResult struct {
	afterCut    time.Duration // cut to the world's first fenced observation
	report      sidecar.FenceReport
	lateAcks    int // writes acknowledged after the fence deadline
	acksAfterCt int // writes acknowledged after the cut (allowed until the deadline)
	errs        map[string]int
}

// runFenceCase isolates a writable primary whose mysqld is in the case's
// situation and measures the fencing sequence.
func runFenceCase(t testing.TB, c fenceCase) fenceResult {
	t.Helper()
	nw := newNetwork()
	op := startOperator(t, nw, "iad", 1)
	p := startSimProcess(t)
	admin := p.open(t, p.adminAddr, simtest.NativeUser, simtest.NativePass, "test-admin")
	admin.SetMaxOpenConns(1)
	for _, q := range []string{"SET GLOBAL read_only = OFF", "CREATE DATABASE shop", "CREATE TABLE shop.orders (id BIGINT)"} {
		if _, err := admin.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if c.beforeSidecar != nil {
		c.beforeSidecar(t, p, admin)
	}
	w := startWriters(t, p, c.writers)
	waitFor(t, 10*time.Second, "every writer's first acknowledged write", func() bool { return len(w.acked()) >= c.writers })
	if c.name == "AllClientConnectionsInUse" {
		fillReservedConnection(t, p)
	}

	logs := logschema.NewRecorder(logschema.Sidecar)
	t.Cleanup(func() { logs.Check(t) })
	sc, err := sidecar.New(sidecar.Config{
		Namespace: testNS, Group: testGroup, Site: "iad",
		MySQL:          mysql.Options{Addr: p.addr, User: simtest.AdminUser, Password: simtest.AdminPass},
		MySQLAdminAddr: p.adminAddr, MySQLPIDFile: p.pidFile,
		OperatorEndpoint: op.addr, LeaseTimeout: lease, PeerCheckInterval: interval, Version: "test",
		HTTPClient: nw.client("iad"), Logger: logs.Logger(nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); sc.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-ran; sc.Close() })
	waitFor(t, 10*time.Second, "the operator confirms iad", func() bool {
		st := sc.Status()
		return st.Fencing != nil && st.Fencing.LastDecision == "OperatorConfirms"
	})
	if c.beforeCut != nil {
		c.beforeCut(t, p, admin)
	}
	if on, err := superReadOnly(admin); err != nil || on {
		t.Fatalf("before the cut: super_read_only=%v (%v), want a writable primary", on, err)
	}

	cut := time.Now()
	nw.isolate("iad", "operator")
	var fencedAt time.Time
	for fencedAt.IsZero() && time.Since(cut) < bound+5*time.Second {
		if !p.running() {
			fencedAt = p.exitedAt
		} else if on, _ := superReadOnly(admin); on {
			fencedAt = time.Now()
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Keep the writers going past the deadline: a write acknowledged after
	// it would be a second writer once the operator promotes another site.
	deadline := cut.Add(bound - protocol.SelfFenceClockMargin)
	time.Sleep(time.Until(cut.Add(bound + time.Second)))
	w.halt()
	r := fenceResult{errs: w.errs}
	// The first run of the sequence after the cut is the one measured;
	// later rounds may find the stopped process gone again.
	for _, f := range sc.Fences() {
		if f.Started.After(cut) {
			r.report = f
			break
		}
	}
	for _, at := range w.acked() {
		if at.After(cut) {
			r.acksAfterCt++
		}
		if at.After(deadline) {
			r.lateAcks++
		}
	}
	if fencedAt.IsZero() {
		t.Errorf("%s: mysqld neither answered super_read_only=ON nor stopped within %s of the cut; %d writes acknowledged after the cut, %d after the deadline %s; writers' errors %v; sidecar: %+v",
			c.name, bound+5*time.Second, r.acksAfterCt, r.lateAcks, bound-protocol.SelfFenceClockMargin, r.errs, r.report)
		return r
	}
	r.afterCut = fencedAt.Sub(cut)
	return r
}

// fillReservedConnection takes the one connection beyond max_connections
// with a CONNECTION_ADMIN account and checks that the ordinary interface is
// full for every account, the sidecar's included.
func fillReservedConnection(t testing.TB, p *simProcess) {
	t.Helper()
	dba := p.open(t, p.addr, simtest.NativeUser, simtest.NativePass, "dba-session")
	if err := dba.Ping(); err != nil {
		t.Fatalf("the reserved connection: %v", err)
	}
	probe := p.open(t, p.addr, simtest.AdminUser, simtest.AdminPass, "probe")
	if err := probe.Ping(); !mysql.IsNumber(err, mysqlsim.ErConCount) {
		t.Fatalf("a further connection on the ordinary interface: %v, want 1040", err)
	}
}

func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for: %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestIsolatedPrimaryFencesThroughWhatHoldsTheFenceOff: an isolated
// writable primary whose mysqld has an idle open transaction, a large
// transaction that rolls back for a minute once killed, or every client
// connection in use is fenced, and the fence confirmed, within the
// self-fence bound minus its margin; no application write is acknowledged
// after that deadline.
func TestIsolatedPrimaryFencesThroughWhatHoldsTheFenceOff(t *testing.T) {
	if testing.Short() {
		t.Skip("starts simulator processes")
	}
	budget := bound - protocol.SelfFenceClockMargin
	for _, c := range fenceCases {
		t.Run(c.name, func(t *testing.T) {
			r := runFenceCase(t, c)
			if t.Failed() {
				return
			}
			t.Logf("fenced %s after the cut (deadline %s); sequence %s after its decision (budget %s), confirmed by %s, %d sessions killed, mysqld stopped %v; %d writes acknowledged after the cut, writers' errors %v",
				r.afterCut, budget, r.report.Took, protocol.SelfFenceStatementTimeout, r.report.ConfirmedBy, r.report.Killed, r.report.Stopped, r.acksAfterCt, r.errs)
			if r.afterCut > budget {
				t.Errorf("fenced %s after the cut, beyond the bound minus its margin %s", r.afterCut, budget)
			}
			if r.lateAcks > 0 {
				t.Errorf("%d application writes acknowledged after the fence deadline", r.lateAcks)
			}
		})
	}
}

// TestFenceWithoutAnAdministrativeInterface: a pod rendered by an older
// operator opens no administrative interface; the sidecar then fences over
// the ordinary port, within the bound minus its margin.
func TestFenceWithoutAnAdministrativeInterface(t *testing.T) {
	nw := newNetwork()
	op := startOperator(t, nw, "iad", 1)
	sim := simtest.Start(t, mysqlsim.Config{Name: "iad"})
	logs := logschema.NewRecorder(logschema.Sidecar)
	t.Cleanup(func() { logs.Check(t) })
	sc, err := sidecar.New(sidecar.Config{
		Namespace: testNS, Group: testGroup, Site: "iad",
		MySQL:            mysql.Options{Addr: sim.Addr(), User: simtest.AdminUser, Password: simtest.AdminPass},
		MySQLAdminAddr:   freeAddr(t), // nothing listens there
		OperatorEndpoint: op.addr, LeaseTimeout: lease, PeerCheckInterval: interval, Version: "test",
		HTTPClient: nw.client("iad"), Logger: logs.Logger(nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); sc.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-ran; sc.Close() })
	waitFor(t, 10*time.Second, "the operator confirms iad", func() bool {
		st := sc.Status()
		return st.Fencing != nil && st.Fencing.LastDecision == "OperatorConfirms"
	})
	cut := time.Now()
	nw.isolate("iad", "operator")
	deadline := bound - protocol.SelfFenceClockMargin
	waitFor(t, deadline+5*time.Second, "super_read_only=ON", func() bool { return sim.Snapshot().SuperReadOnly })
	if took := time.Since(cut); took > deadline {
		t.Errorf("fenced %s after the cut, beyond the bound minus its margin %s", took, deadline)
	}
}
