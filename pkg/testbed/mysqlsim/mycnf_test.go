package mysqlsim

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOptionFileSyntax reads a file in the official image's layout
// (/etc/my.cnf including /etc/mysql/conf.d/) under a root directory, with
// every piece of the syntax mysqld accepts.
func TestOptionFileSyntax(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "etc/my.cnf"), "# the image's file\n[mysqld]\nskip-name-resolve\ndatadir=/var/lib/mysql\n"+
		"pid-file=/var/run/mysqld/mysqld.pid\n[client]\nsocket=/nowhere\nserver-id=99\n!includedir /etc/mysql/conf.d/\n")
	writeFile(t, filepath.Join(root, "etc/mysql/conf.d/b.cnf"), "[mysqld]\nserver_id = 8\npid-file = /var/lib/mysql/mysqld.pid\n")
	writeFile(t, filepath.Join(root, "etc/mysql/conf.d/a.cnf"), "[server]\n; a comment\nserver-id=7 # trailing comment\n"+
		"super_read_only\nskip-replica-start = 1\nmax_binlog_size = 8K\nsync-binlog=0\nloose-no-such-option = 3\n"+
		"plugin-load-add = \"mysql_clone.so\"\n[mysqld-9.7]\nrequire-secure-transport = OFF\n[mysqld-8.0]\nno-such-option-either = 1\n")
	writeFile(t, filepath.Join(root, "etc/mysql/conf.d/c.txt"), "[mysqld]\nunknown-option = 1\n") // not *.cnf: not read
	cfg, opts, err := applyOptionFile(Config{DefaultsFile: "/etc/my.cnf", RootDir: root}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ServerID != 8 { // a.cnf, then b.cnf (name order): the last one wins; [client] is not read
		t.Errorf("server-id = %d, want 8 (b.cnf after a.cnf)", cfg.ServerID)
	}
	if !cfg.SuperReadOnly || !cfg.SkipReplicaStart {
		t.Errorf("super_read_only %v, skip_replica_start %v: bare and =1 booleans not read", cfg.SuperReadOnly, cfg.SkipReplicaStart)
	}
	if cfg.SyncBinlog == nil || *cfg.SyncBinlog != 0 {
		t.Errorf("sync_binlog = %v, want 0", cfg.SyncBinlog)
	}
	if cfg.DataDir != filepath.Join(root, "var/lib/mysql") || cfg.PIDFile != filepath.Join(root, "var/lib/mysql/mysqld.pid") {
		t.Errorf("datadir %q, pid-file %q: container paths not resolved under the root", cfg.DataDir, cfg.PIDFile)
	}
	if opts.maxBinlogSize == nil || *opts.maxBinlogSize != 8192 {
		t.Errorf("max_binlog_size = %v, want 8192 (8K)", opts.maxBinlogSize)
	}
	if len(opts.pluginLoad) != 1 || opts.pluginLoad[0] != "mysql_clone.so" {
		t.Errorf("plugin-load-add = %q, want the quoted value unquoted", opts.pluginLoad)
	}

	// Config fields stand for the command line and win.
	cfg, _, err = applyOptionFile(Config{DefaultsFile: "/etc/my.cnf", RootDir: root, ServerID: 3, Options: []string{"sync-binlog=1"}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ServerID != 3 || *cfg.SyncBinlog != 1 {
		t.Errorf("server-id %d, sync_binlog %d: the command line did not win over the file", cfg.ServerID, *cfg.SyncBinlog)
	}
}

// TestOptionFileErrorsStopTheStart: what mysqld refuses at startup is
// refused with its message.
func TestOptionFileErrorsStopTheStart(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"unknown variable", "[mysqld]\nserver-id=1\nbogus_option = 1\n", "unknown variable 'bogus-option=1'"},
		{"unknown option", "[mysqld]\nbogus-flag\n", "unknown option '--bogus-flag'"},
		{"bad boolean", "[mysqld]\nread_only = maybe\n", "Error while setting value 'maybe' to 'read_only'"},
		{"bad number", "[mysqld]\nserver-id = 12x\n", "Unknown suffix 'x' used for variable 'server_id'"},
		{"bad gtid_mode", "[mysqld]\ngtid-mode = sometimes\n", "Error while setting value 'sometimes' to 'gtid_mode'"},
		{"option before a group", "server-id=1\n[mysqld]\n", "Found option without preceding group"},
		{"broken group", "[mysqld\nserver-id=1\n", "Wrong group definition"},
		{"plugin option without the plugin", "[mysqld]\nclone_valid_donor_list = a:1\n", "unknown variable 'clone-valid-donor-list=a:1'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "my.cnf")
			writeFile(t, path, tc.text)
			s, err := New(Config{DefaultsFile: path, ServerID: 1, DataDir: t.TempDir()})
			if err == nil { // plugin options are judged when the plugins load, at start
				err = s.Start()
				_ = s.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("start with %q: err = %v, want %q", tc.text, err, tc.want)
			}
		})
	}
	if _, err := New(Config{DefaultsFile: "/no/such/my.cnf", ServerID: 1}); err == nil || !strings.Contains(err.Error(), "Could not open required defaults file: /no/such/my.cnf") {
		t.Errorf("missing defaults file: err = %v", err)
	}
}
