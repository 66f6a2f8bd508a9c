package sidecar_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/protocol"
	"github.com/shipstream/bloodraven/pkg/sidecar"
	"github.com/shipstream/bloodraven/pkg/sidecar/fencing"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

var threeSites = []siteSpec{{"iad", true}, {"dfw", false}, {"sjc", false}}

var bound = protocol.SelfFenceBound(lease, interval)

// waitFenced polls the simulator until super_read_only is ON and returns
// when that was first seen.
func waitFenced(t *testing.T, s *site, timeout time.Duration) time.Time {
	t.Helper()
	eventually(t, timeout, s.name+" super_read_only=ON", func() bool { return s.sim.Snapshot().SuperReadOnly })
	return time.Now()
}

// stayWritable checks, for d, that the simulator stays writable.
func stayWritable(t *testing.T, s *site, d time.Duration, why string) {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if snap := s.sim.Snapshot(); snap.ReadOnly || snap.SuperReadOnly {
			t.Fatalf("%s was fenced (%s), but %s; sidecar status: %+v", s.name, snap, why, s.sc.Status().Fencing)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func TestIsolatedWritablePrimaryFencesItselfWithinTheBound(t *testing.T) {
	nw := newNetwork()
	op := startOperator(t, nw, "iad", 1)
	sites := startSites(t, nw, op, threeSites, clusterOpts{})
	iad := sites["iad"]
	eventually(t, 10*time.Second, "iad confirmed by the operator", func() bool { return iad.decision() == fencing.ReasonOperatorConfirms })
	eventually(t, 10*time.Second, "dfw holds a confirmation of iad", func() bool {
		v := sites["dfw"].sc.PeerView()
		_, ok := v.ConfirmsFor("iad")
		return ok
	})
	if iad.appWriteRefused(t) {
		t.Fatal("the active site refused an application write before any partition")
	}

	cut := time.Now()
	nw.isolate("iad", "operator", "dfw", "sjc")
	fencedAt := waitFenced(t, iad, bound+5*time.Second)
	took := fencedAt.Sub(cut)
	t.Logf("isolated primary fenced %s after the partition (lease %s, documented bound %s)", took, lease, bound)
	if took > bound {
		t.Errorf("fenced %s after the partition, beyond the documented bound %s", took, bound)
	}
	// The lease is honoured: the last confirmation was obtained at most one
	// check interval plus one request before the cut.
	if earliest := lease - interval - protocol.SidecarRequestTimeout(interval); took < earliest {
		t.Errorf("fenced %s after the partition: earlier than its lease allows (%s)", took, earliest)
	}
	if !iad.appWriteRefused(t) {
		t.Error("after self-fencing, an application write was still accepted")
	}
	st := iad.sc.Status()
	if st.Fencing.SelfFenceCount < 1 || st.Fencing.SelfFencedAt == nil || st.Fencing.LastDecision != fencing.ReasonLeaseExpired {
		t.Errorf("fencing status = %+v, want a self-fence for %s", st.Fencing, fencing.ReasonLeaseExpired)
	}

	// It never unfences by itself, even when everything is reachable and
	// the operator confirms it again.
	nw.heal()
	eventually(t, 10*time.Second, "iad confirmed again", func() bool { return iad.decision() == fencing.ReasonOperatorConfirms })
	time.Sleep(2 * interval)
	if snap := iad.sim.Snapshot(); !snap.SuperReadOnly {
		t.Errorf("the sidecar unfenced mysqld by itself: %s", snap)
	}
}

func TestNeverFencesWhileTheOperatorConfirms(t *testing.T) {
	nw := newNetwork()
	op := startOperator(t, nw, "iad", 1)
	sites := startSites(t, nw, op, threeSites, clusterOpts{})
	iad := sites["iad"]
	eventually(t, 10*time.Second, "iad confirmed", func() bool { return iad.decision() == fencing.ReasonOperatorConfirms })

	// The peers lose the operator and are told (by pushes only the
	// operator should send) that a transition is under way; iad cannot
	// reach them either. The operator itself keeps confirming iad, and its
	// word is the only one that counts while it answers.
	nw.isolate("operator", "dfw", "sjc")
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			for _, p := range []string{"dfw", "sjc"} {
				pushTransition(t, sites[p], "iad", "dfw", 1)
			}
			select {
			case <-stop:
				return
			case <-time.After(interval):
			}
		}
	}()
	stayWritable(t, iad, 4*lease, "the operator keeps confirming it")
	if got := iad.sc.Status().Fencing; got.SelfFenceCount != 0 || got.LastDecision != fencing.ReasonOperatorConfirms {
		t.Errorf("fencing status = %+v", got)
	}
	if d, ok := sites["dfw"].sc.PeerView().ConfirmsFor("iad"); ok {
		t.Errorf("dfw still confirms iad for %s after a transition was announced to it", d)
	}
}

// pushTransition POSTs an announcement to a sidecar as the operator does
// before promoting.
func pushTransition(t *testing.T, s *site, source, target string, gen int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := protocol.Client{}.Announce(ctx, s.addr, protocol.ActiveSite{Namespace: testNS, Group: testGroup, ActiveSite: source, TopologyGeneration: gen,
		Transition: &protocol.TransitionNotice{ID: "t1", Kind: "Automatic", SourceSite: source, TargetSite: target, TopologyGeneration: gen + 1}})
	if err != nil {
		t.Errorf("push to %s: %v", s.name, err)
		return
	}
	if _, ok := v.ConfirmsFor(source); ok || v.Transition == nil {
		t.Errorf("after the push, %s still confirms %s: %+v", s.name, source, v)
	}
}

// The operator is unreachable from the primary but not from its peers: the
// peers keep the primary writable, and stop the moment the operator records
// a transition; the primary then fences within the bound counted from that
// moment (the deadline the topology manager waits for).
func TestPeersKeepAnIsolatedPrimaryUntilTheOperatorAnnouncesATransition(t *testing.T) {
	nw := newNetwork()
	op := startOperator(t, nw, "iad", 1)
	sites := startSites(t, nw, op, threeSites, clusterOpts{})
	iad := sites["iad"]
	eventually(t, 10*time.Second, "iad confirmed", func() bool { return iad.decision() == fencing.ReasonOperatorConfirms })

	nw.isolate("iad", "operator")
	eventually(t, bound, "iad confirmed by a peer", func() bool { return iad.decision() == fencing.ReasonPeerConfirms })
	if f := iad.sc.Status().Fencing; f.OperatorError == "" || len(f.Peers) != 2 || !f.Peers[0].Reachable || !f.Peers[0].ConfirmsThisSite {
		t.Errorf("fencing status while confirmed by peers = %+v", f)
	}
	stayWritable(t, iad, 3*lease, "its peers confirm it with what the operator told them")

	t0 := time.Now()
	op.groups.update(func(st *v1alpha1.MysqlFailoverGroupStatus) {
		st.Transition = &v1alpha1.Transition{ID: "t1", Kind: v1alpha1.TransitionAutomatic, SourceSite: "iad", TargetSite: "dfw",
			TopologyGeneration: 2, Step: v1alpha1.StepAwaitingSelfFence, StartTime: metav1.Now()}
	})
	fencedAt := waitFenced(t, iad, bound+5*time.Second)
	took := fencedAt.Sub(t0)
	t.Logf("primary fenced %s after the operator recorded the transition (bound %s)", took, bound)
	if took > bound {
		t.Errorf("fenced %s after the transition was recorded, beyond the bound %s", took, bound)
	}
	if got := iad.decision(); got != fencing.ReasonPeerDenies && got != fencing.ReasonLeaseExpired {
		t.Errorf("decision = %s, want the peers' withdrawal (%s) or the lease (%s)", got, fencing.ReasonPeerDenies, fencing.ReasonLeaseExpired)
	}
}

// One peer still confirms the isolated primary, the other reports a fresh
// transition announcement: the denial wins (same generation), so the primary
// fences once its own operator answer has run out.
func TestPeersDisagreeingFenceThePrimary(t *testing.T) {
	nw := newNetwork()
	op := startOperator(t, nw, "iad", 1)
	sites := startSites(t, nw, op, threeSites, clusterOpts{})
	iad := sites["iad"]
	eventually(t, 10*time.Second, "iad confirmed", func() bool { return iad.decision() == fencing.ReasonOperatorConfirms })

	nw.isolate("sjc", "operator")
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			pushTransition(t, sites["sjc"], "iad", "dfw", 1)
			select {
			case <-stop:
				return
			case <-time.After(interval / 2):
			}
		}
	}()
	eventually(t, 5*time.Second, "sjc denies iad", func() bool { return sites["sjc"].sc.PeerView().Transition != nil })
	if _, ok := sites["dfw"].sc.PeerView().ConfirmsFor("iad"); !ok {
		t.Fatal("dfw does not confirm iad; the test needs one confirming peer")
	}
	cut := time.Now()
	nw.isolate("iad", "operator")
	fencedAt := waitFenced(t, iad, bound+5*time.Second)
	if took := fencedAt.Sub(cut); took > bound {
		t.Errorf("fenced %s after losing the operator, beyond the bound %s", took, bound)
	}
	if got := iad.decision(); got != fencing.ReasonPeerDenies {
		t.Errorf("decision = %s, want %s", got, fencing.ReasonPeerDenies)
	}
}

func TestLivezFailsWhileTheFencingLoopIsStuck(t *testing.T) {
	nw := newNetwork()
	op := startOperator(t, nw, "iad", 1)
	// A fence statement that may take 30s and a loop allowed 1.5s per
	// round: a frozen mysqld holds the fence, and so the loop, for longer
	// than that, just as a driver that ignored its deadline would.
	sites := startSites(t, nw, op, []siteSpec{{"iad", true}}, clusterOpts{fenceTimeout: 30 * time.Second, wedgedAfter: 1500 * time.Millisecond})
	iad := sites["iad"]
	eventually(t, 10*time.Second, "iad confirmed", func() bool { return iad.decision() == fencing.ReasonOperatorConfirms })
	if code := get(t, iad.addr+protocol.PathLivez, nil); code != http.StatusOK {
		t.Fatalf("/livez = %d before the fault", code)
	}

	iad.sim.Freeze()
	op.groups.update(func(st *v1alpha1.MysqlFailoverGroupStatus) { st.ActiveSite, st.TopologyGeneration = "dfw", 2 })
	var l protocol.Livez
	eventually(t, 10*time.Second, "/livez fails", func() bool { return get(t, iad.addr+protocol.PathLivez, &l) == http.StatusServiceUnavailable })
	if l.Live || !strings.Contains(l.Reason, "fencing loop") || l.FencingLoopLastProgressAgeMillis < 1500 {
		t.Errorf("/livez = %+v", l)
	}
	// Liveness of the process itself and the peers' view do not depend on
	// mysqld or on the loop.
	if code := get(t, iad.addr+protocol.PathPeerPing, nil); code != http.StatusOK {
		t.Errorf("/peer/ping = %d while the loop is stuck", code)
	}
	iad.sim.Thaw()
	eventually(t, 10*time.Second, "/livez recovers", func() bool { return get(t, iad.addr+protocol.PathLivez, nil) == http.StatusOK })
	if !iad.sim.Snapshot().SuperReadOnly {
		t.Error("the fence held by the frozen mysqld did not take effect after thawing")
	}
}

func get(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get("http://" + url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if v != nil {
		if err := protocol.Decode(resp.Body, v); err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
	}
	return resp.StatusCode
}

func TestEndpoints(t *testing.T) {
	nw := newNetwork()
	op := startOperator(t, nw, "iad", 4)
	sites := startSites(t, nw, op, []siteSpec{{"iad", true}, {"dfw", false}}, clusterOpts{})
	iad, dfw := sites["iad"], sites["dfw"]
	eventually(t, 10*time.Second, "both observed", func() bool {
		return iad.decision() == fencing.ReasonOperatorConfirms && dfw.decision() == fencing.ReasonOperatorNamesOtherSite
	})

	var st protocol.SiteStatus
	if code := get(t, iad.addr+protocol.PathSidecarStatus, &st); code != 200 {
		t.Fatalf("/status = %d", code)
	}
	snap := iad.sim.Snapshot()
	m := st.MySQL
	if m == nil || !m.Reachable || m.Role != protocol.RoleSource || m.Version != mysqlsim.Version ||
		m.ServerUUID != iad.sim.ServerUUID() || m.GTIDExecuted != snap.Executed.OneLine() ||
		m.Replication == nil || m.Replication.State != protocol.ReplicationNotReplicating {
		t.Errorf("/status mysql = %+v", m)
	}
	if !st.ReportsHealthyMySQL(5 * time.Second) {
		t.Errorf("/status of a healthy site does not report healthy mysqld: %+v", st)
	}
	if w, ok := m.Writable(); !ok || !w {
		t.Errorf("/status reports writable=%v ok=%v for a writable server", w, ok)
	}
	if !st.HasCapability(protocol.CapabilityLivez) || !st.HasCapability(protocol.CapabilitySelfFenceV1) || st.Fencing == nil ||
		st.Fencing.View.ActiveSite != "iad" || st.Fencing.View.TopologyGeneration != 4 || st.Fencing.LocalConfirmedForMillis <= 0 {
		t.Errorf("/status = %+v fencing %+v", st, st.Fencing)
	}

	dst, err := protocol.Client{}.SiteStatus(context.Background(), dfw.addr)
	if err != nil {
		t.Fatal(err)
	}
	if dst.MySQL == nil || dst.MySQL.Role != protocol.RoleReadOnly || dst.Fencing.LocalConfirmedForMillis != 0 {
		t.Errorf("dfw /status = %+v", dst.MySQL)
	}

	var h protocol.Health
	if code := get(t, iad.addr+protocol.PathHealth, &h); code != 200 || !h.Ready || h.Role != protocol.RoleSource {
		t.Errorf("/health = %d %+v", code, h)
	}
	var p protocol.PeerActiveSite
	if get(t, dfw.addr+protocol.PathPeerActiveSite, &p); p.Site != "dfw" || p.ActiveSite != "iad" || !p.Confirmed ||
		p.ValidForMillis <= 0 || p.ValidForMillis > lease.Milliseconds() || p.Since == nil {
		t.Errorf("/peer/active-site = %+v", p)
	}
	var ping protocol.Ping
	if code := get(t, iad.addr+protocol.PathPeerPing, &ping); code != 200 || ping.Site != "iad" {
		t.Errorf("/peer/ping = %d %+v", code, ping)
	}
	var a protocol.ArchiverStatus
	if get(t, iad.addr+protocol.PathArchiverStatus, &a); a.Enabled || a.State != protocol.StateDisabled {
		t.Errorf("/archiver/status = %+v", a)
	}
	var k protocol.KeyringStatus
	if get(t, iad.addr+protocol.PathKeyringStatus, &k); k.Enabled || k.State != protocol.StateDisabled {
		t.Errorf("/keyring/status = %+v", k)
	}
	if code := get(t, iad.addr+"/no-such-path", nil); code != 404 {
		t.Errorf("unknown path = %d", code)
	}

	// A push can withdraw a confirmation, never grant one.
	body, _ := json.Marshal(protocol.ActiveSite{Namespace: testNS, Group: testGroup, ActiveSite: "dfw", TopologyGeneration: 5})
	var resp *http.Response
	resp, err = http.Post("http://"+dfw.addr+protocol.PathPeerActiveSite, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var e protocol.ErrorResponse
	_ = protocol.Decode(resp.Body, &e)
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict || e.Error != protocol.ErrorConflict {
		t.Errorf("push confirming the receiver = %d %+v, want 409 conflict", resp.StatusCode, e)
	}
	body, _ = json.Marshal(protocol.ActiveSite{Namespace: "other", Group: testGroup, ActiveSite: "dfw"})
	resp, err = http.Post("http://"+iad.addr+protocol.PathPeerActiveSite, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("push for another group = %d, want 409", resp.StatusCode)
	}

	// The operator's pushed announcement reaches a primary that cannot poll
	// it, and fences it at once (not when the lease runs out).
	nw.isolate("iad", "operator")
	pushed := time.Now()
	pushTransition(t, iad, "iad", "dfw", 4)
	at := waitFenced(t, iad, 5*time.Second)
	t.Logf("pushed transition fenced the primary in %s", at.Sub(pushed))
	if got := iad.decision(); got != fencing.ReasonOperatorAnnouncedChange {
		t.Errorf("decision = %s, want %s", got, fencing.ReasonOperatorAnnouncedChange)
	}
	eventually(t, 5*time.Second, "/health ready with role ReadOnly", func() bool {
		var h protocol.Health
		return get(t, iad.addr+protocol.PathHealth, &h) == 200 && h.Role == protocol.RoleReadOnly
	})
}

func TestHealthFailsWhenMySQLIsDown(t *testing.T) {
	nw := newNetwork()
	op := startOperator(t, nw, "iad", 1)
	sites := startSites(t, nw, op, []siteSpec{{"dfw", false}}, clusterOpts{})
	dfw := sites["dfw"]
	eventually(t, 10*time.Second, "dfw ready", func() bool { return get(t, dfw.addr+protocol.PathHealth, nil) == 200 })
	dfw.sim.Crash()
	var h protocol.Health
	eventually(t, 10*time.Second, "/health fails", func() bool { return get(t, dfw.addr+protocol.PathHealth, &h) == 503 })
	if h.Ready || !strings.Contains(h.Reason, "unreachable") {
		t.Errorf("/health = %+v", h)
	}
	var st protocol.SiteStatus
	get(t, dfw.addr+protocol.PathSidecarStatus, &st)
	if st.MySQL == nil || st.MySQL.Reachable || st.MySQL.ReadOnly != nil {
		t.Errorf("/status mysql = %+v, want unreachable with read_only not reported", st.MySQL)
	}
	if st.ReportsHealthyMySQL(time.Minute) {
		t.Error("a crashed mysqld is reported healthy")
	}
	if code := get(t, dfw.addr+protocol.PathLivez, nil); code != 200 {
		t.Errorf("/livez = %d: a dead mysqld is not a wedged loop", code)
	}
	if err := dfw.sim.Restart(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "/health recovers", func() bool { return get(t, dfw.addr+protocol.PathHealth, nil) == 200 })
}

// Only the leader's answer confirms: an operator process that lost (or never
// had) leadership answers not_leader, which counts like no answer.
func TestANonLeaderConfirmsNothing(t *testing.T) {
	nw := newNetwork()
	op := startOperator(t, nw, "iad", 1)
	sites := startSites(t, nw, op, []siteSpec{{"iad", true}}, clusterOpts{})
	iad := sites["iad"]
	eventually(t, 10*time.Second, "iad confirmed", func() bool { return iad.decision() == fencing.ReasonOperatorConfirms })
	lost := time.Now()
	op.leader.Store(false)
	at := waitFenced(t, iad, bound+5*time.Second)
	if took := at.Sub(lost); took > bound {
		t.Errorf("fenced %s after the leader stopped answering, beyond the bound %s", took, bound)
	}
	if got := iad.decision(); got != fencing.ReasonLeaseExpired {
		t.Errorf("decision = %s, want %s", got, fencing.ReasonLeaseExpired)
	}
}

// A peer claiming a confirmation far longer than any lease (a bug, or an old
// lease from before a spec change) is believed for one lease at most.
func TestAPeersClaimNeverOutlastsTheOwnLease(t *testing.T) {
	nw := newNetwork()
	op := startOperator(t, nw, "iad", 1)
	var silent atomic.Bool
	peerAddr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if silent.Load() {
			<-r.Context().Done() // gone quiet, like a partitioned peer
			return
		}
		protocol.WriteJSON(w, 200, protocol.PeerActiveSite{Site: "dfw", ActiveSite: "iad", TopologyGeneration: 1,
			Confirmed: true, ValidForMillis: time.Hour.Milliseconds()})
	}))
	nw.name(peerAddr, "dfw")
	sites := startSites(t, nw, op, []siteSpec{{"iad", true}}, clusterOpts{peers: []sidecar.Peer{{Site: "dfw", Addr: peerAddr}}})
	iad := sites["iad"]
	nw.isolate("iad", "operator")
	eventually(t, bound, "iad confirmed by the peer", func() bool { return iad.decision() == fencing.ReasonPeerConfirms })
	if f := iad.sc.Status().Fencing; f.LocalConfirmedForMillis > lease.Milliseconds() {
		t.Errorf("confirmed for %dms on a peer's word, longer than the lease %s", f.LocalConfirmedForMillis, lease)
	}
	quiet := time.Now()
	silent.Store(true)
	at := waitFenced(t, iad, bound+5*time.Second)
	if took := at.Sub(quiet); took > bound {
		t.Errorf("fenced %s after the peer went quiet, beyond the bound %s", took, bound)
	}
}

// Between the operator's Promoting write and the publication of the new
// active site, the operator's polled answer vouches for the target: its
// sidecar keeps the promotion it is finishing, while the source stays
// unconfirmed. A pushed document saying the same confirms nothing.
func TestThePromotedTargetIsNotFencedBeforeItIsPublished(t *testing.T) {
	nw := newNetwork()
	op := startOperator(t, nw, "iad", 1)
	sites := startSites(t, nw, op, threeSites, clusterOpts{})
	iad, dfw := sites["iad"], sites["dfw"]
	eventually(t, 10*time.Second, "iad confirmed", func() bool { return iad.decision() == fencing.ReasonOperatorConfirms })

	start := metav1.Now()
	op.groups.update(func(st *v1alpha1.MysqlFailoverGroupStatus) {
		st.Transition = &v1alpha1.Transition{ID: "t1", Kind: v1alpha1.TransitionPlanned, SourceSite: "iad", TargetSite: "dfw",
			TopologyGeneration: 2, Step: v1alpha1.StepPromoting, StartTime: start, StepTime: &start}
	})
	waitFenced(t, iad, 10*time.Second)
	// The operator makes dfw writable, as the Promoting step does.
	unfence(t, dfw)
	eventually(t, 10*time.Second, "dfw confirmed by the operator", func() bool { return dfw.decision() == fencing.ReasonOperatorConfirms })
	stayWritable(t, dfw, 3*interval+lease/2, "the operator is promoting it")

	// A pushed announcement of the same step is not a confirmation: once
	// the operator stops answering, dfw's own lease decides.
	pushTransitionAt(t, dfw, "iad", "dfw", 1, v1alpha1.StepPromoting)
	nw.isolate("dfw", "operator")
	waitFenced(t, dfw, bound+5*time.Second)
}

// pushTransitionAt POSTs an announcement of a transition at step.
func pushTransitionAt(t *testing.T, s *site, source, target string, gen int64, step v1alpha1.TransitionStep) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := protocol.Client{}.Announce(ctx, s.addr, protocol.ActiveSite{Namespace: testNS, Group: testGroup, ActiveSite: source, TopologyGeneration: gen,
		Transition: &protocol.TransitionNotice{ID: "t1", Kind: "Planned", SourceSite: source, TargetSite: target, TopologyGeneration: gen + 1, Step: string(step)}})
	if err != nil {
		t.Errorf("push to %s: %v", s.name, err)
	}
}

// unfence makes the site's mysqld writable as the operator does.
func unfence(t *testing.T, s *site) {
	t.Helper()
	c, err := mysql.Open(mysql.Options{Addr: s.sim.Addr(), User: simtest.AdminUser, Password: simtest.AdminPass, Program: "operator-stand-in"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Unfence(ctx); err != nil {
		t.Fatal(err)
	}
}
