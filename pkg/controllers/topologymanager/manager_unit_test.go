package topologymanager

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/observe"
)

func TestCredentialsFromData(t *testing.T) {
	full := map[string][]byte{"username": []byte("op"), "password": []byte("op-secret"),
		"MYSQL_REPLICATION_USER": []byte("repl"), "MYSQL_REPLICATION_PASSWORD": []byte("repl-secret")}
	c, err := credentialsFromData("ns/s", full)
	if err != nil || c.User != "op" || c.Password != "op-secret" || c.ReplicationUser != "repl" || c.ReplicationPassword != "repl-secret" {
		t.Fatalf("%+v %v", c, err)
	}
	c, err = credentialsFromData("ns/s", map[string][]byte{"username": []byte("op"), "password": []byte("op-secret")})
	if err != nil || c.ReplicationUser != "op" || c.ReplicationPassword != "op-secret" {
		t.Fatalf("replication account does not default to the operator's: %+v %v", c, err)
	}
	for _, tc := range []struct {
		data    map[string][]byte
		wantKey string
	}{
		{map[string][]byte{"password": []byte("x")}, `"username"`},
		{map[string][]byte{"username": []byte("op")}, `"password"`},
		{map[string][]byte{"username": []byte("op"), "password": []byte("x"), "MYSQL_REPLICATION_USER": []byte("r")}, `"MYSQL_REPLICATION_PASSWORD"`},
	} {
		_, err := credentialsFromData("ns/s", tc.data)
		if err == nil || !strings.Contains(err.Error(), tc.wantKey) || !strings.Contains(err.Error(), "ns/s") {
			t.Errorf("error %v does not name the Secret and key %s", err, tc.wantKey)
		}
		if err != nil && strings.Contains(err.Error(), `"x"`) {
			t.Errorf("error leaks a value: %v", err)
		}
	}
}

func TestLastFailoverAnnotations(t *testing.T) {
	g := &v1alpha1.MysqlFailoverGroup{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		AnnotationLastFailover: "2026-11-30T08:00:00Z", AnnotationLastFailoverTarget: "pdx"}}}
	r := rehydrate(g)
	if r.Status.LastFailover == nil || r.Status.LastFailover.Target != "pdx" || !r.Status.LastFailover.Time.Equal(&metav1.Time{Time: time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)}) {
		t.Fatalf("rehydrated %+v", r.Status.LastFailover)
	}
	if g.Status.LastFailover != nil {
		t.Fatal("rehydrate modified its argument")
	}
	// A status that has its own record wins; a half pair or a bad time is ignored.
	g.Status.LastFailover = &v1alpha1.LastFailover{Target: "iad"}
	if rehydrate(g).Status.LastFailover.Target != "iad" {
		t.Fatal("annotations overrode the status")
	}
	g.Status.LastFailover = nil
	g.Annotations[AnnotationLastFailover] = "yesterday"
	if rehydrate(g).Status.LastFailover != nil {
		t.Fatal("an unreadable annotation was rehydrated")
	}
	delete(g.Annotations, AnnotationLastFailover)
	if rehydrate(g).Status.LastFailover != nil {
		t.Fatal("half a pair was rehydrated")
	}
	ts, target := lastFailoverAnnotations(&v1alpha1.LastFailover{Time: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 678, time.FixedZone("x", 3600))), Target: "pdx"})
	if ts != "2026-01-02T02:04:05Z" || target != "pdx" {
		t.Fatalf("annotations %q %q: want RFC 3339 UTC at second precision", ts, target)
	}
}

func TestSiteBackoffStopsWhileTheActiveSiteChanges(t *testing.T) {
	g := &v1alpha1.MysqlFailoverGroup{}
	g.Spec.PollInterval = &metav1.Duration{Duration: 200 * time.Millisecond}
	p := &mpass{g: g}
	failing := observe.Health{Reach: observe.Unreachable, Failures: 8}
	if d := p.siteBackoff(failing); d < time.Second {
		t.Fatalf("a site failing 8 times in a row is polled again after %s; want a backed-off interval", d)
	}
	g.Status.Transition = &v1alpha1.Transition{ID: "t1", Kind: v1alpha1.TransitionAutomatic, SourceSite: "iad", TargetSite: "pdx"}
	if d := p.siteBackoff(failing); d != 0 {
		t.Fatalf("during a transition the old primary is polled again after %s; want every round", d)
	}
}
