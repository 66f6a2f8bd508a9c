package sidecar_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/logschema"
	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/protocol"
	"github.com/shipstream/bloodraven/pkg/sidecar"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// The fence proof against a real mysqld process (a simulator child process
// with its pid file, as in selffence_test.go). Each verdict is checked
// against what the world holds: whether the child process really ended,
// and what mysqld itself answers for super_read_only.

const proofPod = "0f6a2b8e-5d43-4b57-9a57-1c1b8f0c1a01"

// proofSidecar runs a sidecar for the child p, confirmed by an operator,
// serving its endpoints; it returns the sidecar and its address.
func proofSidecar(t *testing.T, p *simProcess, pidFile string) (*sidecar.Sidecar, string, *operator) {
	t.Helper()
	nw := newNetwork()
	op := startOperator(t, nw, "iad", 3)
	logs := logschema.NewRecorder(logschema.Sidecar)
	t.Cleanup(func() { logs.Check(t) })
	sc, err := sidecar.New(sidecar.Config{
		Namespace: testNS, Group: testGroup, Site: "iad", PodUID: proofPod,
		MySQL:          mysql.Options{Addr: p.addr, User: simtest.AdminUser, Password: simtest.AdminPass},
		MySQLAdminAddr: p.adminAddr, MySQLPIDFile: pidFile,
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: sc.Handler(), ReadHeaderTimeout: 5 * time.Second}
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close(); <-served })
	return sc, ln.Addr().String(), op
}

// writablePrimary starts the child writable and waits until the sidecar
// reports its instance complete.
func writablePrimary(t *testing.T) (*simProcess, *sidecar.Sidecar, string, protocol.Instance, *operator) {
	t.Helper()
	p := startSimProcess(t)
	admin := p.open(t, p.adminAddr, simtest.NativeUser, simtest.NativePass, "test-admin")
	if _, err := admin.Exec("SET GLOBAL read_only = OFF"); err != nil {
		t.Fatal(err)
	}
	sc, addr, op := proofSidecar(t, p, p.pidFile)
	var inst protocol.Instance
	waitFor(t, 10*time.Second, "the sidecar names the running instance", func() bool {
		st := sc.Status()
		if st.Process == nil || st.Process.Exited {
			return false
		}
		inst = st.Process.Instance
		return inst.Complete()
	})
	if inst.PodUID != proofPod || inst.ServerUUID != simtest.UUID(1) || !strings.HasPrefix(inst.ContainerID, "process:") {
		t.Fatalf("instance %+v: want pod %s, server %s and the child's process identity", inst, proofPod, simtest.UUID(1))
	}
	return p, sc, addr, inst, op
}

// serveTransition makes the operator's /active-site announce transition id
// away from iad, as it does before the operator asks for a proof (the
// proof is only acted on once the intent is in the cache it answers from).
func serveTransition(op *operator, id string) {
	op.groups.update(func(st *v1alpha1.MysqlFailoverGroupStatus) {
		st.Transition = &v1alpha1.Transition{ID: id, Kind: v1alpha1.TransitionAutomatic, SourceSite: "iad", TargetSite: "pdx",
			TopologyGeneration: 4, Step: v1alpha1.StepAwaitingSelfFence}
	})
}

func announcement(id, source string) protocol.FenceProofRequest {
	return protocol.FenceProofRequest{Announcement: protocol.ActiveSite{Namespace: testNS, Group: testGroup, ActiveSite: source, TopologyGeneration: 3,
		Transition: &protocol.TransitionNotice{ID: id, Kind: "Automatic", SourceSite: source, TargetSite: "pdx", TopologyGeneration: 4}}}
}

func askProof(t *testing.T, addr string, req protocol.FenceProofRequest) protocol.FenceProof {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pr, err := (protocol.Client{}).FenceProof(ctx, addr, req)
	if err != nil {
		t.Fatalf("fence proof: %v", err)
	}
	return pr
}

func TestFenceProofOfACrashedMySQLD(t *testing.T) {
	p, sc, addr, inst, op := writablePrimary(t)
	p.fault(t, "/crash") // the command SIGKILLs itself
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the child did not exit after /crash")
	}
	// The sidecar tells the operator by itself (POST /site-event).
	select {
	case site := <-op.siteEvents:
		if site != "iad" {
			t.Fatalf("site event for %q", site)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no site event reached the operator after mysqld exited")
	}
	// Asked at once, before any round of the loop: /status looks afresh.
	if st := sc.Status(); st.Process == nil || !st.Process.Exited || st.Process.Instance != inst {
		t.Fatalf("status process %+v: want the instance %+v exited", st.Process, inst)
	} else if st.MySQL == nil || st.MySQL.Reachable || st.ReportsHealthyMySQL(time.Minute) {
		// The round's observation from before the crash must not pass for
		// a healthy mysqld (the operator would take the site for cut off).
		t.Fatalf("status mysql %+v: reported healthy after its process exited", st.MySQL)
	}
	pr := askProof(t, addr, announcement("t1", "iad"))
	if pr.Verdict != protocol.ProofExited || pr.Instance != inst || pr.TransitionID != "t1" || pr.Site != "iad" {
		t.Fatalf("proof %+v: want Exited for %+v", pr, inst)
	}
	if pr.AckAgeMillis < pr.ObservedAgeMillis {
		t.Fatalf("proof %+v: observed before the transition was held", pr)
	}
	// The same transition asked again keeps its first acknowledgement.
	time.Sleep(20 * time.Millisecond)
	if again := askProof(t, addr, announcement("t1", "iad")); again.AckAgeMillis < pr.AckAgeMillis+20 {
		t.Fatalf("ack age %d then %d: the acknowledgement moved", pr.AckAgeMillis, again.AckAgeMillis)
	}
}

func TestFenceProofOfARunningMySQLD(t *testing.T) {
	p, _, addr, inst, op := writablePrimary(t)
	admin := p.open(t, p.adminAddr, simtest.NativeUser, simtest.NativePass, "test-admin")
	serveTransition(op, "t1")
	// The request itself is the announcement: the sidecar fences, and a
	// later request finds mysqld answering super_read_only=ON.
	first := askProof(t, addr, announcement("t1", "iad"))
	if first.Verdict == protocol.ProofExited {
		t.Fatalf("proof %+v: the process runs", first)
	}
	if first.Verdict == protocol.ProofNone && !strings.Contains(first.Reason, "super_read_only=OFF") {
		t.Fatalf("proof %+v: want no proof because mysqld answers writable", first)
	}
	var pr protocol.FenceProof
	waitFor(t, 10*time.Second, "a Fenced proof", func() bool {
		pr = askProof(t, addr, announcement("t1", "iad"))
		return pr.Verdict == protocol.ProofFenced
	})
	if on, err := superReadOnly(admin); err != nil || !on {
		t.Fatalf("proof %+v, but mysqld answers super_read_only=%v (%v)", pr, on, err)
	}
	if !p.running() || pr.Instance != inst {
		t.Fatalf("proof %+v for %+v: the same process, still running", pr, inst)
	}
	// Unfenced behind the transition's back (a deposed leader's late
	// statement): the sidecar fences it again.
	if _, err := admin.Exec("SET GLOBAL read_only = OFF"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the sidecar fences the site again", func() bool {
		on, err := superReadOnly(admin)
		return err == nil && on
	})
}

func TestFenceProofOfAFrozenMySQLD(t *testing.T) {
	p, _, addr, inst, op := writablePrimary(t)
	serveTransition(op, "t1")
	p.fault(t, "/freeze")
	// No answer from mysqld is no proof; the announcement starts the
	// fencing sequence, which stops the process it cannot fence.
	if pr := askProof(t, addr, announcement("t1", "iad")); pr.Verdict != protocol.ProofNone || !strings.Contains(pr.Reason, "did not answer") {
		t.Fatalf("proof %+v: want none while mysqld does not answer", pr)
	}
	var pr protocol.FenceProof
	waitFor(t, 15*time.Second, "an Exited proof", func() bool {
		pr = askProof(t, addr, announcement("t1", "iad"))
		return pr.Verdict == protocol.ProofExited
	})
	if p.running() || pr.Instance != inst {
		t.Fatalf("proof %+v for %+v, child running %v", pr, inst, p.running())
	}
}

func TestFenceProofRefusals(t *testing.T) {
	t.Run("a transition away from another site", func(t *testing.T) {
		_, _, addr, _, _ := writablePrimary(t)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := (protocol.Client{}).FenceProof(ctx, addr, announcement("t1", "pdx"))
		var httpErr *protocol.Error
		if !errors.As(err, &httpErr) || httpErr.StatusCode != http.StatusConflict {
			t.Fatalf("err %v: want 409", err)
		}
	})
	t.Run("a pid file that never named a running process", func(t *testing.T) {
		p := startSimProcess(t)
		_, addr, _ := proofSidecar(t, p, p.pidFile+".wrong")
		pr := askProof(t, addr, announcement("t1", "iad"))
		if pr.Verdict != protocol.ProofNone || !strings.Contains(pr.Reason, "no mysqld process has been seen") {
			t.Fatalf("proof %+v", pr)
		}
	})
}

// The two non-proof cases of docs/safety.md that need mysqld running and
// writable: the sidecar cannot log in, or mysqld refuses it as one client
// too many. Either way the sidecar has not read super_read_only, so its
// answer must be None (the operator then waits the self-fence bound), and
// the world shows why anything else would be a lie: the process runs, and
// mysqld answers another client as it really is.

func TestNoFenceProofWhenTheSidecarCannotLogIn(t *testing.T) {
	p, _, addr, inst, op := writablePrimary(t)
	admin := p.open(t, p.adminAddr, simtest.NativeUser, simtest.NativePass, "test-admin")
	// The sidecar's password changed behind its back (a Secret rotated by
	// hand), and the sessions it logged in with before are gone: every
	// login it tries now is refused (1045), on both interfaces.
	if _, err := admin.Exec("ALTER USER '" + simtest.AdminUser + "' IDENTIFIED BY 'rotated-elsewhere'"); err != nil {
		t.Fatal(err)
	}
	evictSessionsOf(t, p, simtest.AdminUser)
	serveTransition(op, "t1")
	pr := askProof(t, addr, announcement("t1", "iad"))
	if pr.Verdict != protocol.ProofNone || !strings.Contains(pr.Reason, "1045") {
		t.Fatalf("proof %+v: want None because mysqld refuses the sidecar's login", pr)
	}
	if on, err := superReadOnly(admin); err != nil || on || !p.running() {
		t.Fatalf("after the None answer mysqld answers super_read_only=%v (%v), running %v: want it still writable and running",
			on, err, p.running())
	}
	// It cannot fence what it cannot log in to, so the fencing sequence
	// stops the process; only once that really ended is the answer Exited.
	waitFor(t, 15*time.Second, "an Exited proof", func() bool {
		pr = askProof(t, addr, announcement("t1", "iad"))
		if pr.Verdict == protocol.ProofFenced {
			t.Fatalf("proof %+v: the sidecar never read super_read_only", pr)
		}
		return pr.Verdict == protocol.ProofExited
	})
	if p.running() || pr.Instance != inst {
		t.Fatalf("proof %+v for %+v, child running %v", pr, inst, p.running())
	}
}

func TestNoFenceProofWhenMySQLDRefusesTheSidecarAsOneConnectionTooMany(t *testing.T) {
	p, _, addr, inst, op := writablePrimary(t)
	admin := p.open(t, p.adminAddr, simtest.NativeUser, simtest.NativePass, "test-admin")
	// max_connections client sessions plus the one mysqld keeps for
	// CONNECTION_ADMIN, held by others; the sidecar's own go. Lowering the
	// limit drops nobody, so the order leaves no gap for the sidecar.
	holdSession(t, p, simtest.AppUser, simtest.AppPass)
	releaseReserved := holdSession(t, p, simtest.NativeUser, simtest.NativePass)
	if _, err := admin.Exec("SET GLOBAL max_connections = 1"); err != nil {
		t.Fatal(err)
	}
	evictSessionsOf(t, p, simtest.AdminUser)
	if err := loginOnce(p.addr, simtest.AppUser, simtest.AppPass); !mysql.IsNumber(err, mysqlsim.ErConCount) {
		t.Fatalf("a new client login: %v, want 1040 Too many connections", err)
	}
	serveTransition(op, "t1")
	// The fence itself goes over the administrative interface, which
	// max_connections does not limit, so mysqld does become read-only; the
	// sidecar still cannot read that over the connection it proves with.
	waitFor(t, 10*time.Second, "mysqld answers super_read_only=ON", func() bool {
		pr := askProof(t, addr, announcement("t1", "iad"))
		if pr.Verdict != protocol.ProofNone || !strings.Contains(pr.Reason, "1040") {
			t.Fatalf("proof %+v: want None while mysqld refuses the sidecar's connection", pr)
		}
		on, err := superReadOnly(admin)
		return err == nil && on
	})
	// Past the point where the sequence would have stopped a process it
	// could not fence: still None, and the process runs.
	time.Sleep(2 * time.Second)
	if pr := askProof(t, addr, announcement("t1", "iad")); pr.Verdict != protocol.ProofNone || !p.running() {
		t.Fatalf("proof %+v, child running %v: want None from a running, fenced mysqld the sidecar cannot reach", pr, p.running())
	}
	// A slot frees: the sidecar reads super_read_only=ON itself.
	releaseReserved()
	var pr protocol.FenceProof
	waitFor(t, 10*time.Second, "a Fenced proof", func() bool {
		pr = askProof(t, addr, announcement("t1", "iad"))
		return pr.Verdict == protocol.ProofFenced
	})
	if on, err := superReadOnly(admin); err != nil || !on || !p.running() || pr.Instance != inst {
		t.Fatalf("proof %+v for %+v, but mysqld answers super_read_only=%v (%v), running %v", pr, inst, on, err, p.running())
	}
}

// evictSessionsOf kills user's sessions on p, from the native
// administrative account, until none is left (one may be logging in while
// the first list is taken).
func evictSessionsOf(t *testing.T, p *simProcess, user string) {
	t.Helper()
	c, err := mysql.Open(mysql.Options{Addr: p.adminAddr, User: simtest.NativeUser, Password: simtest.NativePass,
		Program: "test-evict", DialTimeout: time.Second, ReadTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitFor(t, 5*time.Second, "no session of "+user+" is left", func() bool {
		sessions, err := c.ListSessions(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		left := 0
		for _, s := range sessions {
			if s.User != user {
				continue
			}
			left++
			if err := c.KillSession(context.Background(), s.ID); err != nil {
				t.Fatal(err)
			}
		}
		return left == 0
	})
}

// holdSession logs user in on p's client address and keeps that one
// session open until release is called or the test ends.
func holdSession(t *testing.T, p *simProcess, user, pass string) (release func()) {
	t.Helper()
	db := p.open(t, p.addr, user, pass, "test-holder")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("%s logs in on %s: %v", user, p.addr, err)
	}
	return func() { db.Close() } // closes the session, not just returns it to a pool
}

// loginOnce opens one new session on addr and closes it.
func loginOnce(addr, user, pass string) error {
	c, err := mysql.Open(mysql.Options{Addr: addr, User: user, Password: pass, Program: "test-login",
		DialTimeout: time.Second, ReadTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.DB().PingContext(ctx)
}
