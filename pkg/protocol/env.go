package protocol

// Environment variables of the sidecar container. The operator's pod
// template (pkg/render) sets them and the sidecar (cmd/bloodraven-sidecar)
// reads them, so both compile against this one list. Like the rest of this
// package, names are only ever added.
const (
	EnvNamespace         = "BLOODRAVEN_NAMESPACE"
	EnvPodName           = "BLOODRAVEN_POD_NAME"
	EnvPodUID            = "BLOODRAVEN_POD_UID" // metadata.uid: sidecar.Config.PodUID
	EnvGroup             = "BLOODRAVEN_FAILOVER_GROUP"
	EnvSite              = "BLOODRAVEN_SITE"
	EnvListenAddr        = "BLOODRAVEN_LISTEN_ADDR"
	EnvOperatorEndpoint  = "BLOODRAVEN_OPERATOR_ENDPOINT"
	EnvLeaseTimeout      = "BLOODRAVEN_LEASE_TIMEOUT"
	EnvPeerCheckInterval = "BLOODRAVEN_PEER_CHECK_INTERVAL"
	EnvPeerSites         = "BLOODRAVEN_PEER_SITES"
	EnvMySQLUser         = "BLOODRAVEN_MYSQL_USER"
	EnvMySQLPassword     = "BLOODRAVEN_MYSQL_PASSWORD"
	// EnvMySQLAdminAddr is mysqld's administrative connection interface
	// (admin_address:admin_port), over which the sidecar fences.
	EnvMySQLAdminAddr = "BLOODRAVEN_MYSQL_ADMIN_ADDR"
	// EnvMySQLPIDFile is mysqld's pid-file, which the sidecar reads to stop
	// mysqld's process when a fence cannot take effect in time.
	EnvMySQLPIDFile = "BLOODRAVEN_MYSQL_PID_FILE"
	// EnvMySQLTLSDir is where spec.tls's Secret (ca.crt, tls.crt, tls.key)
	// is mounted: the sidecar verifies mysqld against its ca.crt and runs
	// ALTER INSTANCE RELOAD TLS when the files change (docs/tls.md).
	EnvMySQLTLSDir = "BLOODRAVEN_MYSQL_TLS_DIR"
	// EnvMySQLPasswordDir is where the sidecars' password Secret is
	// mounted: the sidecar re-reads its password file for every new
	// connection, so a password rotation reaches it without a restart
	// (docs/credentials.md); BLOODRAVEN_MYSQL_PASSWORD until it exists.
	EnvMySQLPasswordDir = "BLOODRAVEN_MYSQL_PASSWORD_DIR"

	// Set by hand or by the development tooling, never by the pod template.
	EnvMySQLAddr         = "BLOODRAVEN_MYSQL_ADDR"
	EnvMySQLUserFile     = "BLOODRAVEN_MYSQL_USER_FILE"
	EnvMySQLPasswordFile = "BLOODRAVEN_MYSQL_PASSWORD_FILE"
	EnvLogLevel          = "BLOODRAVEN_LOG_LEVEL"
)
