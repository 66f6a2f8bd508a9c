package mysqlsim

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
)

// startupOptions is what one start of the server takes from its option
// file and Config.Options beyond the Config fields they fill: the values
// applied to the running server at boot (bootLocked) and every accepted
// option by name, for the parts that read one (startupOption).
type startupOptions struct {
	values                 map[string]string // every accepted option, '-' spelling, last one wins
	pluginLoad             []string          // plugin-load / plugin-load-add values, in order
	requireSecureTransport bool
	sslCA, sslCert, sslKey string // as written (container paths)
	maxBinlogSize          *int64
	binlogExpire           *int64
	maxConnections         *int64
	// pluginOptions are options of loadable plugins (clone-*), valid only
	// when the plugin is loaded; checked once plugins are known.
	pluginOptions []pluginOption
	warnings      []string
}

// optKind is how an option's value is read.
type optKind int

const (
	optAccepted optKind = iota // known to MySQL 9.7, not modelled: accepted and logged
	optBool
	optInt
	optString
)

type optDef struct {
	kind     optKind
	min, max int64
	// apply stores a modelled option; nil for optAccepted.
	apply func(b *optionBuild, v optValue) error
}

// optValue is a parsed value: b for optBool, n for optInt, s for the rest.
type optValue struct {
	b bool
	n int64
	s string
}

// optionBuild collects the options of one start.
type optionBuild struct {
	cfg  Config // the options' view of the fields Config also has
	set  map[string]bool
	opts startupOptions
}

func (b *optionBuild) mark(field string) { b.set[field] = true }

// modelledOptions are the options whose values the simulator honours.
var modelledOptions = map[string]optDef{
	"server-id": {kind: optInt, min: 0, max: 1<<32 - 1, apply: func(b *optionBuild, v optValue) error {
		b.cfg.ServerID = uint32(v.n)
		b.mark("ServerID")
		return nil
	}},
	"read-only": {kind: optBool, apply: func(b *optionBuild, v optValue) error {
		b.cfg.ReadOnly = v.b
		b.mark("ReadOnly")
		return nil
	}},
	"super-read-only": {kind: optBool, apply: func(b *optionBuild, v optValue) error {
		b.cfg.SuperReadOnly = v.b
		b.mark("SuperReadOnly")
		return nil
	}},
	"skip-replica-start": {kind: optBool, apply: func(b *optionBuild, v optValue) error {
		b.cfg.SkipReplicaStart = v.b
		b.mark("SkipReplicaStart")
		return nil
	}},
	"sync-binlog": {kind: optInt, min: 0, max: 1<<32 - 1, apply: func(b *optionBuild, v optValue) error {
		n := int(v.n)
		b.cfg.SyncBinlog = &n
		return nil
	}},
	"innodb-flush-log-at-trx-commit": {kind: optInt, min: 0, max: 2, apply: func(b *optionBuild, v optValue) error {
		n := int(v.n)
		b.cfg.InnoDBFlushLogAtTrxCommit = &n
		return nil
	}},
	"pid-file": {kind: optString, apply: func(b *optionBuild, v optValue) error {
		b.cfg.PIDFile = v.s
		return nil
	}},
	"datadir": {kind: optString, apply: func(b *optionBuild, v optValue) error {
		b.cfg.DataDir = v.s
		return nil
	}},
	"port": {kind: optInt, min: 0, max: 65535, apply: func(b *optionBuild, v optValue) error {
		b.cfg.Addr = net.JoinHostPort("127.0.0.1", strconv.FormatInt(v.n, 10))
		return nil
	}},
	"admin-address": {kind: optString, apply: func(b *optionBuild, v optValue) error {
		b.opts.values["admin-address"] = v.s
		return nil
	}},
	"admin-port":               {kind: optInt, min: 0, max: 65535},
	"gtid-mode":                {kind: optString, apply: onlyValue("gtid_mode", "ON")},
	"enforce-gtid-consistency": {kind: optString, apply: onlyValue("enforce_gtid_consistency", "ON", "TRUE", "1")},
	"log-replica-updates": {kind: optBool, apply: func(b *optionBuild, v optValue) error {
		if !v.b {
			return errNotModelled("log_replica_updates=OFF (a replica here always logs what it applies)")
		}
		return nil
	}},
	"log-bin": {kind: optString, apply: func(b *optionBuild, v optValue) error {
		if v.s == logBinOff {
			return errNotModelled("skip-log-bin / disable-log-bin (the simulator always writes a binary log)")
		}
		if v.s != "" && v.s != "binlog" {
			b.opts.warnings = append(b.opts.warnings, "log-bin="+v.s+": the files keep the name binlog.NNNNNN")
		}
		return nil
	}},
	"binlog-format": {kind: optString, apply: onlyValue("binlog_format", "ROW")},
	"plugin-load": {kind: optString, apply: func(b *optionBuild, v optValue) error {
		b.opts.pluginLoad = []string{v.s} // --plugin-load resets the list
		return nil
	}},
	"plugin-load-add": {kind: optString, apply: func(b *optionBuild, v optValue) error {
		b.opts.pluginLoad = append(b.opts.pluginLoad, v.s)
		return nil
	}},
	"require-secure-transport": {kind: optBool, apply: func(b *optionBuild, v optValue) error {
		b.opts.requireSecureTransport = v.b
		return nil
	}},
	"ssl-ca":   {kind: optString, apply: func(b *optionBuild, v optValue) error { b.opts.sslCA = v.s; return nil }},
	"ssl-cert": {kind: optString, apply: func(b *optionBuild, v optValue) error { b.opts.sslCert = v.s; return nil }},
	"ssl-key":  {kind: optString, apply: func(b *optionBuild, v optValue) error { b.opts.sslKey = v.s; return nil }},
	"max-binlog-size": {kind: optInt, min: minMaxBinlogSize, max: defaultMaxBinlogSize, apply: func(b *optionBuild, v optValue) error {
		n := v.n / 4096 * 4096
		b.opts.maxBinlogSize = &n
		return nil
	}},
	"binlog-expire-logs-seconds": {kind: optInt, min: 0, max: 1<<32 - 1, apply: func(b *optionBuild, v optValue) error {
		b.opts.binlogExpire = &v.n
		return nil
	}},
	"max-connections": {kind: optInt, min: 1, max: 100000, apply: func(b *optionBuild, v optValue) error {
		b.opts.maxConnections = &v.n
		return nil
	}},
	"replica-net-timeout": {kind: optInt, min: 1, max: 31536000, apply: func(b *optionBuild, v optValue) error {
		b.cfg.ReplicaNetTimeout = int(v.n)
		return nil
	}},
	// Manual, "Persisted System Variables": with persisted_globals_load=OFF
	// the server ignores mysqld-auto.cnf at startup (SET PERSIST still
	// writes it).
	"persisted-globals-load": {kind: optBool, apply: func(b *optionBuild, v optValue) error {
		b.opts.values["persisted-globals-load"] = strconv.FormatBool(v.b)
		return nil
	}},
	"partial-revokes": {kind: optBool, apply: partialRevokesOption}, // partialrevokes.go
	"relay-log-recovery": {kind: optBool, apply: func(b *optionBuild, v optValue) error {
		b.cfg.RelayLogRecovery = v.b
		return nil
	}},
}

// optionAliases are MySQL 9.7's other spellings of modelled options.
var optionAliases = map[string]string{
	"skip-slave-start":  "skip-replica-start",
	"log-slave-updates": "log-replica-updates",
	"slave-net-timeout": "replica-net-timeout",
}

// acceptedOptions are MySQL 9.7 server options the simulator does not
// model: accepted (their values are not checked) and logged as not
// modelled. The list covers everything pkg/render writes plus the options
// commonly found in my.cnf files; an option missing here that MySQL 9.7
// has is a gap of this list, to be added.
var acceptedOptions = strings.Fields(`
	replica-preserve-commit-order create-admin-listener-thread log-bin-trust-function-creators
	relay-log relay-log-index relay-log-purge relay-log-space-limit log-bin-index
	replica-parallel-workers replica-parallel-type replica-pending-jobs-size-max replica-skip-errors
	replica-exec-mode replica-sql-verify-checksum replica-compressed-protocol replica-type-conversions
	sync-relay-log sync-relay-log-info sync-source-info source-verify-checksum
	binlog-row-image binlog-checksum binlog-row-metadata binlog-cache-size max-binlog-cache-size
	binlog-transaction-compression binlog-order-commits binlog-rows-query-log-events binlog-do-db binlog-ignore-db
	binlog-gtid-simple-recovery binlog-expire-logs-auto-purge gtid-executed-compression-period
	replicate-do-db replicate-ignore-db replicate-do-table replicate-ignore-table replicate-wild-do-table
	replicate-wild-ignore-table replicate-same-server-id report-host report-port
	innodb-buffer-pool-size innodb-buffer-pool-instances innodb-buffer-pool-chunk-size innodb-log-buffer-size
	innodb-redo-log-capacity innodb-log-file-size innodb-log-files-in-group innodb-file-per-table
	innodb-flush-method innodb-io-capacity innodb-io-capacity-max innodb-read-io-threads innodb-write-io-threads
	innodb-doublewrite innodb-adaptive-hash-index innodb-stats-persistent innodb-print-all-deadlocks
	innodb-lock-wait-timeout innodb-autoinc-lock-mode innodb-flush-neighbors innodb-dedicated-server
	innodb-open-files innodb-thread-concurrency innodb-purge-threads innodb-page-cleaners innodb-use-native-aio
	innodb-data-file-path innodb-temp-data-file-path innodb-undo-directory innodb-directories
	innodb-strict-mode innodb-sort-buffer-size innodb-online-alter-log-max-size innodb-numa-interleave
	innodb-buffer-pool-dump-at-shutdown innodb-buffer-pool-load-at-startup innodb-deadlock-detect innodb-rollback-on-timeout
	character-set-server collation-server default-time-zone skip-name-resolve bind-address socket user
	mysqlx mysqlx-port mysqlx-bind-address mysqlx-socket skip-mysqlx admin-ssl-ca admin-ssl-cert admin-ssl-key
	max-allowed-packet wait-timeout interactive-timeout net-read-timeout net-write-timeout connect-timeout
	max-connect-errors host-cache-size max-user-connections back-log thread-cache-size thread-stack
	table-open-cache table-open-cache-instances table-definition-cache open-files-limit
	tmp-table-size max-heap-table-size sort-buffer-size join-buffer-size read-buffer-size read-rnd-buffer-size
	long-query-time slow-query-log slow-query-log-file log-queries-not-using-indexes log-slow-admin-statements
	log-error log-error-verbosity log-timestamps general-log general-log-file log-output log-raw
	sql-mode transaction-isolation autocommit lock-wait-timeout event-scheduler default-storage-engine
	secure-file-priv local-infile lower-case-table-names explicit-defaults-for-timestamp tmpdir
	authentication-policy performance-schema performance-schema-consumer-events-statements-history
	tls-version ssl-cipher tls-ciphersuites ssl-crl ssl-crlpath ssl-capath ssl-fips-mode ssl-session-cache-mode
	group-concat-max-len max-execution-time max-prepared-stmt-count max-sp-recursion-depth
	skip-external-locking skip-symbolic-links symbolic-links core-file server-id-bits
	offline-mode default-password-lifetime password-history password-reuse-interval
	activate-all-roles-on-login mandatory-roles init-connect init-file
	character-set-filesystem skip-character-set-client-handshake temptable-max-ram temptable-max-mmap
	information-schema-stats-expiry key-buffer-size myisam-recover-options
	gtid-executed-compression-period binlog-encryption early-plugin-load keyring-migration-source
	upgrade skip-grant-tables skip-networking innodb-force-recovery innodb-read-only
`)

var acceptedOptionSet = func() map[string]bool {
	m := map[string]bool{}
	for _, o := range acceptedOptions {
		m[o] = true
	}
	return m
}()

// pluginOptionPrefixes are the option prefixes of the loadable plugins the
// simulator knows (plugins.go): MySQL accepts them only while the plugin
// is loaded.
var pluginOptionPrefixes = map[string]string{"clone": "clone"}

func onlyValue(name string, ok ...string) func(*optionBuild, optValue) error {
	return func(_ *optionBuild, v optValue) error {
		for _, o := range ok {
			if strings.EqualFold(v.s, o) {
				return nil
			}
		}
		if name == "gtid_mode" || name == "binlog_format" {
			switch strings.ToUpper(v.s) {
			case "OFF", "OFF_PERMISSIVE", "ON_PERMISSIVE", "STATEMENT", "MIXED":
				return errNotModelled(name + "=" + v.s + " (the simulator runs " + name + "=" + ok[0] + " only)")
			}
		}
		return errSettingValue(v.s, name)
	}
}

// errStartup is a reason mysqld stops at startup; the message is mysqld's.
type errStartup struct{ msg string }

func (e *errStartup) Error() string {
	return "[ERROR] [Server] " + e.msg + " [ERROR] [Server] Aborting"
}

func errSettingValue(v, name string) error {
	return &errStartup{msg: fmt.Sprintf("mysqld: Error while setting value '%s' to '%s'.", v, strings.ReplaceAll(name, "-", "_"))}
}

// errNotModelled stops a start whose option asks for something the
// simulator does not model (mysqld would accept it and behave otherwise).
func errNotModelled(what string) error {
	return fmt.Errorf("mysqlsim: %s is not modelled by the simulator", what)
}

// buildOptions reads the option file (if any) and Config.Options, in that
// order, as mysqld reads its option files and then its command line.
func buildOptions(cfg Config, log *slog.Logger) (*optionBuild, error) {
	b := &optionBuild{set: map[string]bool{}, opts: startupOptions{values: map[string]string{}}}
	var lines []optionLine
	if cfg.DefaultsFile != "" {
		fileLines, err := readOptionFile(cfg.RootDir, cfg.DefaultsFile)
		if err != nil {
			return nil, err
		}
		lines = fileLines
	}
	for i, o := range cfg.Options {
		lines = append(lines, parseOptionLine(strings.TrimPrefix(o, "--"), fmt.Sprintf("Options[%d]", i)))
	}
	for _, l := range lines {
		if err := b.apply(l, log); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// apply handles one option: loose- and skip-/disable-/enable-/maximum-
// prefixes and aliases, then the modelled, accepted and plugin options;
// anything else stops the start, as mysqld stops on an unknown variable.
func (b *optionBuild) apply(l optionLine, log *slog.Logger) error {
	name, loose := l.name, false
	if n, ok := strings.CutPrefix(name, "loose-"); ok {
		name, loose = n, true
	}
	def, canon, ok := lookupOption(name)
	negated := false
	if !ok {
		if n, cut := cutAnyPrefix(name, "skip-", "disable-"); cut && !l.hasValue {
			def, canon, ok = lookupOption(n)
			negated = ok
		} else if n, cut := strings.CutPrefix(name, "enable-"); cut {
			def, canon, ok = lookupOption(n)
		} else if n, cut := strings.CutPrefix(name, "maximum-"); cut {
			if _, _, found := lookupOption(n); found {
				return nil // the upper bound a SET may use: not modelled
			}
		}
	}
	if !ok {
		if plugin, isPlugin := pluginOptionOf(name); isPlugin {
			b.opts.pluginOptions = append(b.opts.pluginOptions, pluginOption{plugin: plugin, line: l, name: name, loose: loose})
			return nil
		}
		msg := unknownOptionMessage(l)
		if loose {
			log.Warn(msg + " (loose- prefix: ignored, as mysqld does)")
			return nil
		}
		return &errStartup{msg: msg}
	}
	val, hasValue := l.value, l.hasValue
	if negated {
		val, hasValue = "OFF", true
		if canon == "log-bin" {
			val = logBinOff
		}
	}
	b.opts.values[canon] = val
	if def.kind == optAccepted {
		log.Info("option accepted, not modelled by the simulator", "option", canon)
		return nil
	}
	v, err := parseOptValue(def, canon, val, hasValue, log)
	if err != nil {
		return err
	}
	if def.apply == nil {
		return nil
	}
	return def.apply(b, v)
}

// logBinOff is log-bin's value after skip-log-bin or disable-log-bin.
const logBinOff = "\x00off"

// pluginOption is an option of a loadable plugin, judged once the plugins
// are loaded (plugins.go).
type pluginOption struct {
	plugin, name string
	line         optionLine
	loose        bool
}

func lookupOption(name string) (optDef, string, bool) {
	if a, ok := optionAliases[name]; ok {
		name = a
	}
	if d, ok := modelledOptions[name]; ok {
		return d, name, true
	}
	if acceptedOptionSet[name] {
		return optDef{kind: optAccepted}, name, true
	}
	return optDef{}, "", false
}

func cutAnyPrefix(s string, prefixes ...string) (string, bool) {
	for _, p := range prefixes {
		if r, ok := strings.CutPrefix(s, p); ok {
			return r, true
		}
	}
	return "", false
}

func pluginOptionOf(name string) (string, bool) {
	for prefix, plugin := range pluginOptionPrefixes {
		if name == prefix || strings.HasPrefix(name, prefix+"-") {
			return plugin, true
		}
	}
	return "", false
}

// unknownOptionMessage is mysqld's: "unknown variable 'name=value'" for an
// option with a value, "unknown option '--name'" for one without.
func unknownOptionMessage(l optionLine) string {
	if l.hasValue {
		return fmt.Sprintf("unknown variable '%s=%s'.", l.name, l.value)
	}
	return fmt.Sprintf("unknown option '--%s'.", l.name)
}

// parseOptValue reads a value as mysqld's option parser does: booleans
// ON/OFF/TRUE/FALSE/1/0 (a bare name is ON), integers with an optional
// K/M/G/T/P/E suffix, clamped to the option's range with a warning as
// mysqld adjusts them.
func parseOptValue(def optDef, name, s string, hasValue bool, log *slog.Logger) (optValue, error) {
	switch def.kind {
	case optBool:
		if !hasValue {
			return optValue{b: true}, nil
		}
		switch strings.ToUpper(s) {
		case "ON", "TRUE", "1":
			return optValue{b: true}, nil
		case "OFF", "FALSE", "0":
			return optValue{b: false}, nil
		}
		return optValue{}, errSettingValue(s, name)
	case optInt:
		n, err := parseOptInt(name, s)
		if err != nil {
			return optValue{}, err
		}
		if n < def.min || n > def.max {
			adj := min(max(n, def.min), def.max)
			log.Warn(fmt.Sprintf("option '%s': value %d adjusted to %d", strings.ReplaceAll(name, "-", "_"), n, adj))
			n = adj
		}
		return optValue{n: n}, nil
	}
	return optValue{s: s}, nil
}

func parseOptInt(name, s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	if s != "" {
		switch s[len(s)-1] {
		case 'k', 'K':
			mult = 1 << 10
		case 'm', 'M':
			mult = 1 << 20
		case 'g', 'G':
			mult = 1 << 30
		case 't', 'T':
			mult = 1 << 40
		case 'p', 'P':
			mult = 1 << 50
		case 'e', 'E':
			mult = 1 << 60
		}
		if mult > 1 {
			s = s[:len(s)-1]
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		bad := s
		for i, c := range s {
			if (c < '0' || c > '9') && !(i == 0 && c == '-') {
				bad = string(c)
				break
			}
		}
		return 0, &errStartup{msg: fmt.Sprintf("Unknown suffix '%s' used for variable '%s' (value '%s').", bad, strings.ReplaceAll(name, "-", "_"), s)}
	}
	return n * mult, nil
}
