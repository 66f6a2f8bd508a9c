package jobkubelet

import (
	"slices"
	"testing"
)

func TestExpandAsKubernetesDoes(t *testing.T) {
	vars := map[string]string{"ATTEMPT": "1", "NAME": "b-1"}
	for in, want := range map[string]string{
		"--attempt=$(ATTEMPT)": "--attempt=1",
		"$(NAME)/$(ATTEMPT)":   "b-1/1",
		"$(UNSET)":             "$(UNSET)", // left as written
		"$$(ATTEMPT)":          "$(ATTEMPT)",
		"cost $$5":             "cost $5",
		"$(ATTEMPT":            "$(ATTEMPT",
		"tail $":               "tail $",
		"$ATTEMPT":             "$ATTEMPT", // shell syntax is not Kubernetes'
	} {
		if got := Expand(in, vars); got != want {
			t.Errorf("Expand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRewritePathsWholeElementsOnly(t *testing.T) {
	m := map[string]string{"/staging": "/h/st", "/secrets/mysql": "/h/my", "/secrets": "/h/s", "/tmp": "/h/tmp"}
	for in, want := range map[string]string{
		"/staging/dump":               "/h/st/dump",
		"--staging-dir=/staging/dump": "--staging-dir=/h/st/dump",
		`exec x "$(cat /secrets/mysql/u)" <  /secrets/mysql/p`: `exec x "$(cat /h/my/u)" <  /h/my/p`,
		"/secrets/tls/ca.crt": "/h/s/tls/ca.crt",
		"/stagingarea":        "/stagingarea", // another path
		"/var/tmp/x":          "/var/tmp/x",   // not the mount
		"/tmp":                "/h/tmp",
	} {
		if got := rewritePaths(in, m); got != want {
			t.Errorf("rewritePaths(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNetworkMapsHostAndPort(t *testing.T) {
	k := New(Config{Network: func(h string, p int) (string, int, bool) {
		return "127.0.0.1", 40000 + p, h == "svc.ns.svc"
	}})
	got := k.network([]string{"sh", "--host=svc.ns.svc", "--port=3306", "--", "util"})
	if want := []string{"sh", "--host=127.0.0.1", "--port=43306", "--", "util"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	got = k.network([]string{"sh", "--host=svc.ns.svc"})
	if want := []string{"sh", "--host=127.0.0.1", "--port=43306"}; !slices.Equal(got, want) {
		t.Errorf("default port: got %q, want %q", got, want)
	}
	in := []string{"sh", "--host=elsewhere", "--port=1"}
	if got := k.network(in); !slices.Equal(got, in) {
		t.Errorf("an unmapped host changed: %q", got)
	}
}

func TestImageName(t *testing.T) {
	for in, want := range map[string]string{
		"ghcr.io/shipstream/bloodraven:v1.7.0": "ghcr.io/shipstream/bloodraven",
		"localhost:5000/x/y":                   "localhost:5000/x/y",
		"mysql/mysql-server@sha256:abc":        "mysql/mysql-server",
		"localhost:5000/x/y:1@sha256:0":        "localhost:5000/x/y",
	} {
		if got := imageName(in); got != want {
			t.Errorf("imageName(%q) = %q, want %q", in, got, want)
		}
	}
}
