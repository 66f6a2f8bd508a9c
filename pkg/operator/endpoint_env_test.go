package operator

import (
	"strings"
	"testing"
)

// Seed 003 (v1.7.0): the operator's variable for where sidecars reach it is
// BLOODRAVEN_DEFAULT_OPERATOR_ENDPOINT. Nothing older is read: there is no
// release before v1.7.0 here to stay compatible with.
func TestDefaultOperatorEndpointVariable(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		vars map[string]string
		want string
	}{
		{"default: the auxiliary Service in the pod's namespace", nil, nil, "bloodraven.bloodraven.svc:8082"},
		{"the variable", nil, map[string]string{"BLOODRAVEN_DEFAULT_OPERATOR_ENDPOINT": "aux.ops.svc:9000"}, "aux.ops.svc:9000"},
		{"the flag beats the variable", []string{"--default-operator-endpoint=flag.svc:1"}, map[string]string{"BLOODRAVEN_DEFAULT_OPERATOR_ENDPOINT": "aux.ops.svc:9000"}, "flag.svc:1"},
		{"an older name is not read", nil, map[string]string{"BLOODRAVEN_SIDECAR_OPERATOR_ENDPOINT": "old.svc:1", "BLOODRAVEN_DEFAULT_AUXILIARY_ADDRESS": "older.svc:1"}, "bloodraven.bloodraven.svc:8082"},
	} {
		cfg, err := parse(t, c.args, c.vars)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if cfg.SidecarOperatorEndpoint != c.want {
			t.Errorf("%s: endpoint %q, want %q", c.name, cfg.SidecarOperatorEndpoint, c.want)
		}
	}
	_, err := parse(t, nil, map[string]string{"BLOODRAVEN_DEFAULT_OPERATOR_ENDPOINT": "no-port"})
	if err == nil || !strings.Contains(err.Error(), "--default-operator-endpoint") {
		t.Errorf("a value without a port: err = %v, want one naming the flag", err)
	}
}
