package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controllers/leaserevocation"
	"github.com/shipstream/bloodraven/pkg/leasestore"
	"github.com/shipstream/bloodraven/pkg/pluginview"
	"github.com/shipstream/bloodraven/pkg/topology"
)

func TestStatusTextAndStructured(t *testing.T) {
	e := newEnv(t)
	e.stageDiverged()
	g := e.group()
	store := leasestore.New(cp.Client(), leasestore.Options{})
	_, err := store.Grant(context.Background(), leasestore.GrantRequest{
		Group: leasestore.GroupRef{Namespace: e.ns, Name: "orders", UID: g.UID}, Kind: leasestore.KindMigration,
		OperationID: "deploy-1", Instance: "orders-app", Holder: "apps/deployer", TTL: time.Minute, TopologyGeneration: 4})
	if err != nil {
		t.Fatal(err)
	}

	text := e.mustRun("status", "orders")
	t.Log("\n" + text)
	for _, want := range []string{"Group:       " + e.ns + "/orders", "Active site: iad", "Generation:  4", "iad *",
		"52 txns (2 not on active)", "47 txns (3 behind)", "pdx: 2 transactions site iad lacks (found by ReplicaAudit)",
		"migration deploy-1 for orders-app by apps/deployer", "Degraded=True/DivergentTransactions"} {
		if !strings.Contains(text, want) {
			t.Errorf("status lacks %q:\n%s", want, text)
		}
	}

	var s pluginview.Summary
	if err := json.Unmarshal([]byte(e.mustRun("status", "orders", "-o", "json")), &s); err != nil {
		t.Fatal(err)
	}
	if s.ActiveSite != "iad" || len(s.Sites) != 3 || s.Sites[1].Divergence == nil || s.Leases == nil || len(s.Leases.Live) != 1 {
		t.Fatalf("json summary: %+v", s)
	}
	var list struct{ Items []pluginview.Summary }
	if err := yaml.Unmarshal([]byte(e.mustRun("status", "--output=yaml")), &list); err != nil || len(list.Items) != 1 || list.Items[0].Name != "orders" {
		t.Fatalf("yaml list: %+v, %v", list, err)
	}
}

func TestStatusUsesTheContextNamespaceAndExplainsErrors(t *testing.T) {
	e := newEnv(t)
	var out, errOut bytes.Buffer
	a := &app{in: strings.NewReader(""), out: &out, errOut: &errOut}
	if code := a.run([]string{"status", "orders", "--kubeconfig", kubeconfigWithNamespace(t, e.ns)}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "Active site: -") {
		t.Errorf("a group without status: %s", out.String())
	}
	_, stderr, code := e.run("", false, "status", "missing")
	if code != 1 || !strings.Contains(stderr, `MysqlFailoverGroup "missing" not found in namespace "`+e.ns+`": pass -n <namespace>`) {
		t.Errorf("missing group: exit %d, %s", code, stderr)
	}
	_, stderr, code = e.run("", false, "status", "-o", "xml")
	if code != 2 || !strings.Contains(stderr, "use json or yaml") {
		t.Errorf("bad -o: exit %d, %s", code, stderr)
	}
}

func TestRecloneRefusesWithoutYesThenSetsTheExactValue(t *testing.T) {
	e := newEnv(t)
	e.stageDiverged()
	uid := string(e.group().UID)

	out, stderr, code := e.run("", false, "reclone", "orders", "pdx")
	t.Log("\n" + out + stderr)
	if code != 2 || !strings.Contains(stderr, "run again with --yes") || !strings.Contains(out, "The clone DESTROYS them") || !strings.Contains(out, uuidPDX+":1-2") {
		t.Fatalf("without --yes: exit %d\n%s\n%s", code, out, stderr)
	}
	if v, ok := e.annotation(topology.AnnotationRecloneSite); ok {
		t.Fatalf("annotation set without confirmation: %s", v)
	}

	_, stderr, code = e.run("iad\n", true, "reclone", "orders", "pdx")
	if code != 1 || !strings.Contains(stderr, "not confirmed") {
		t.Fatalf("wrong answer: exit %d %s", code, stderr)
	}

	e.mustRun("reclone", "orders", "pdx", "--yes")
	want := "pdx:confirm=orders:uid=" + uid + ":gtidPrefix=" + uuidPDX
	got, _ := e.annotation(topology.AnnotationRecloneSite)
	if got != want {
		t.Fatalf("annotation = %q, want %q", got, want)
	}
	if r, err := topology.ParseRecloneValue(got); err != nil || r.GTIDPrefix != uuidPDX {
		t.Fatalf("the operator's parser: %+v, %v", r, err)
	}

	// A cold reclone of the reader, confirmed at the prompt.
	out, stderr, code = e.run("reader\n", true, "reclone", "orders", "reader")
	if code != 0 || !strings.Contains(out, "nothing is discarded") {
		t.Fatalf("cold reclone: exit %d\n%s\n%s", code, out, stderr)
	}
	if got, _ := e.annotation(topology.AnnotationRecloneSite); got != "reader:confirm=orders:uid="+uid {
		t.Fatalf("cold annotation = %q", got)
	}

	_, stderr, code = e.run("", false, "reclone", "orders", "iad", "--yes")
	if code != 1 || !strings.Contains(stderr, "is the active site (the donor)") {
		t.Errorf("active site: exit %d %s", code, stderr)
	}
}

func TestPlannedFailover(t *testing.T) {
	e := newEnv(t)
	e.stageDiverged()
	_, stderr, code := e.run("", false, "planned-failover", "orders", "reader")
	if code != 1 || !strings.Contains(stderr, "only PrimaryCandidate sites can become active") {
		t.Fatalf("reader: exit %d %s", code, stderr)
	}
	e.mustRun("planned-failover", "orders", "pdx", "--max-lag-wait", "5m")
	if got, _ := e.annotation(topology.AnnotationPlannedFailover); got != "pdx:maxLagWait=5m0s" {
		t.Fatalf("annotation = %q", got)
	}
	_, stderr, code = e.run("", false, "planned-failover", "orders", "pdx")
	if code != 1 || !strings.Contains(stderr, "is waiting for the operator") {
		t.Fatalf("second request: exit %d %s", code, stderr)
	}
}

func TestRevokeLeases(t *testing.T) {
	e := newEnv(t)
	g := e.group()
	_, err := leasestore.New(cp.Client(), leasestore.Options{}).Grant(context.Background(), leasestore.GrantRequest{
		Group: leasestore.GroupRef{Namespace: e.ns, Name: "orders", UID: g.UID}, Kind: leasestore.KindMigration,
		OperationID: "deploy-9", Instance: "orders-app", Holder: "apps/deployer", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	out := e.mustRun("revoke-leases", "orders", "--reason", "incident-42")
	if !strings.Contains(out, "Revoking migration deploy-9") {
		t.Errorf("output: %s", out)
	}
	if got, _ := e.annotation(leaserevocation.RevokeAnnotation); got != "incident-42" {
		t.Fatalf("annotation = %q", got)
	}
}

func TestClearAutomaticFailoverHold(t *testing.T) {
	e := newEnv(t)
	_, stderr, code := e.run("", false, "clear-automatic-failover-hold", "orders")
	if code != 1 || !strings.Contains(stderr, "nothing to clear") {
		t.Fatalf("no hold: exit %d %s", code, stderr)
	}
	e.stage(func(st *v1alpha1.MysqlFailoverGroupStatus) {
		st.AutomaticFailoverHold = &v1alpha1.AutomaticFailoverHold{Reason: topology.HoldReasonSourceLeftFenced, Since: metav1.Now(), Message: "check iad"}
	})
	out := e.mustRun("clear-automatic-failover-hold", "orders")
	if !strings.Contains(out, "Clearing hold PlannedFailoverSourceLeftFenced") {
		t.Errorf("output: %s", out)
	}
	if got, _ := e.annotation(topology.AnnotationClearAutomaticFailoverHold); got != "orders" {
		t.Fatalf("annotation = %q", got)
	}
}

func TestCompletion(t *testing.T) {
	e := newEnv(t)
	e.stageDiverged()
	complete := func(words ...string) []string {
		var out bytes.Buffer
		a := &app{out: &out, errOut: &out}
		a.run(append([]string{completeCommand}, words...))
		return strings.Split(strings.TrimSpace(out.String()), "\n")
	}
	kc := []string{"--kubeconfig", cp.KubeconfigPath, "-n", e.ns}
	cases := []struct {
		words []string
		want  string
	}{
		{[]string{"pl"}, "planned-failover\n:4"},
		{append(append([]string{"status"}, kc...), ""), "orders\n:4"},
		{append(append([]string{"reclone"}, kc...), "orders", ""), "pdx\nreader\n:4"},
		{append(append([]string{"planned-failover"}, kc...), "orders", ""), "pdx\n:4"},
		{[]string{"status", "-o", ""}, "json\nyaml\n:4"},
		{[]string{"completion", ""}, "bash\nzsh\nkubectl\n:4"},
	}
	for _, tc := range cases {
		if got := strings.Join(complete(tc.words...), "\n"); got != tc.want {
			t.Errorf("complete %q = %q, want %q", tc.words, got, tc.want)
		}
	}
	var out bytes.Buffer
	if code := (&app{out: &out, errOut: &out}).run([]string{"completion", "bash"}); code != 0 || !strings.Contains(out.String(), "complete -F _kubectl_bloodraven kubectl-bloodraven") {
		t.Errorf("completion bash: %d %s", code, out.String())
	}
}

func TestHelpHasExamplesAndNoUnbuiltCommands(t *testing.T) {
	var out bytes.Buffer
	if code := (&app{out: &out, errOut: &out}).run([]string{"--help"}); code != 0 {
		t.Fatal(code)
	}
	for _, unbuilt := range []string{"backup", "verify", "restore"} {
		if strings.Contains(out.String(), unbuilt) {
			t.Errorf("help names %q, which is not built:\n%s", unbuilt, out.String())
		}
	}
	for _, c := range commands() {
		out.Reset()
		if code := (&app{out: &out, errOut: &out}).run([]string{c.name, "--help"}); code != 0 || !strings.Contains(out.String(), "Examples:\n  ") {
			t.Errorf("%s --help: exit %d\n%s", c.name, code, out.String())
		}
	}
	out.Reset()
	if code := (&app{out: &out, errOut: &out}).run([]string{"reclone", "orders"}); code != 2 || !strings.Contains(out.String(), "reclone needs <group> <site>") {
		t.Errorf("missing site: exit %d\n%s", code, out.String())
	}
}

// TestAnnotateSurvivesConcurrentStatusWrites: the commands write with a
// merge patch carrying no resourceVersion, so an operator rewriting status
// all the time never makes them fail with a conflict.
func TestAnnotateSurvivesConcurrentStatusWrites(t *testing.T) {
	e := newEnv(t)
	e.stageDiverged()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		api := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns)
		for i := int64(0); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if g, err := api.Get(context.Background(), "orders", metav1.GetOptions{}); err == nil {
				g.Status.ObservedGeneration = i
				_, _ = api.UpdateStatus(context.Background(), g, metav1.UpdateOptions{})
			}
		}
	}()
	defer func() { close(stop); <-done }()
	for i := 0; i < 10; i++ {
		e.mustRun("revoke-leases", "orders", "--reason", "r"+strconv.Itoa(i))
		e.mustRun("reclone", "orders", "reader", "--yes")
	}
	if got, _ := e.annotation(leaserevocation.RevokeAnnotation); got != "r9" {
		t.Fatalf("annotation = %q", got)
	}
}

// TestBinaryRefusesRecloneWithoutATerminal runs the built plugin as kubectl
// would, with stdin and stdout pipes: nobody can answer, so it must refuse.
func TestBinaryRefusesRecloneWithoutATerminal(t *testing.T) {
	e := newEnv(t)
	e.stageDiverged()
	bin := filepath.Join(t.TempDir(), "kubectl-bloodraven")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "reclone", "orders", "pdx", "--kubeconfig", cp.KubeconfigPath, "-n", e.ns)
	cmd.Stdin = strings.NewReader("pdx\n")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "stdin is not a terminal") {
		t.Fatalf("err %v\n%s", err, out)
	}
	if v, ok := e.annotation(topology.AnnotationRecloneSite); ok {
		t.Fatalf("annotation set: %s", v)
	}
}
