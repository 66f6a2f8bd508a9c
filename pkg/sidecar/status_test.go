package sidecar

import (
	"strings"
	"testing"

	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/protocol"
)

func TestRoleAndReplicationState(t *testing.T) {
	writable := mysql.Observation{}
	readOnly := mysql.Observation{ReadOnly: true}
	superRO := mysql.Observation{ReadOnly: true, SuperReadOnly: true}
	running := &mysql.ReplicaStatus{ReplicaIORunning: "Yes", ReplicaSQLRunning: "Yes"}
	connecting := &mysql.ReplicaStatus{ReplicaIORunning: "Connecting", ReplicaSQLRunning: "Yes"}
	ioError := &mysql.ReplicaStatus{ReplicaIORunning: "No", ReplicaSQLRunning: "Yes", LastIOErrno: 2003}
	sqlError := &mysql.ReplicaStatus{ReplicaIORunning: "Yes", ReplicaSQLRunning: "No", LastSQLErrno: 1062}
	stopped := &mysql.ReplicaStatus{ReplicaIORunning: "No", ReplicaSQLRunning: "No"}
	cases := []struct {
		name      string
		o         mysql.Observation
		repl      *mysql.ReplicaStatus
		role      string
		replState string
	}{
		{"primary", writable, nil, protocol.RoleSource, protocol.ReplicationNotReplicating},
		{"replica", superRO, running, protocol.RoleReplica, protocol.ReplicationRunning},
		{"read_only replica", readOnly, running, protocol.RoleReplica, protocol.ReplicationRunning},
		{"fenced old primary", superRO, nil, protocol.RoleReadOnly, protocol.ReplicationNotReplicating},
		{"writable and replicating", writable, running, protocol.RoleInconsistent, protocol.ReplicationRunning},
		{"writable and connecting", writable, connecting, protocol.RoleInconsistent, protocol.ReplicationConnecting},
		{"writable with a stopped channel", writable, stopped, protocol.RoleSource, protocol.ReplicationStopped},
		{"receiver error", superRO, ioError, protocol.RoleReplica, protocol.ReplicationError},
		{"applier error", superRO, sqlError, protocol.RoleReplica, protocol.ReplicationError},
	}
	for _, c := range cases {
		if got := Role(c.o, c.repl); got != c.role {
			t.Errorf("%s: Role = %s, want %s", c.name, got, c.role)
		}
		if got := ReplicationState(c.repl); got != c.replState {
			t.Errorf("%s: ReplicationState = %s, want %s", c.name, got, c.replState)
		}
	}
}

func TestReadiness(t *testing.T) {
	cases := []struct {
		name        string
		ok          bool
		role        string
		unconfirmed bool
		ready       bool
		reason      string
	}{
		{"unreachable", false, "", false, false, "unreachable"},
		{"inconsistent", true, protocol.RoleInconsistent, false, false, "writable while replicating"},
		{"writable and unconfirmed", true, protocol.RoleSource, true, false, "fencing"},
		{"writable and confirmed", true, protocol.RoleSource, false, true, ""},
		{"fenced and unconfirmed", true, protocol.RoleReadOnly, true, true, ""},
		{"replica", true, protocol.RoleReplica, true, true, ""},
	}
	for _, c := range cases {
		h := Readiness(c.ok, "connection refused", c.role, c.unconfirmed)
		if h.Ready != c.ready || !strings.Contains(h.Reason, c.reason) {
			t.Errorf("%s: %+v, want ready=%v reason containing %q", c.name, h, c.ready, c.reason)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	good := Config{Namespace: "shop", Group: "orders", Site: "iad", MySQL: mysql.Options{Addr: "127.0.0.1:3306", User: "u"},
		OperatorEndpoint: "op:8082", LeaseTimeout: 15e9, PeerCheckInterval: 2e9, Peers: []Peer{{Site: "dfw", Addr: "dfw:8089"}}}
	if err := good.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	cases := []struct {
		mut  func(*Config)
		want string
	}{
		{func(c *Config) { c.Group = "" }, "group is required"},
		{func(c *Config) { c.OperatorEndpoint = "op" }, "operator endpoint"},
		{func(c *Config) { c.OperatorEndpoint = "op:0" }, "port must be a number from 1 to 65535"},
		{func(c *Config) { c.LeaseTimeout = 1e9 }, "lease timeout 1s must be between 2s and 5m"},
		{func(c *Config) { c.PeerCheckInterval = 100e6 }, "peer check interval 100ms must be between 500ms and 1m"},
		{func(c *Config) { c.PeerCheckInterval = 15e9 }, "must be shorter than the lease timeout"},
		{func(c *Config) { c.Peers = append(c.Peers, Peer{Site: "dfw", Addr: "x:1"}) }, `peer "dfw": listed twice`},
		{func(c *Config) { c.Peers = []Peer{{Site: "sjc", Addr: "sjc"}} }, `peer "sjc" address`},
		{func(c *Config) { c.MySQL.User = "" }, "mysql user is required"},
		{func(c *Config) { c.WedgedAfter = -1 }, "wedged-after"},
	}
	for _, c := range cases {
		cfg := good
		cfg.Peers = append([]Peer(nil), good.Peers...)
		c.mut(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err = %v, want it to contain %q", err, c.want)
		}
	}
}
