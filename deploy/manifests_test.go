// Package deploy_test checks the install manifests: every kustomize entry
// point renders, and what it renders is accepted by a real API server with
// server-side strict field validation.
package deploy_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/shipstream/bloodraven/e2e/framework"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/render"
)

var cp *framework.ControlPlane

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	framework.Main(m, framework.Options{}, &cp)
}

type object struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   map[string]any `json:"metadata"`
	raw        map[string]any
}

func (o object) name() string      { s, _ := o.Metadata["name"].(string); return s }
func (o object) namespace() string { s, _ := o.Metadata["namespace"].(string); return s }

func kubectl() string { return filepath.Join(framework.BinDir(), "kubectl") }

// kustomize runs `kubectl kustomize dir` with the v1.37 kubectl.
func kustomize(t *testing.T, dir string) (string, []object) {
	t.Helper()
	if _, err := os.Stat(kubectl()); err != nil {
		t.Skipf("bin/kubectl is not built (make tools): %v", err)
	}
	var out, errb bytes.Buffer
	cmd := exec.Command(kubectl(), "kustomize", dir)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, errb.String())
	}
	var objs []object
	for _, doc := range strings.Split(out.String(), "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var o object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("%s renders invalid YAML: %v", dir, err)
		}
		_ = yaml.Unmarshal([]byte(doc), &o.raw)
		objs = append(objs, o)
	}
	if len(objs) == 0 {
		t.Fatalf("%s renders nothing", dir)
	}
	return out.String(), objs
}

func repo(p string) string { return filepath.Join(framework.RepoRoot(), p) }

// entryPoints lists every directory under deploy/ with a Kustomization
// (components are rendered through the overlays and the combinations below).
func entryPoints(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(repo("deploy"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "kustomization.yaml" {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), "\nkind: Kustomization") {
			dirs = append(dirs, filepath.Dir(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(dirs)
	return dirs
}

// componentCombos writes throwaway overlays that add each component to the
// base on its own (and the TLS + deploy API pair), so each renders alone.
func componentCombos(t *testing.T) map[string]string {
	combos := map[string][]string{
		"escrow-tls":                {"escrow-tls"},
		"escrow-tls+deploy-api":     {"escrow-tls", "deploy-api"},
		"deploy-api-network-policy": {"deploy-api-network-policy"},
	}
	out := map[string]string{}
	for name, comps := range combos {
		dir := t.TempDir()
		// kustomize refuses absolute roots; a relative path may leave the root.
		rel := func(p string) string {
			r, err := filepath.Rel(dir, repo(p))
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		var b strings.Builder
		b.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - " + rel("deploy/base") + "\ncomponents:\n")
		for _, c := range comps {
			b.WriteString("  - " + rel("deploy/components/"+c) + "\n")
		}
		if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		out[name] = dir
	}
	return out
}

func TestEveryEntryPointRenders(t *testing.T) {
	dirs := entryPoints(t)
	want := []string{repo("deploy/base"), repo("deploy/crds"), repo("deploy/overlays/example")}
	for _, w := range want {
		if !contains(dirs, w) {
			t.Errorf("entry point %s not found (found %v)", w, dirs)
		}
	}
	for _, dir := range dirs {
		_, objs := kustomize(t, dir)
		for _, o := range objs {
			if o.Kind == "" || o.APIVersion == "" || o.name() == "" {
				t.Errorf("%s renders an object without kind/apiVersion/name: %+v", dir, o)
			}
		}
	}
	for name, dir := range componentCombos(t) {
		if _, objs := kustomize(t, dir); len(objs) < 5 {
			t.Errorf("component combination %s rendered %d objects", name, len(objs))
		}
	}
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// Every CRD file the code generator writes is part of the install.
func TestBaseInstallsEveryCRD(t *testing.T) {
	files, err := filepath.Glob(repo("deploy/crds/shipstream.io_*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRD files: %v", err)
	}
	_, objs := kustomize(t, repo("deploy/base"))
	crds := map[string]bool{}
	for _, o := range objs {
		if o.Kind == "CustomResourceDefinition" {
			crds[o.name()] = true
		}
		if o.Kind != "CustomResourceDefinition" && o.Kind != "Namespace" && o.Kind != "ClusterRole" && o.Kind != "ClusterRoleBinding" && o.namespace() != "bloodraven" {
			t.Errorf("%s %s is in namespace %q, want bloodraven", o.Kind, o.name(), o.namespace())
		}
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		var crd object
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatal(err)
		}
		if !crds[crd.name()] {
			t.Errorf("CRD %s (%s) is not in deploy/base", crd.name(), filepath.Base(f))
		}
	}
}

// The NetworkPolicy docs/install.md describes: deployment clients need BOTH
// labels (one peer entry), operator-managed mysqld pods from any namespace
// are admitted, and 8080-8082 stay open.
func TestNetworkPolicyShape(t *testing.T) {
	_, objs := kustomize(t, repo("deploy/overlays/example"))
	var np map[string]any
	for _, o := range objs {
		if o.Kind == "NetworkPolicy" {
			np = o.raw
		}
	}
	if np == nil {
		t.Fatal("the example overlay renders no NetworkPolicy")
	}
	ingress := np["spec"].(map[string]any)["ingress"].([]any)
	first := ingress[0].(map[string]any)
	peers := first["from"].([]any)
	client := peers[0].(map[string]any)
	ns := client["namespaceSelector"].(map[string]any)["matchLabels"].(map[string]any)
	pod := client["podSelector"].(map[string]any)["matchLabels"].(map[string]any)
	if ns["shipstream.io/mysql-client"] != "true" || pod["bloodraven.shipstream.io/deploy-client"] != "true" {
		t.Errorf("deployment-client peer = %v; want both selectors in one peer", client)
	}
	mysqld := peers[1].(map[string]any)
	if sel, ok := mysqld["namespaceSelector"].(map[string]any); !ok || len(sel) != 0 {
		t.Errorf("mysqld peer must select all namespaces: %v", mysqld)
	}
	// The escrow peer admits the mysqld pods the operator actually renders.
	want := map[string]string{}
	for k, v := range dig(mysqld, "podSelector", "matchLabels").(map[string]any) {
		want[k], _ = v.(string)
	}
	g := &v1alpha1.MysqlFailoverGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders"}}
	if len(want) == 0 || !labels.SelectorFromSet(want).Matches(labels.Set(render.SiteLabels(g, "iad"))) {
		t.Errorf("escrow peer selector %v does not select the operator's mysqld pods (labels %v)", want, render.SiteLabels(g, "iad"))
	}
	ports := first["ports"].([]any)
	if len(ports) != 1 || ports[0].(map[string]any)["port"] != float64(8443) {
		t.Errorf("TLS rule ports = %v, want only 8443", ports)
	}
	if len(ingress) != 3 {
		t.Errorf("ingress rules = %d, want TLS, open 8080-8082, and the example's additional rule", len(ingress))
	}
}

// apply sends rendered YAML to the test API server with server-side apply and
// strict field validation.
func apply(t *testing.T, yamlText string) (string, error) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "rendered.yaml")
	if err := os.WriteFile(f, []byte(yamlText), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := cp.Kubectl(context.Background(), "apply", "--server-side", "--field-manager=bloodraven-manifest-test", "--force-conflicts", "--validate=strict", "-f", f)
	return out + errOut, err
}

func TestRenderedObjectsAreAcceptedWithStrictValidation(t *testing.T) {
	if cp == nil {
		t.Skip("integration test: needs the control plane (not run with -short)")
	}
	// The CRDs first, so the API server knows them before anything else.
	crdText, _ := kustomize(t, repo("deploy/crds"))
	if out, err := apply(t, crdText); err != nil {
		t.Fatalf("apply deploy/crds: %v\n%s", err, out)
	}
	if out, _, err := cp.Kubectl(context.Background(), "wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"); err != nil {
		t.Fatalf("CRDs not established: %v %s", err, out)
	}
	dirs := entryPoints(t)
	for name, dir := range componentCombos(t) {
		dirs = append(dirs, dir)
		t.Logf("component combination %s: %s", name, dir)
	}
	for _, dir := range dirs {
		text, objs := kustomize(t, dir)
		out, err := apply(t, text)
		if err != nil {
			t.Errorf("apply %s: %v\n%s", dir, err, out)
			continue
		}
		for _, o := range objs {
			if !strings.Contains(out, o.name()) {
				t.Errorf("apply %s: no result line for %s %s:\n%s", dir, o.Kind, o.name(), out)
			}
		}
	}
}

// The strict check is real: a misspelled field in a rendered object is refused.
func TestStrictValidationRefusesUnknownFields(t *testing.T) {
	if cp == nil {
		t.Skip("integration test: needs the control plane (not run with -short)")
	}
	text, _ := kustomize(t, repo("deploy/base"))
	var deployment string
	for _, doc := range strings.Split(text, "\n---\n") {
		if strings.Contains(doc, "kind: Deployment") {
			deployment = doc
		}
	}
	if deployment == "" {
		t.Fatal("deploy/base renders no Deployment")
	}
	broken := strings.Replace(deployment, "terminationGracePeriodSeconds:", "terminationGracePeriodSecond:", 1)
	if _, err := cp.Client().CoreV1().Namespaces().Get(context.Background(), "bloodraven", metav1.GetOptions{}); err != nil {
		if out, err := apply(t, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: bloodraven\n"); err != nil {
			t.Fatalf("create namespace: %v %s", err, out)
		}
	}
	out, err := apply(t, broken)
	if err == nil || !strings.Contains(out, "terminationGracePeriodSecond") {
		t.Fatalf("a misspelled field was accepted: err=%v\n%s", err, out)
	}
}

// dig walks nested maps and lists of a rendered object: a string steps into
// a map, an int into a list. Missing steps give nil.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func deploymentOf(t *testing.T, dir string) map[string]any {
	t.Helper()
	_, objs := kustomize(t, dir)
	for _, o := range objs {
		if o.Kind == "Deployment" && o.name() == "bloodraven" {
			return o.raw
		}
	}
	t.Fatalf("%s renders no Deployment bloodraven", dir)
	return nil
}

// The operator Deployment runs non-root on a read-only root filesystem,
// with probes on the :8081 endpoints, resources, and a termination grace
// period that leaves room for --shutdown-grace-period.
func TestOperatorDeploymentIsHardened(t *testing.T) {
	d := deploymentOf(t, repo("deploy/base"))
	pod := dig(d, "spec", "template", "spec")
	c := dig(pod, "containers", 0)
	if dig(pod, "securityContext", "runAsNonRoot") != true || dig(c, "securityContext", "readOnlyRootFilesystem") != true ||
		dig(c, "securityContext", "allowPrivilegeEscalation") != false || dig(c, "securityContext", "capabilities", "drop", 0) != "ALL" {
		t.Errorf("security contexts: pod %v container %v", dig(pod, "securityContext"), dig(c, "securityContext"))
	}
	for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz", "startupProbe": "/healthz"} {
		if dig(c, probe, "httpGet", "path") != path || dig(c, probe, "httpGet", "port") != "probes" {
			t.Errorf("%s = %v, want GET %s on the probes port", probe, dig(c, probe), path)
		}
	}
	ports := map[string]float64{}
	for i := 0; dig(c, "ports", i) != nil; i++ {
		name, _ := dig(c, "ports", i, "name").(string)
		ports[name], _ = dig(c, "ports", i, "containerPort").(float64)
	}
	if ports["metrics"] != 8080 || ports["probes"] != 8081 || ports["auxiliary"] != 8082 {
		t.Errorf("container ports = %v, want metrics 8080, probes 8081, auxiliary 8082", ports)
	}
	for _, r := range []string{"requests/cpu", "requests/memory", "limits/memory"} {
		kind, res, _ := strings.Cut(r, "/")
		if dig(c, "resources", kind, res) == nil {
			t.Errorf("resources.%s.%s is not set", kind, res)
		}
	}
	grace, _ := dig(pod, "terminationGracePeriodSeconds").(float64)
	var shutdown time.Duration
	for i := 0; dig(c, "args", i) != nil; i++ {
		if v, ok := strings.CutPrefix(dig(c, "args", i).(string), "--shutdown-grace-period="); ok {
			shutdown, _ = time.ParseDuration(v)
		}
	}
	if shutdown <= 0 || time.Duration(grace)*time.Second <= shutdown {
		t.Errorf("terminationGracePeriodSeconds %v must exceed --shutdown-grace-period %s", grace, shutdown)
	}
}

// The TLS component mounts the Secret bloodraven-auxiliary-tls and serves
// it on 8443 (container and Service); the deploy-API component turns the API
// on only together with it.
func TestEscrowTLSAndDeployAPIComponents(t *testing.T) {
	_, objs := kustomize(t, repo("deploy/overlays/example"))
	var d, svc map[string]any
	for _, o := range objs {
		switch {
		case o.Kind == "Deployment" && o.name() == "bloodraven":
			d = o.raw
		case o.Kind == "Service" && o.name() == "bloodraven":
			svc = o.raw
		}
	}
	if d == nil || svc == nil {
		t.Fatal("the example overlay lacks the Deployment or the Service bloodraven")
	}
	pod := dig(d, "spec", "template", "spec")
	c := dig(pod, "containers", 0)
	env := map[string]string{}
	for i := 0; dig(c, "env", i) != nil; i++ {
		v, _ := dig(c, "env", i, "value").(string)
		env[dig(c, "env", i, "name").(string)] = v
	}
	if env["BLOODRAVEN_ESCROW_TLS_ADDR"] != ":8443" || env["BLOODRAVEN_DEPLOY_API_ENABLED"] != "true" || env["BLOODRAVEN_DEPLOY_API_AUDIENCE"] != "bloodraven-deploy" {
		t.Errorf("operator env = %v", env)
	}
	var mounted string
	for i := 0; dig(pod, "volumes", i) != nil; i++ {
		if s, ok := dig(pod, "volumes", i, "secret", "secretName").(string); ok {
			mounted = s
			if dir, _ := dig(c, "volumeMounts", 0, "mountPath").(string); !strings.HasPrefix(env["BLOODRAVEN_TLS_CERT_FILE"], dir+"/") {
				t.Errorf("cert file %s is not under the Secret's mount %s", env["BLOODRAVEN_TLS_CERT_FILE"], dir)
			}
		}
	}
	if mounted != "bloodraven-auxiliary-tls" {
		t.Errorf("mounted Secret = %q, want bloodraven-auxiliary-tls", mounted)
	}
	found := false
	for i := 0; dig(svc, "spec", "ports", i) != nil; i++ {
		if dig(svc, "spec", "ports", i, "port") == float64(8443) && dig(svc, "spec", "ports", i, "targetPort") == "https" {
			found = true
		}
	}
	if !found {
		t.Errorf("Service bloodraven ports = %v, want 8443 -> https", dig(svc, "spec", "ports"))
	}
}
