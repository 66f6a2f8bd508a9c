package mysqlsim

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Option files as mysqld reads them (manual, "Using Option Files"): groups
// [mysqld], [server] and [mysqld-9.7]; "name", "name=value" (spaces around
// '=' allowed, a value may be quoted); '#' and ';' comment lines and '#'
// after a value; !include FILE and !includedir DIR (the *.cnf files, in
// name order). Option names treat '-' and '_' alike.

// optionGroups are the groups mysqld 9.7 reads.
var optionGroups = map[string]bool{"mysqld": true, "server": true, "mysqld-9.7": true}

// optionLine is one option as read from a file.
type optionLine struct {
	name     string // as written, '_' turned into '-'
	value    string
	hasValue bool
	where    string // file:line, for messages
}

// errOptionFile is a fatal error in defaults handling: mysqld prints it and
// "Fatal error in defaults handling. Program aborted".
type errOptionFile struct{ msg string }

func (e *errOptionFile) Error() string {
	return e.msg + "; Fatal error in defaults handling. Program aborted"
}

// readOptionFile reads path and what it includes. root, when set, is the
// directory absolute paths resolve under (the container's filesystem seen
// from the host; Config.RootDir).
func readOptionFile(root, path string) ([]optionLine, error) {
	r := &optionReader{root: root, seen: map[string]bool{}}
	b, err := os.ReadFile(r.resolve(path))
	if err != nil {
		return nil, &errOptionFile{msg: fmt.Sprintf("Could not open required defaults file: %s", path)}
	}
	if err := r.parse(path, string(b), 0); err != nil {
		return nil, err
	}
	return r.out, nil
}

type optionReader struct {
	root string
	seen map[string]bool
	out  []optionLine
}

// resolve maps a path of the container's filesystem to the host's.
func (r *optionReader) resolve(p string) string { return resolveUnder(r.root, p) }

// resolveUnder maps an absolute path under root (a relative one is left as
// it is): root "/tmp/pod" and "/etc/my.cnf" give "/tmp/pod/etc/my.cnf".
func resolveUnder(root, p string) string {
	if root == "" || !filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(root, filepath.Clean(p))
}

// maxIncludeDepth bounds nested !include directives: deeper nesting is a loop
// of includes, which mysqld does not follow either.
const maxIncludeDepth = 10

func (r *optionReader) parse(path, text string, depth int) error {
	if depth > maxIncludeDepth || r.seen[path] {
		return nil // mysqld ignores a file it is already reading
	}
	r.seen[path] = true
	defer delete(r.seen, path)
	group := ""
	inGroup := false
	for i, raw := range strings.Split(text, "\n") {
		where := fmt.Sprintf("%s at line %d", path, i+1)
		line := strings.TrimSpace(strings.TrimSuffix(raw, "\r"))
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
			continue
		case line[0] == '!':
			if err := r.directive(path, line, where, depth); err != nil {
				return err
			}
			continue
		case line[0] == '[':
			end := strings.IndexByte(line, ']')
			if end < 0 {
				return &errOptionFile{msg: "Wrong group definition in config file " + where}
			}
			group = strings.ToLower(strings.TrimSpace(line[1:end]))
			inGroup = true
			continue
		}
		if !inGroup {
			return &errOptionFile{msg: "Found option without preceding group in config file " + where}
		}
		if !optionGroups[group] {
			continue
		}
		r.out = append(r.out, parseOptionLine(line, path+":"+fmt.Sprint(i+1)))
	}
	return nil
}

// directive handles !include and !includedir; a missing file or directory
// is skipped, as mysqld skips it.
func (r *optionReader) directive(path, line, where string, depth int) error {
	word, arg, _ := strings.Cut(line[1:], " ")
	arg = strings.TrimSpace(arg)
	var files []string
	switch strings.ToLower(word) {
	case "include":
		if arg == "" {
			return &errOptionFile{msg: "Wrong '!include' directive in config file " + where}
		}
		files = []string{arg}
	case "includedir":
		if arg == "" {
			return &errOptionFile{msg: "Wrong '!includedir' directive in config file " + where}
		}
		entries, err := os.ReadDir(r.resolve(arg))
		if err != nil {
			return nil
		}
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".cnf") {
				files = append(files, filepath.Join(arg, e.Name()))
			}
		}
		sort.Strings(files)
	default:
		return &errOptionFile{msg: "Wrong '!' directive in config file " + where}
	}
	for _, f := range files {
		b, err := os.ReadFile(r.resolve(f))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return &errOptionFile{msg: fmt.Sprintf("Could not open %s included from %s", f, where)}
		}
		if err := r.parse(f, string(b), depth+1); err != nil {
			return err
		}
	}
	return nil
}

// parseOptionLine reads "name", "name = value" or "name = 'value'"; an
// unquoted value ends at '#'. Escapes \n \t \r \b \s \\ \" \' are MySQL's.
func parseOptionLine(line, where string) optionLine {
	name, value, has := strings.Cut(line, "=")
	o := optionLine{name: normalizeOptionName(name), hasValue: has, where: where}
	if !has {
		if i := strings.IndexByte(name, '#'); i >= 0 {
			o.name = normalizeOptionName(name[:i])
		}
		return o
	}
	value = strings.TrimSpace(value)
	if len(value) >= 2 && (value[0] == '\'' || value[0] == '"') {
		if end := strings.IndexByte(value[1:], value[0]); end >= 0 {
			o.value = unescapeOption(value[1 : 1+end])
			return o
		}
	}
	if i := strings.IndexByte(value, '#'); i >= 0 {
		value = strings.TrimSpace(value[:i])
	}
	o.value = unescapeOption(value)
	return o
}

func normalizeOptionName(n string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(n)), "_", "-")
}

var optionEscapes = strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\r`, "\r", `\b`, "\b", `\s`, " ", `\\`, `\`, `\"`, `"`, `\'`, `'`)

func unescapeOption(v string) string { return optionEscapes.Replace(v) }

// defaultAdminPort is admin_port's default.
const defaultAdminPort = 33062

// applyOptionFile returns cfg as one start sees it: the option file
// (Config.DefaultsFile) and Config.Options, in that order, fill what cfg
// leaves unset, since a Config field that is set stands for mysqld's
// command line, which wins over its option files; the options without a
// Config field come back as startupOptions. Paths from the file are the
// container's and resolve under Config.RootDir.
func applyOptionFile(cfg Config, log *slog.Logger) (Config, startupOptions, error) {
	if cfg.DefaultsFile == "" && len(cfg.Options) == 0 {
		return cfg, startupOptions{values: map[string]string{}}, nil
	}
	b, err := buildOptions(cfg, log)
	if err != nil {
		return cfg, startupOptions{}, err
	}
	f := b.cfg
	if cfg.ServerID == 0 {
		cfg.ServerID = f.ServerID
	}
	cfg.ReadOnly = cfg.ReadOnly || f.ReadOnly
	cfg.SuperReadOnly = cfg.SuperReadOnly || f.SuperReadOnly
	cfg.SkipReplicaStart = cfg.SkipReplicaStart || f.SkipReplicaStart
	cfg.RelayLogRecovery = cfg.RelayLogRecovery || f.RelayLogRecovery
	if cfg.ReplicaNetTimeout == 0 {
		cfg.ReplicaNetTimeout = f.ReplicaNetTimeout
	}
	if cfg.SyncBinlog == nil {
		cfg.SyncBinlog = f.SyncBinlog
	}
	if cfg.InnoDBFlushLogAtTrxCommit == nil {
		cfg.InnoDBFlushLogAtTrxCommit = f.InnoDBFlushLogAtTrxCommit
	}
	if cfg.DataDir == "" && f.DataDir != "" {
		cfg.DataDir = resolveUnder(cfg.RootDir, f.DataDir)
	}
	if cfg.PIDFile == "" && f.PIDFile != "" {
		p := f.PIDFile
		if !filepath.IsAbs(p) && cfg.DataDir != "" { // relative to the data directory, as mysqld's
			p = filepath.Join(cfg.DataDir, p)
		}
		cfg.PIDFile = resolveUnder(cfg.RootDir, p)
	}
	if cfg.Addr == "" {
		cfg.Addr = f.Addr
	}
	if a := b.opts.values["admin-address"]; cfg.AdminAddr == "" && a != "" {
		port := strconv.Itoa(defaultAdminPort)
		if p := b.opts.values["admin-port"]; p != "" {
			port = p
		}
		cfg.AdminAddr = net.JoinHostPort(a, port)
	}
	for _, w := range b.opts.warnings {
		log.Warn("option not modelled as written", "detail", w)
	}
	return cfg, b.opts, nil
}

// startupOption is the value an accepted option had at this start ("" and
// false when it was not given), for parts that read an option the
// simulator only stores (replica-net-timeout, relay-log-recovery, ...).
// The name is in '-' spelling.
func (s *Server) startupOptionLocked(name string) (string, bool) {
	v, ok := s.ext.opts.values[normalizeOptionName(name)]
	return v, ok
}

// persistedGlobalsLoadLocked reports persisted_globals_load (default ON).
func (s *Server) persistedGlobalsLoadLocked() bool {
	v, ok := s.startupOptionLocked("persisted-globals-load")
	return !ok || v == "true"
}

// bootState is what the option file, the first boot, plugins and
// transport keep for a server (guarded by Server.mu).
type bootState struct {
	opts    startupOptions
	plugins pluginState    // plugins.go
	tls     transportState // transport.go
	// firstBootPending is set by a boot on an empty data directory that
	// the image's entrypoint initialises (firstboot.go).
	firstBootPending bool
	partialRevokes   bool // partial_revokes (partialrevokes.go)
}

// rereadOptionFileLocked reads the option file again at a start, as a
// restarted mysqld does: a changed file takes effect, a broken one stops
// the start. The data directory and server_uuid stay those of New.
func (s *Server) rereadOptionFileLocked() error {
	if s.given.DefaultsFile == "" && len(s.given.Options) == 0 {
		return nil
	}
	cfg, opts, err := applyOptionFile(s.given, s.log)
	if err != nil {
		return err
	}
	if cfg.Addr == "" {
		cfg.Addr = s.boot.Addr
	}
	cfg.ServerUUID, cfg.DataDir, cfg.Logger = s.boot.ServerUUID, s.boot.DataDir, s.boot.Logger
	if cfg.ServerID == 0 {
		return errors.New("mysqlsim: ServerID must be set (1 to 4294967295)")
	}
	s.boot, s.ext.opts = cfg, opts
	return nil
}

// applyStartupOptionsLocked applies the options that set server variables
// at start (before the SET PERSIST values, which mysqld applies after its
// option files), then loads plugins and TLS.
func (s *Server) applyStartupOptionsLocked() error {
	o := s.ext.opts
	if o.maxBinlogSize != nil {
		s.binlog.maxSize = *o.maxBinlogSize
	}
	if o.binlogExpire != nil {
		s.binlog.expire, s.binlog.expireSet = *o.binlogExpire, true
	}
	if o.maxConnections != nil {
		s.conns.max = *o.maxConnections
	}
	s.bootPartialRevokesLocked() // partialrevokes.go
	if err := s.loadPluginsLocked(); err != nil {
		return err
	}
	return s.bootTransportLocked()
}
