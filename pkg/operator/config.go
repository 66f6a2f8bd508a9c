// Package operator wires the Bloodraven operator process: configuration,
// leader election, informers, the controllers' lifecycle and the listeners.
package operator

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/shipstream/bloodraven/pkg/devsitemap"
	"github.com/shipstream/bloodraven/pkg/logging"
)

// Config is the operator's whole configuration. Every field has a flag and an
// environment variable; a flag given on the command line wins over the
// variable, and the variable over the default.
type Config struct {
	Kubeconfig string
	// Namespaces to watch; empty watches all namespaces.
	Namespaces []string

	LeaderElection LeaderElectionConfig

	MetricsAddr   string
	ProbeAddr     string
	AuxiliaryAddr string
	// EscrowTLSAddr is the TLS listener (keyring escrow and, when enabled, the
	// deploy API). It runs only when TLSCertFile and TLSKeyFile are set.
	EscrowTLSAddr string
	TLSCertFile   string
	TLSKeyFile    string

	DeployAPIEnabled  bool
	DeployAPIAudience string

	SidecarImage string
	// BackupUploadImage is the Bloodraven image (this operator's own) that
	// backup Jobs run for their upload step (bloodraven encrypt-upload).
	// Empty leaves MysqlBackups unacted on: the backup controller is not
	// started.
	BackupUploadImage string
	// AutomaticFailover lets the topology manager replace an unreachable
	// active site on its own, behind the guards of docs/topology.md. Turning
	// it off leaves an unreachable primary reported but not replaced.
	AutomaticFailover bool
	// SidecarOperatorEndpoint is host:port of this operator's auxiliary
	// listener as sidecars reach it, rendered into every sidecar whose group
	// does not set spec.sidecar.operatorEndpoint. In a pod it defaults to
	// the auxiliary Service of deploy/base in the pod's namespace.
	SidecarOperatorEndpoint string
	// DevSiteAddresses is the path of the development site-address map
	// (pkg/devsitemap); empty in production.
	DevSiteAddresses string

	LogLevel            string
	Workers             int
	TopologyWorkers     int
	ShutdownGracePeriod time.Duration
}

// TLSEnabled reports whether the TLS listener runs.
func (c Config) TLSEnabled() bool { return c.TLSCertFile != "" }

// LeaderElectionConfig configures the coordination.k8s.io/v1 Lease election.
type LeaderElectionConfig struct {
	Namespace     string
	Name          string
	Identity      string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// SafetyMargin is the time between the moment a leader that cannot renew
// gives up and the earliest moment another process may take the Lease.
// client-go's leader waits RetryPeriod after its last successful renewal
// before it tries again, and gives up RenewDeadline after that attempt
// started: it may act until last renewal + RetryPeriod + RenewDeadline.
// Another process takes the Lease LeaseDuration after it observed the last
// renewal, which is no earlier than the renewal was sent. So the margin is
// LeaseDuration − RenewDeadline − RetryPeriod (3 s with the defaults), and
// work a deposed leader started must end within it.
func (c LeaderElectionConfig) SafetyMargin() time.Duration {
	return c.LeaseDuration - c.RenewDeadline - c.RetryPeriod
}

// StatementTimeout is the deadline for one MySQL statement sent by a
// controller: strictly shorter than the safety margin (four fifths of it),
// so a statement sent just before leadership is lost has ended before a new
// leader can act.
func (c LeaderElectionConfig) StatementTimeout() time.Duration { return c.SafetyMargin() * 4 / 5 }

// minSafetyMargin keeps StatementTimeout long enough for a real statement.
const minSafetyMargin = time.Second

// flagSpec binds one flag to its environment variable.
type flagSpec struct {
	name, env, usage string
}

// ParseConfig reads flags from args and environment variables through getenv.
// It returns an error naming the flag (and its variable) for any invalid value.
func ParseConfig(args []string, getenv func(string) string, usageOut io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("bloodraven", flag.ContinueOnError)
	fs.SetOutput(usageOut)
	var envErrs []error
	str := func(p *string, s flagSpec, def string) {
		if v := getenv(s.env); v != "" {
			def = v
		}
		fs.StringVar(p, s.name, def, s.usage+" (env "+s.env+")")
	}
	dur := func(p *time.Duration, s flagSpec, def time.Duration) {
		if v := getenv(s.env); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				envErrs = append(envErrs, fmt.Errorf("--%s: %s=%q is not a duration (e.g. 15s)", s.name, s.env, v))
			} else {
				def = d
			}
		}
		fs.DurationVar(p, s.name, def, s.usage+" (env "+s.env+")")
	}
	boolean := func(p *bool, s flagSpec, def bool) {
		if v := getenv(s.env); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				envErrs = append(envErrs, fmt.Errorf("--%s: %s=%q is not true or false", s.name, s.env, v))
			} else {
				def = b
			}
		}
		fs.BoolVar(p, s.name, def, s.usage+" (env "+s.env+")")
	}
	integer := func(p *int, s flagSpec, def int) {
		if v := getenv(s.env); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				envErrs = append(envErrs, fmt.Errorf("--%s: %s=%q is not an integer", s.name, s.env, v))
			} else {
				def = n
			}
		}
		fs.IntVar(p, s.name, def, s.usage+" (env "+s.env+")")
	}

	var namespaces string
	str(&c.Kubeconfig, flagSpec{"kubeconfig", "KUBECONFIG", "path of a kubeconfig (or a colon-separated list, as kubectl reads KUBECONFIG); empty uses the in-cluster ServiceAccount"}, "")
	str(&namespaces, flagSpec{"namespaces", "BLOODRAVEN_NAMESPACES", "comma-separated namespaces to watch; empty watches all"}, "")
	str(&c.LeaderElection.Namespace, flagSpec{"leader-elect-namespace", "BLOODRAVEN_LEADER_ELECT_NAMESPACE", "namespace of the leader-election Lease; defaults to the pod's namespace"}, defaultNamespace(getenv))
	str(&c.LeaderElection.Name, flagSpec{"leader-elect-name", "BLOODRAVEN_LEADER_ELECT_NAME", "name of the leader-election Lease"}, "bloodraven-leader")
	str(&c.LeaderElection.Identity, flagSpec{"leader-elect-identity", "BLOODRAVEN_LEADER_ELECT_IDENTITY", "holder identity in the Lease; defaults to the pod name plus a random suffix"}, "")
	dur(&c.LeaderElection.LeaseDuration, flagSpec{"leader-elect-lease-duration", "BLOODRAVEN_LEADER_ELECT_LEASE_DURATION", "how long a Lease is valid without renewal; followers wait this long before taking over"}, 15*time.Second)
	dur(&c.LeaderElection.RenewDeadline, flagSpec{"leader-elect-renew-deadline", "BLOODRAVEN_LEADER_ELECT_RENEW_DEADLINE", "how long the leader keeps retrying to renew before it gives up and exits"}, 10*time.Second)
	dur(&c.LeaderElection.RetryPeriod, flagSpec{"leader-elect-retry-period", "BLOODRAVEN_LEADER_ELECT_RETRY_PERIOD", "interval between acquire and renew attempts"}, 2*time.Second)
	str(&c.MetricsAddr, flagSpec{"metrics-addr", "BLOODRAVEN_METRICS_ADDR", "listen address of /metrics"}, ":8080")
	str(&c.ProbeAddr, flagSpec{"probe-addr", "BLOODRAVEN_PROBE_ADDR", "listen address of /healthz and /readyz"}, ":8081")
	str(&c.AuxiliaryAddr, flagSpec{"auxiliary-addr", "BLOODRAVEN_AUXILIARY_ADDR", "listen address of the plain-HTTP auxiliary endpoints the sidecars use"}, ":8082")
	str(&c.EscrowTLSAddr, flagSpec{"escrow-tls-addr", "BLOODRAVEN_ESCROW_TLS_ADDR", "listen address of the TLS listener (keyring escrow, deploy API)"}, ":8443")
	str(&c.TLSCertFile, flagSpec{"tls-cert-file", "BLOODRAVEN_TLS_CERT_FILE", "certificate (PEM) of the TLS listener; reloaded when it changes. Empty disables the TLS listener"}, "")
	str(&c.TLSKeyFile, flagSpec{"tls-key-file", "BLOODRAVEN_TLS_KEY_FILE", "private key (PEM) of the TLS listener"}, "")
	boolean(&c.DeployAPIEnabled, flagSpec{"deploy-api-enabled", "BLOODRAVEN_DEPLOY_API_ENABLED", "serve /deploy/v1 on the TLS listener"}, false)
	str(&c.DeployAPIAudience, flagSpec{"deploy-api-audience", "BLOODRAVEN_DEPLOY_API_AUDIENCE", "audience deploy API callers' ServiceAccount tokens must carry"}, "bloodraven-deploy")
	str(&c.SidecarImage, flagSpec{"sidecar-image", "BLOODRAVEN_SIDECAR_IMAGE", "image of the sidecar container added to every mysqld pod"}, "")
	str(&c.BackupUploadImage, flagSpec{"backup-upload-image", "BLOODRAVEN_BACKUP_UPLOAD_IMAGE", "the Bloodraven image backup Jobs run for their upload step (encrypt-upload); empty: MysqlBackups are not acted on"}, "")
	boolean(&c.AutomaticFailover, flagSpec{"automatic-failover", "BLOODRAVEN_AUTOMATIC_FAILOVER", "replace an unreachable active site automatically (guards in docs/topology.md)"}, true)
	str(&c.SidecarOperatorEndpoint, flagSpec{"default-operator-endpoint", "BLOODRAVEN_DEFAULT_OPERATOR_ENDPOINT", "host:port at which sidecars reach this operator's auxiliary listener, for groups that do not set spec.sidecar.operatorEndpoint"}, defaultSidecarOperatorEndpoint(getenv))
	str(&c.DevSiteAddresses, flagSpec{"dev-site-addresses", devsitemap.EnvVar, "DEVELOPMENT ONLY: path of a site-address map that replaces in-cluster site addressing"}, "")
	str(&c.LogLevel, flagSpec{"log-level", "BLOODRAVEN_LOG_LEVEL", "debug, info, warn or error"}, "info")
	integer(&c.Workers, flagSpec{"workers", "BLOODRAVEN_WORKERS", "workers of each Kubernetes-object queue (group-objects, deploy-lease, database, backup)"}, 2)
	integer(&c.TopologyWorkers, flagSpec{"topology-workers", "BLOODRAVEN_TOPOLOGY_WORKERS", "groups whose MySQL poll rounds run at the same time (the topology queue's workers)"}, DefaultTopologyWorkers)
	dur(&c.ShutdownGracePeriod, flagSpec{"shutdown-grace-period", "BLOODRAVEN_SHUTDOWN_GRACE_PERIOD", "how long shutdown may take after SIGTERM; keep it below the pod's terminationGracePeriodSeconds"}, 20*time.Second)

	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected argument %q: every setting is a --flag", fs.Arg(0))
	}
	if err := errors.Join(envErrs...); err != nil {
		return Config{}, err
	}
	c.Namespaces = splitList(namespaces)
	if c.LeaderElection.Identity == "" {
		c.LeaderElection.Identity = defaultIdentity(getenv)
	}
	return c, c.Validate()
}

// Validate checks every field and names the flag of each invalid one.
func (c Config) Validate() error {
	var errs []error
	for _, ns := range c.Namespaces {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--namespaces: %q is not a namespace name: %s", ns, strings.Join(msgs, "; ")))
		}
	}
	errs = append(errs, c.LeaderElection.validate()...)
	errs = append(errs, validateListeners(c)...)
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		errs = append(errs, errors.New("--tls-cert-file and --tls-key-file must be set together"))
	}
	if c.DeployAPIEnabled && !c.TLSEnabled() {
		errs = append(errs, errors.New("--deploy-api-enabled requires the TLS listener: set --tls-cert-file and --tls-key-file (the deploy API is never served in plain text)"))
	}
	if c.DeployAPIEnabled && c.DeployAPIAudience == "" {
		errs = append(errs, errors.New("--deploy-api-audience must not be empty"))
	}
	if strings.TrimSpace(c.SidecarImage) == "" {
		errs = append(errs, errors.New("--sidecar-image (BLOODRAVEN_SIDECAR_IMAGE) is required: the image of the sidecar container in every mysqld pod"))
	} else if strings.ContainsAny(c.SidecarImage, " \t\n") {
		errs = append(errs, fmt.Errorf("--sidecar-image: %q contains whitespace", c.SidecarImage))
	}
	if strings.ContainsAny(c.BackupUploadImage, " \t\n") {
		errs = append(errs, fmt.Errorf("--backup-upload-image: %q contains whitespace", c.BackupUploadImage))
	}
	if c.SidecarOperatorEndpoint != "" {
		if _, _, err := net.SplitHostPort(c.SidecarOperatorEndpoint); err != nil {
			errs = append(errs, fmt.Errorf("--default-operator-endpoint: %q is not host:port: %v", c.SidecarOperatorEndpoint, err))
		}
	}
	if _, err := logging.ParseLevel(c.LogLevel); err != nil {
		errs = append(errs, fmt.Errorf("--log-level: %w", err))
	}
	if c.Workers < 1 || c.Workers > 64 {
		errs = append(errs, fmt.Errorf("--workers: %d is outside 1..64", c.Workers))
	}
	if c.TopologyWorkers < 1 || c.TopologyWorkers > 1024 {
		errs = append(errs, fmt.Errorf("--topology-workers: %d is outside 1..1024", c.TopologyWorkers))
	}
	if c.ShutdownGracePeriod < time.Second {
		errs = append(errs, fmt.Errorf("--shutdown-grace-period: %s is shorter than 1s", c.ShutdownGracePeriod))
	}
	return errors.Join(errs...)
}

func (l LeaderElectionConfig) validate() []error {
	var errs []error
	if l.Namespace == "" {
		errs = append(errs, errors.New("--leader-elect-namespace is required outside a pod (POD_NAMESPACE is not set)"))
	} else if msgs := validation.IsDNS1123Label(l.Namespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--leader-elect-namespace: %q: %s", l.Namespace, strings.Join(msgs, "; ")))
	}
	if msgs := validation.IsDNS1123Subdomain(l.Name); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--leader-elect-name: %q: %s", l.Name, strings.Join(msgs, "; ")))
	}
	if l.RetryPeriod <= 0 {
		errs = append(errs, fmt.Errorf("--leader-elect-retry-period: %s must be positive", l.RetryPeriod))
	}
	if l.RenewDeadline <= l.RetryPeriod*6/5 {
		// client-go's own rule: renewals are retried with 1.2 jitter.
		errs = append(errs, fmt.Errorf("--leader-elect-renew-deadline (%s) must be longer than 1.2 x --leader-elect-retry-period (%s)", l.RenewDeadline, l.RetryPeriod))
	}
	if l.LeaseDuration <= l.RenewDeadline {
		errs = append(errs, fmt.Errorf("--leader-elect-lease-duration (%s) must be longer than --leader-elect-renew-deadline (%s)", l.LeaseDuration, l.RenewDeadline))
	} else if l.SafetyMargin() < minSafetyMargin {
		errs = append(errs, fmt.Errorf("--leader-elect-lease-duration (%s) minus --leader-elect-renew-deadline (%s) minus --leader-elect-retry-period (%s) is %s, must be at least %s: a leader may act until its last renewal plus the renew deadline plus one retry period, and the margin bounds every MySQL statement's deadline",
			l.LeaseDuration, l.RenewDeadline, l.RetryPeriod, l.SafetyMargin(), minSafetyMargin))
	}
	return errs
}

func validateListeners(c Config) []error {
	type listener struct{ flag, addr string }
	ls := []listener{{"--metrics-addr", c.MetricsAddr}, {"--probe-addr", c.ProbeAddr}, {"--auxiliary-addr", c.AuxiliaryAddr}}
	if c.TLSEnabled() {
		ls = append(ls, listener{"--escrow-tls-addr", c.EscrowTLSAddr})
	}
	var errs []error
	byPort := map[string]string{}
	for _, l := range ls {
		_, port, err := net.SplitHostPort(l.addr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %q is not host:port: %v", l.flag, l.addr, err))
			continue
		}
		if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
			errs = append(errs, fmt.Errorf("%s: %q: port must be a number from 0 to 65535", l.flag, l.addr))
			continue
		}
		if port != "0" {
			if other, dup := byPort[port]; dup {
				errs = append(errs, fmt.Errorf("%s and %s both use port %s", other, l.flag, port))
			}
			byPort[port] = l.flag
		}
	}
	return errs
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// DefaultTopologyWorkers: a poll round holds a topology worker for at most
// its group's poll deadline, so this many groups can each have a hung site
// before a healthy group's round waits for a free worker. Idle workers cost
// a parked goroutine each.
const DefaultTopologyWorkers = 32

// defaultSidecarOperatorEndpoint is the auxiliary Service of deploy/base
// (named bloodraven, port 8082) in the operator pod's namespace, or empty
// outside a pod.
func defaultSidecarOperatorEndpoint(getenv func(string) string) string {
	ns := defaultNamespace(getenv)
	if ns == "" {
		return ""
	}
	return "bloodraven." + ns + ".svc:8082"
}

// defaultNamespace is the pod's namespace (downward API, else the
// ServiceAccount mount), or empty outside a pod.
func defaultNamespace(getenv func(string) string) string {
	if ns := getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile(inClusterNamespaceFile); err == nil {
		return strings.TrimSpace(string(b))
	}
	return ""
}

func defaultIdentity(getenv func(string) string) string {
	name := getenv("POD_NAME")
	if name == "" {
		name, _ = os.Hostname()
	}
	return name + "_" + randomSuffix()
}
