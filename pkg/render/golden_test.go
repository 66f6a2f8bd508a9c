package render

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// go test ./pkg/render -update rewrites the golden files; review the diff.
var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const testSidecarImage = "ghcr.io/shipstream/bloodraven-sidecar:1.7.0"
const testOperatorEndpoint = "bloodraven.bloodraven.svc:8082"

// loadGroup reads a MysqlFailoverGroup manifest and gives it the identity
// the API server would (namespace, UID).
func loadGroup(t testing.TB, path string) *v1alpha1.MysqlFailoverGroup {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g v1alpha1.MysqlFailoverGroup
	if err := yaml.UnmarshalStrict(b, &g); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if g.Namespace == "" {
		g.Namespace = "shop"
	}
	if g.UID == "" {
		g.UID = types.UID("6b1c2f1e-0000-4000-8000-000000000001")
	}
	return &g
}

// renderAll renders every object of g, in a fixed order, as one YAML stream.
func renderAll(t *testing.T, g *v1alpha1.MysqlFailoverGroup) []byte {
	t.Helper()
	var objs []runtime.Object
	for i := range g.Spec.Sites {
		s, err := RenderSite(g, i, Config{SidecarImage: testSidecarImage, OperatorEndpoint: testOperatorEndpoint})
		if err != nil {
			t.Fatalf("site %s: %v", g.Spec.Sites[i].Name, err)
		}
		objs = append(objs, s.ConfigMap, s.StatefulSet)
	}
	svcs, err := Services(g)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range svcs {
		objs = append(objs, NewService(s))
	}
	if d := DNSEndpoint(g); d != nil {
		objs = append(objs, d)
	}
	var buf bytes.Buffer
	for _, o := range objs {
		b, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString("---\n")
		buf.Write(b)
	}
	return buf.Bytes()
}

func TestGolden(t *testing.T) {
	cases := map[string]string{
		// The shipped sample, as a user applies it (no active site yet).
		"sample": filepath.Join("..", "..", "deploy", "samples", "mysqlfailovergroup.yaml"),
	}
	inputs, _ := filepath.Glob(filepath.Join("testdata", "*.input.yaml"))
	for _, in := range inputs {
		cases[strings.TrimSuffix(filepath.Base(in), ".input.yaml")] = in
	}
	if len(cases) < 3 {
		t.Fatalf("expected the sample and at least two testdata inputs, found %d cases", len(cases))
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			got := renderAll(t, loadGroup(t, in))
			golden := filepath.Join("testdata", name+".golden.yaml")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./pkg/render -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("rendering of %s differs from %s; review with -update and git diff:\n%s", in, golden, firstDiff(string(want), string(got)))
			}
		})
	}
}

// firstDiff shows the first differing line with a little context.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + itoa(i+1) + ":\n  want: " + wl + "\n  got:  " + gl
		}
	}
	return "(no line differs; trailing bytes)"
}

func itoa(i int) string { return strconv.Itoa(i) }
