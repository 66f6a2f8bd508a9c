package auxiliary_test

import (
	"context"
	"flag"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/shipstream/bloodraven/e2e/framework"
	"github.com/shipstream/bloodraven/generated/clientset/versioned"
	informers "github.com/shipstream/bloodraven/generated/informers/externalversions"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/auxiliary"
	"github.com/shipstream/bloodraven/pkg/protocol"
)

var cp *framework.ControlPlane

// TestMain starts a control plane for the integration tests; with -short
// only the pure tests run.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	framework.Main(m, framework.Options{CRDDir: "deploy/crds"}, &cp)
}

func newGroup(ns, name string) *v1alpha1.MysqlFailoverGroup {
	site := func(name string, id int64, ip string) v1alpha1.SiteSpec {
		return v1alpha1.SiteSpec{
			Name: name, Role: "PrimaryCandidate", ServerID: id, Zone: "zone-" + name, LoadBalancerIP: ip,
			TaintNodeSelector: map[string]string{"bloodraven.shipstream.io/site": name},
			Storage:           v1alpha1.StorageSpec{StorageClassName: "fast", Size: "10Gi"},
		}
	}
	return &v1alpha1.MysqlFailoverGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.MysqlFailoverGroupSpec{
			Sites:       []v1alpha1.SiteSpec{site("iad", 101, "10.0.1.1"), site("pdx", 102, "10.0.2.1")},
			Credentials: v1alpha1.CredentialsSpec{OperatorSecretName: name + "-operator"},
			DNS:         v1alpha1.DNSSpec{Hostname: name + ".db.example.com"},
		},
	}
}

// operatorSide wires the handler the way the operator process does: a
// shared informer's lister as the source, its event handlers calling Notify.
type operatorSide struct {
	client versioned.Interface
	addr   string
	leader *atomic.Bool
}

func startOperatorSide(t *testing.T) *operatorSide {
	t.Helper()
	if cp == nil {
		t.Skip("integration test: needs the control plane (not run with -short)")
	}
	client, err := versioned.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	inf := factory.Shipstream().V1alpha1().MysqlFailoverGroups()
	leader := &atomic.Bool{}
	leader.Store(true)
	h := auxiliary.New(auxiliary.Options{
		Source:         auxiliary.ListerSource{Lister: inf.Lister(), HasSynced: inf.Informer().HasSynced},
		IsLeader:       leader.Load,
		ResyncInterval: time.Minute, // changes must arrive through Notify, not the resync
	})
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { h.Notify() },
		UpdateFunc: func(any, any) { h.Notify() },
		DeleteFunc: func(any) { h.Notify() },
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	if !cache.WaitForCacheSync(ctx.Done(), inf.Informer().HasSynced) {
		t.Fatal("informer did not sync")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return &operatorSide{client: client, addr: ln.Addr().String(), leader: leader}
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := protocol.Decode(resp.Body, v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode
}

// readUntil reads stream messages until one satisfies cond.
func readUntil(t *testing.T, conn *websocket.Conn, what string, cond func(protocol.OperatorStatus) bool) protocol.OperatorStatus {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		var doc protocol.OperatorStatus
		_, data, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if err := protocol.Decode(strings.NewReader(string(data)), &doc); err != nil {
			t.Fatalf("stream message: %v", err)
		}
		if cond(doc) {
			return doc
		}
	}
}

func findGroup(doc protocol.OperatorStatus, ns, name string) *protocol.GroupStatus {
	for i := range doc.Groups {
		if doc.Groups[i].Namespace == ns && doc.Groups[i].Name == name {
			return &doc.Groups[i]
		}
	}
	return nil
}

// TestStatusStreamAndActiveSiteAgainstTheAPIServer creates a group in a real
// API server, watches /ws/status with a WebSocket client, and changes the
// group's status the way the topology manager does.
func TestStatusStreamAndActiveSiteAgainstTheAPIServer(t *testing.T) {
	op := startOperatorSide(t)
	ns := cp.NewNamespace(t)
	ctx := context.Background()
	groups := op.client.ShipstreamV1alpha1().MysqlFailoverGroups(ns)

	conn, resp, err := websocket.DefaultDialer.Dial("ws://"+op.addr+protocol.PathWSStatus, nil)
	if err != nil {
		t.Fatalf("dial /ws/status: %v", err)
	}
	resp.Body.Close()
	defer conn.Close()
	first := readUntil(t, conn, "the first document", func(protocol.OperatorStatus) bool { return true })
	if !first.Leader || findGroup(first, ns, "orders") != nil {
		t.Fatalf("first document = %+v", first)
	}

	g, err := groups.Create(ctx, newGroup(ns, "orders"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	readUntil(t, conn, "the new group", func(d protocol.OperatorStatus) bool { return findGroup(d, ns, "orders") != nil })

	// Before any status, /active-site names no site: nobody is confirmed.
	var a protocol.ActiveSite
	url := "http://" + op.addr + protocol.PathActiveSite + "?namespace=" + ns + "&group=orders"
	if code := getJSON(t, url, &a); code != 200 || a.ActiveSite != "" || a.Confirms("iad") {
		t.Errorf("/active-site before bootstrap = %d %+v", code, a)
	}

	lag := int64(3)
	failoverAt := metav1.NewTime(time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC))
	g.Status = v1alpha1.MysqlFailoverGroupStatus{
		ActiveSite: "iad", TopologyGeneration: 2, UpdatePhase: "RollingFollowers",
		LastFailover: &v1alpha1.LastFailover{Time: failoverAt, Target: "iad", Source: "pdx", Kind: v1alpha1.TransitionAutomatic,
			PromotionGTIDExecuted: "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-77"},
		Sites: []v1alpha1.SiteStatus{
			{Name: "iad", Role: "PrimaryCandidate", State: v1alpha1.SiteWritable, Replication: v1alpha1.ReplicationNotReplicating},
			{Name: "pdx", Role: "PrimaryCandidate", State: v1alpha1.SiteReadOnly, Replication: v1alpha1.ReplicationRunning,
				SourceHost: "orders-iad-internal." + ns + ".svc", SecondsBehindSource: &lag},
		},
	}
	if g, err = groups.UpdateStatus(ctx, g, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	doc := readUntil(t, conn, "the status change", func(d protocol.OperatorStatus) bool {
		gs := findGroup(d, ns, "orders")
		return gs != nil && gs.ActiveSite == "iad"
	})
	gs := findGroup(doc, ns, "orders")
	if gs.TopologyGeneration != 2 || gs.UpdatePhase != "RollingFollowers" || len(gs.Sites) != 2 ||
		gs.Sites[0].State != "Writable" || gs.Sites[1].State != "ReadOnly" ||
		gs.Sites[1].Replication == nil || gs.Sites[1].Replication.State != "Running" || *gs.Sites[1].Replication.SecondsBehindSource != 3 ||
		gs.LastFailover == nil || !gs.LastFailover.Time.Equal(failoverAt.Time) || gs.LastFailover.Target != "iad" ||
		gs.LastFailover.PromotionGTIDExecuted != "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-77" {
		t.Errorf("streamed group = %+v", gs)
	}

	if a, err = (protocol.Client{}).ActiveSite(ctx, op.addr, ns, "orders"); err != nil || !a.Confirms("iad") || a.TopologyGeneration != 2 ||
		a.Since == nil || !a.Since.Equal(failoverAt.Time) {
		t.Errorf("/active-site = %+v, %v", a, err)
	}

	// A recorded transition withdraws the confirmation at once.
	g.Status.Transition = &v1alpha1.Transition{ID: "7d1c", Kind: v1alpha1.TransitionAutomatic, SourceSite: "iad", TargetSite: "pdx",
		TopologyGeneration: 3, Step: v1alpha1.StepNotifyingSidecars, StartTime: metav1.Now()}
	if _, err = groups.UpdateStatus(ctx, g, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	readUntil(t, conn, "the transition", func(d protocol.OperatorStatus) bool {
		gs := findGroup(d, ns, "orders")
		return gs != nil && gs.Transition != nil && gs.Transition.TargetSite == "pdx"
	})
	if getJSON(t, url, &a); a.Confirms("iad") || a.Transition == nil || a.Transition.ID != "7d1c" || a.Transition.Step != "NotifyingSidecars" {
		t.Errorf("/active-site during a transition = %+v", a)
	}

	// A non-leader answers /status from its cache but never /active-site.
	op.leader.Store(false)
	if _, err := (protocol.Client{}).ActiveSite(ctx, op.addr, ns, "orders"); !protocol.IsNotLeader(err) {
		t.Errorf("/active-site on a non-leader: err = %v, want not_leader", err)
	}
	var st protocol.OperatorStatus
	if code := getJSON(t, "http://"+op.addr+protocol.PathOperatorStatus, &st); code != 200 || st.Leader || findGroup(st, ns, "orders") == nil {
		t.Errorf("/status on a non-leader = %d leader=%v", code, st.Leader)
	}
	op.leader.Store(true)

	if err := groups.Delete(ctx, "orders", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	readUntil(t, conn, "the deletion", func(d protocol.OperatorStatus) bool { return findGroup(d, ns, "orders") == nil })
}

func TestQueryErrorsAndPITRCutoff(t *testing.T) {
	op := startOperatorSide(t)
	ns := cp.NewNamespace(t)
	if _, err := op.client.ShipstreamV1alpha1().MysqlFailoverGroups(ns).Create(context.Background(), newGroup(ns, "orders"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	base := "http://" + op.addr
	var e protocol.ErrorResponse
	if code := getJSON(t, base+protocol.PathActiveSite+"?namespace="+ns, &e); code != 400 || e.Error != protocol.ErrorBadRequest || !strings.Contains(e.Message, "group") {
		t.Errorf("missing group = %d %+v", code, e)
	}
	if code := getJSON(t, base+protocol.PathActiveSite+"?namespace="+ns+"&group=nope", &e); code != 404 || e.Error != protocol.ErrorNotFound {
		t.Errorf("unknown group = %d %+v", code, e)
	}
	var c protocol.PITRCutoff
	deadline := time.Now().Add(10 * time.Second)
	for getJSON(t, base+protocol.PathPITRCutoff+"?namespace="+ns+"&group=orders", &c) != 200 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // the informer has not seen the new group yet
	}
	if c.Configured || c.Group != "orders" || c.CutoffGTIDSet != "" || !strings.Contains(c.Message, "not configured") {
		t.Errorf("/pitr-cutoff = %+v", c)
	}
	resp, err := http.Get(base + protocol.PathOperatorHealthz)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/healthz = %d", resp.StatusCode)
	}
	// A browser page from another origin may not open the stream.
	hdr := http.Header{"Origin": {"http://evil.example"}}
	if conn, resp, err := websocket.DefaultDialer.Dial("ws://"+op.addr+protocol.PathWSStatus, hdr); err == nil {
		conn.Close()
		t.Error("cross-origin WebSocket accepted")
	} else if resp != nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("cross-origin WebSocket = %d, want 403", resp.StatusCode)
		}
	}
}
