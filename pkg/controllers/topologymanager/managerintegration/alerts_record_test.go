package managerintegration

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/shipstream/bloodraven/e2e/framework"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/testbed/alertrules"
	"github.com/shipstream/bloodraven/pkg/testbed/argohealth"
)

// recordAlertTests, when set, makes TestAlertRulesOnARecordedPrimaryCrash
// also write its recording to the committed promtool test under
// deploy/components/monitoring/tests/ (the deploy package replays it).
const recordAlertTests = "BLOODRAVEN_RECORD_ALERT_TESTS"

// worldStep is what the simulated world held at one scrape: the sites that
// could take a write (running, read_only off) and the sites running.
type worldStep struct{ writable, running []string }

// alertRecording scrapes the current operator's registry once a second
// (one promtool step per scrape) and notes the world's truth beside it.
type alertRecording struct {
	rec   *alertrules.Recorder
	reg   atomic.Pointer[prometheus.Registry]
	mu    sync.Mutex
	world []worldStep
	stop  chan struct{}
	done  chan struct{}
}

func (e *env) recordAlerts(t *testing.T, reg *prometheus.Registry) *alertRecording {
	var families []string
	for _, r := range alertrules.Alerts(t) {
		families = append(families, alertrules.MetricNames(r.Expr)...)
	}
	a := &alertRecording{rec: alertrules.NewRecorder(families), stop: make(chan struct{}), done: make(chan struct{})}
	a.reg.Store(reg)
	go func() {
		defer close(a.done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-a.stop:
				return
			case <-tick.C:
			}
			w := e.worldNow()
			if r := a.reg.Load(); r != nil {
				if err := a.rec.Scrape(r); err != nil {
					t.Errorf("scrape: %v", err)
				}
			} else {
				a.rec.Gap()
			}
			a.mu.Lock()
			a.world = append(a.world, w)
			a.mu.Unlock()
		}
	}()
	t.Cleanup(a.end)
	return a
}

func (a *alertRecording) end() {
	select {
	case <-a.stop:
	default:
		close(a.stop)
	}
	<-a.done
}

func (e *env) worldNow() worldStep {
	var w worldStep
	for name, s := range e.sites {
		snap := s.Snapshot()
		if snap.Running {
			w.running = append(w.running, name)
			if !snap.ReadOnly && !snap.SuperReadOnly {
				w.writable = append(w.writable, name)
			}
		}
	}
	sort.Strings(w.writable)
	sort.Strings(w.running)
	return w
}

// waitSteps waits until n steps are recorded and returns the last one.
func (a *alertRecording) waitSteps(t *testing.T, n int) int {
	t.Helper()
	eventually(t, time.Duration(n)*2*time.Second+waitFor, fmt.Sprintf("%d scrapes", n), func() error {
		if got := a.rec.Steps(); got < n {
			return fmt.Errorf("%d scrapes", got)
		}
		return nil
	})
	return n - 1
}

func (a *alertRecording) worldAt(step int) worldStep {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.world[step]
}

// requireWorld fails unless, at every step of [from, to], exactly the
// sites named could take writes.
func (a *alertRecording) requireWorld(t *testing.T, from, to int, writable ...string) {
	t.Helper()
	for s := from; s <= to; s++ {
		if got := a.worldAt(s).writable; strings.Join(got, ",") != strings.Join(writable, ",") {
			t.Fatalf("step %d: the simulated world's writable sites are %v, want %v", s, got, writable)
		}
	}
}

func at(step int) string { return fmt.Sprintf("%ds", step) }

// The alerting rules, fed the series the topology manager really exported
// while a healthy group ran and then lost its primaries, stay silent on the
// healthy group and fire during the outage.
//
// The recording, one scrape a second: a three-site group (iad, pdx,
// reader) under an operator with automatic failover runs healthy for 30
// scrapes; iad crashes and is failed over to pdx (a failover that completes
// pages nobody but BloodravenSiteUnreachable); five scrapes after the
// promotion pdx crashes too, inside failoverCooldown and with no other
// candidate, so no site takes writes; 68 scrapes follow, longer than
// BloodravenSiteUnreachable's minute. What the simulated servers held at
// each scrape (who could take a write) is checked beside each expectation,
// so the expectations follow the world, not the operator's own account.
func TestAlertRulesOnARecordedPrimaryCrash(t *testing.T) {
	alertrules.Promtool(t) // fail before a two-minute recording if it is missing
	e := newEnv(t, threeSites)
	op := e.startOperator(withFailover)
	e.create(e.failoverGroup(threeSites))
	e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	e.waitContact("iad")
	eventually(t, waitFor, "both followers replicating", func() error {
		for _, name := range []string{"pdx", "reader"} {
			if st := site(e.get(), name); st == nil || st.Replication != v1alpha1.ReplicationRunning {
				return fmt.Errorf("site %s: %+v", name, st)
			}
		}
		return nil
	})

	a := e.recordAlerts(t, op.metrics)
	healthyEnd := a.waitSteps(t, 30)
	a.requireWorld(t, 0, healthyEnd, "iad")
	e.requireArgoHealth(t, "Healthy")

	e.sites["iad"].Crash()
	firstCrash := a.rec.Steps()
	e.waitActive("pdx", 2)
	promoted := a.rec.Steps()
	afterFailover := a.waitSteps(t, promoted+5)
	a.requireWorld(t, promoted+1, afterFailover, "pdx")

	e.sites["pdx"].Crash()
	secondCrash := a.rec.Steps()
	final := a.waitSteps(t, secondCrash+68)
	a.end()
	a.requireWorld(t, secondCrash+1, final)
	if g := e.get(); g.Status.ActiveSite != "pdx" || g.Status.TopologyGeneration != 2 {
		t.Fatalf("after the second crash: active %q generation %d", g.Status.ActiveSite, g.Status.TopologyGeneration)
	}
	e.requireArgoHealth(t, "Degraded")

	file := e.alertTests(t, a, healthyEnd, afterFailover, final)
	dir := t.TempDir()
	rules := alertrules.WriteRulesFile(t, dir)
	alertrules.Run(t, dir, "check", "rules", rules)
	b, err := yaml.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "primary-crash.test.yaml"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	out := alertrules.Run(t, dir, "test", "rules", "primary-crash.test.yaml")
	t.Logf("promtool over %d scrapes (iad crashed at %d, pdx published by %d, pdx crashed at %d): %s",
		final+1, firstCrash, promoted, secondCrash, strings.TrimSpace(out))
	if os.Getenv(recordAlertTests) != "" {
		dst := filepath.Join(framework.RepoRoot(), "deploy/components/monitoring/tests/primary-crash.test.yaml")
		header := []byte("# Recorded by TestAlertRulesOnARecordedPrimaryCrash (pkg/controllers/topologymanager/managerintegration)\n# with " + recordAlertTests + "=1; replayed by the deploy package's tests. Do not edit by hand.\n")
		if err := os.WriteFile(dst, append(header, b...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// alertTests builds the promtool test over the recording: every alert's
// expression is empty at every fifth step of the healthy part and no alert
// fires at its end; after the first failover BloodravenNoWritablePrimary
// neither fires nor holds; at the end exactly these fire: the group's
// BloodravenNoWritablePrimary and BloodravenAutomaticFailoverRefused, and
// BloodravenSiteUnreachable for iad and pdx. At no sampled step where the
// world had at most one writer does the split-brain expression hold.
func (e *env) alertTests(t *testing.T, a *alertRecording, healthyEnd, afterFailover, final int) alertrules.TestFile {
	rules := map[string]alertrules.Rule{}
	var names []string
	for _, r := range alertrules.Alerts(t) {
		rules[r.Alert] = r
		names = append(names, r.Alert)
	}
	none := func() []alertrules.ExpectedAlert { return []alertrules.ExpectedAlert{} }
	tc := alertrules.TestCase{Name: "a healthy group, then its primaries crashed", Interval: "1s", InputSeries: a.rec.InputSeries()}
	for step := 0; step <= healthyEnd; step += 5 {
		for _, n := range names {
			tc.ExprTests = append(tc.ExprTests, alertrules.ExprTest{Expr: rules[n].Expr, EvalTime: at(step), ExpSamples: []alertrules.ExpectedSample{}})
		}
	}
	tc.ExprTests = append(tc.ExprTests, alertrules.ExprTest{Expr: rules["BloodravenNoWritablePrimary"].Expr, EvalTime: at(afterFailover), ExpSamples: []alertrules.ExpectedSample{}})
	tc.AlertTests = append(tc.AlertTests, alertrules.AlertTest{EvalTime: at(afterFailover), AlertName: "BloodravenNoWritablePrimary", ExpAlerts: none()})
	firing := map[string][]alertrules.ExpectedAlert{
		"BloodravenNoWritablePrimary":        {e.expected(t, rules["BloodravenNoWritablePrimary"], nil)},
		"BloodravenAutomaticFailoverRefused": {e.expected(t, rules["BloodravenAutomaticFailoverRefused"], map[string]string{"namespace": "", "group": "", "kind": "Automatic", "result": "refused"})},
		"BloodravenSiteUnreachable": {
			e.expected(t, rules["BloodravenSiteUnreachable"], map[string]string{"site": "iad", "state": "unreachable"}),
			e.expected(t, rules["BloodravenSiteUnreachable"], map[string]string{"site": "pdx", "state": "unreachable"}),
		},
	}
	for _, n := range names {
		tc.AlertTests = append(tc.AlertTests, alertrules.AlertTest{EvalTime: at(healthyEnd), AlertName: n, ExpAlerts: none()})
		exp := firing[n]
		if exp == nil {
			exp = none()
		}
		tc.AlertTests = append(tc.AlertTests, alertrules.AlertTest{EvalTime: at(final), AlertName: n, ExpAlerts: exp})
	}
	for step := 0; step <= final; step += 5 {
		if len(a.worldAt(step).writable) <= 1 {
			tc.ExprTests = append(tc.ExprTests, alertrules.ExprTest{Expr: rules["BloodravenSplitBrain"].Expr, EvalTime: at(step), ExpSamples: []alertrules.ExpectedSample{}})
		}
	}
	return alertrules.TestFile{RuleFiles: []string{"rules.yaml"}, EvaluationInterval: "1s", Tests: []alertrules.TestCase{tc}}
}

// expected is rule r firing for this env's group, with the series labels
// extra (an empty value drops a label): the rule's labels and its
// annotations rendered for them.
func (e *env) expected(t *testing.T, r alertrules.Rule, extra map[string]string) alertrules.ExpectedAlert {
	labels := map[string]string{"namespace": e.ns, "group": groupName}
	for k, v := range extra {
		labels[k] = v
		if v == "" {
			delete(labels, k)
		}
	}
	ann := map[string]string{}
	for k, v := range r.Annotations {
		ann[k] = alertrules.Render(t, v, labels)
	}
	for k, v := range r.Labels {
		labels[k] = v
	}
	return alertrules.ExpectedAlert{Labels: labels, Annotations: ann}
}

// requireArgoHealth runs the shipped Argo CD health script on the group as
// the API server serves it now.
func (e *env) requireArgoHealth(t *testing.T, want string) {
	t.Helper()
	script, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "deploy/argocd/health-mysqlfailovergroup.lua"))
	if err != nil {
		t.Fatal(err)
	}
	// The status it is judged on settles within a few polls: a poll that
	// misses its deadline on a loaded machine shows a follower's source
	// as ProbeFailed for one pass.
	var got argohealth.Result
	eventually(t, 10*time.Second, "Argo CD health "+want, func() error {
		g := e.get()
		g.APIVersion, g.Kind = "shipstream.io/v1alpha1", "MysqlFailoverGroup"
		var err error
		if got, err = argohealth.Evaluate(string(script), g); err != nil || got.Status != want {
			return fmt.Errorf("Argo CD health of the group: %+v (%v), want %s; status %+v", got, err, want, g.Status.Conditions)
		}
		return nil
	})
	t.Logf("Argo CD health: %s %q", got.Status, got.Message)
}
