package mysqlsim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

// Server plugins (manual, "Installing and Uninstalling Plugins", "The
// INFORMATION_SCHEMA PLUGINS Table"). The simulator knows the built-in
// plugins of a MySQL 9.7 server only by name (they are always ACTIVE) and
// one loadable plugin, clone (mysql_clone.so), which CLONE needs.

// pluginDef is one plugin as information_schema.PLUGINS describes it.
type pluginDef struct {
	name, version, typ, typeVersion, library, libraryVersion, author, description, license string
}

// pluginLibraryDir is plugin_dir in the official image, for messages.
const pluginLibraryDir = "/usr/lib64/mysql/plugin/"

// loadableLibraries are the plugin libraries the simulator can load.
var loadableLibraries = map[string][]pluginDef{
	"mysql_clone.so": {{name: "clone", version: "1.0", typ: "CLONE", typeVersion: "1.0", library: "mysql_clone.so",
		libraryVersion: "1.11", author: "Oracle Corporation", description: "CLONE PLUGIN", license: "GPL"}},
}

// builtinPlugins are compiled into mysqld 9.7 and always ACTIVE.
var builtinPlugins = []pluginDef{
	{name: "binlog", version: "1.0", typ: "STORAGE ENGINE", typeVersion: "90700.0", author: "Oracle Corporation", description: "This is a pseudo storage engine to represent the binlog in a transaction", license: "GPL"},
	{name: "caching_sha2_password", version: "1.0", typ: "AUTHENTICATION", typeVersion: "2.2", author: "Oracle Corporation", description: "Caching sha2 authentication", license: "GPL"},
	{name: "sha2_cache_cleaner", version: "1.0", typ: "AUDIT", typeVersion: "4.1", author: "Oracle Corporation", description: "Cache cleaner for Caching sha2 authentication", license: "GPL"},
	{name: "daemon_keyring_proxy_plugin", version: "1.0", typ: "DAEMON", typeVersion: "90700.0", author: "Oracle Corporation", description: "A plugin that implements the keyring component services atop of the keyring plugin", license: "GPL"},
	{name: "CSV", version: "1.0", typ: "STORAGE ENGINE", typeVersion: "90700.0", author: "Oracle Corporation", description: "CSV storage engine", license: "GPL"},
	{name: "MEMORY", version: "1.0", typ: "STORAGE ENGINE", typeVersion: "90700.0", author: "Oracle Corporation", description: "Hash based, stored in memory, useful for temporary tables", license: "GPL"},
	{name: "InnoDB", version: "9.7", typ: "STORAGE ENGINE", typeVersion: "90700.0", author: "Oracle Corporation", description: "Supports transactions, row-level locking, and foreign keys", license: "GPL"},
	{name: "MyISAM", version: "1.0", typ: "STORAGE ENGINE", typeVersion: "90700.0", author: "Oracle Corporation", description: "MyISAM storage engine", license: "GPL"},
	{name: "PERFORMANCE_SCHEMA", version: "0.1", typ: "STORAGE ENGINE", typeVersion: "90700.0", author: "Marc Alff, Oracle", description: "Performance Schema", license: "GPL"},
	{name: "TempTable", version: "1.0", typ: "STORAGE ENGINE", typeVersion: "90700.0", author: "Oracle Corporation", description: "InnoDB temporary storage engine", license: "GPL"},
	{name: "mysqlx", version: "1.0", typ: "DAEMON", typeVersion: "90700.0", author: "Oracle Corporation", description: "X Plugin for MySQL", license: "GPL"},
}

// pluginFile is the simulator's mysql.plugin table: the plugins INSTALL
// PLUGIN registered, loaded again at every start.
const pluginFile = "sim-plugins.json"

// pluginState is the plugins of the running server (guarded by Server.mu).
type pluginState struct {
	active    map[string]pluginDef // loadable plugins ACTIVE now, by lower-case name
	installed map[string]string    // mysql.plugin: name -> library
	loadOpt   map[string]string    // LOAD_OPTION by name (ON, FORCE, ...)
}

// pluginActiveLocked reports whether the named plugin is loaded and
// active ("clone" for CLONE INSTANCE). Built-in plugins always are.
func (s *Server) pluginActiveLocked(name string) bool {
	if _, ok := s.ext.plugins.active[strings.ToLower(name)]; ok {
		return true
	}
	for _, b := range builtinPlugins {
		if strings.EqualFold(b.name, name) {
			return true
		}
	}
	return false
}

// loadPluginsLocked is the plugin initialisation of a start: mysql.plugin
// (INSTALL PLUGIN of earlier runs), then --plugin-load / --plugin-load-add,
// then the plugins' own options (a plugin option without its plugin is an
// unknown variable). A library that cannot be loaded is logged and
// skipped, as mysqld skips it.
func (s *Server) loadPluginsLocked() error {
	ps := pluginState{active: map[string]pluginDef{}, installed: map[string]string{}, loadOpt: map[string]string{}}
	installed, err := readInstalledPlugins(s.disk)
	if err != nil {
		return err
	}
	for name, lib := range installed {
		ps.installed[name] = lib
		if def, err := findPlugin(name, lib); err == nil {
			ps.active[name], ps.loadOpt[name] = def, "ON"
		} else {
			s.log.Error("plugin from mysql.plugin not loaded", "plugin", name, "err", err.Error())
		}
	}
	for _, spec := range s.ext.opts.pluginLoad {
		for _, item := range strings.Split(spec, ";") {
			if err := ps.loadSpec(strings.TrimSpace(item)); err != nil {
				s.log.Error("plugin-load: "+err.Error(), "value", item)
			}
		}
	}
	for _, o := range s.ext.opts.pluginOptions {
		if _, ok := ps.active[o.plugin]; !ok {
			msg := unknownOptionMessage(o.line)
			if o.loose {
				s.log.Warn(msg + " (loose- prefix: ignored, as mysqld does)")
				continue
			}
			return &errStartup{msg: msg}
		}
		if err := s.pluginOptionLocked(&ps, o); err != nil {
			return err
		}
	}
	s.ext.plugins = ps
	return nil
}

// loadSpec loads one plugin-load item: "library" (every plugin in it) or
// "name=library".
func (ps *pluginState) loadSpec(item string) error {
	if item == "" {
		return nil
	}
	name, lib, named := strings.Cut(item, "=")
	if !named {
		lib = name
	}
	defs, ok := loadableLibraries[lib]
	if !ok {
		return errCantOpenLibrary(lib)
	}
	for _, d := range defs {
		if named && !strings.EqualFold(d.name, name) {
			continue
		}
		ps.active[d.name], ps.loadOpt[d.name] = d, "ON"
	}
	return nil
}

// pluginOptionLocked applies an option of a loaded plugin: the plugin's
// own load option (clone=OFF|ON|FORCE|FORCE_PLUS_PERMANENT) and
// clone_valid_donor_list; the plugin's other options are accepted.
func (s *Server) pluginOptionLocked(ps *pluginState, o pluginOption) error {
	switch o.name {
	case o.plugin:
		v := strings.ToUpper(o.line.value)
		if !o.line.hasValue {
			v = "ON"
		}
		switch v {
		case "OFF", "0":
			delete(ps.active, o.plugin)
		case "ON", "1", "FORCE", "FORCE_PLUS_PERMANENT":
			ps.loadOpt[o.plugin] = v
		default:
			return errSettingValue(o.line.value, o.name)
		}
	case "clone-valid-donor-list":
		s.st.cloneValidDonorList = o.line.value
	default:
		s.log.Info("option accepted, not modelled by the simulator", "option", o.name)
	}
	return nil
}

func findPlugin(name, lib string) (pluginDef, error) {
	defs, ok := loadableLibraries[lib]
	if !ok {
		return pluginDef{}, errCantOpenLibrary(lib)
	}
	for _, d := range defs {
		if strings.EqualFold(d.name, name) {
			return d, nil
		}
	}
	return pluginDef{}, myErr(ErCantFindDLEntry, "Can't find symbol '_mysql_plugin_interface_version_' in library")
}

// Plugin error numbers (include/mysqld_error.h).
const (
	ErUDFExists           = 1125 // ER_UDF_EXISTS: "Function '%s' already exists"
	ErCantOpenLibrary     = 1126 // ER_CANT_OPEN_LIBRARY
	ErCantFindDLEntry     = 1127 // ER_CANT_FIND_DL_ENTRY
	ErSPDoesNotExist      = 1305 // ER_SP_DOES_NOT_EXIST: "%s %s does not exist"
	ErPluginIsNotLoaded   = 1524 // ER_PLUGIN_IS_NOT_LOADED: "Plugin '%s' is not loaded"
	ErPluginDeleteBuiltin = 1619 // ER_PLUGIN_DELETE_BUILTIN
)

func errCantOpenLibrary(lib string) error {
	return myErr(ErCantOpenLibrary, "Can't open shared library '%s%s' (errno: 2 %s%s: cannot open shared object file: No such file or directory)", pluginLibraryDir, lib, pluginLibraryDir, lib)
}

// errPluginNotLoaded is what CLONE answers on a server without the clone
// plugin: MySQL's clone test suite expects "ERROR HY000: Plugin 'clone' is
// not loaded" for CLONE INSTANCE before INSTALL PLUGIN.
func errPluginNotLoaded(name string) error {
	return myErr(ErPluginIsNotLoaded, "Plugin '%s' is not loaded", name)
}

// execInstallPlugin is INSTALL PLUGIN name SONAME 'library': it needs
// INSERT on mysql.plugin, loads the plugin now and registers it in
// mysql.plugin, so every later start loads it too. It is not written to
// the binary log.
func (s *Server) execInstallPlugin(sess *session, c *cursor) error {
	if err := c.expectKw("PLUGIN"); err != nil {
		return err
	}
	name, err := c.ident()
	if err != nil {
		return err
	}
	if err := c.expectKw("SONAME"); err != nil {
		return err
	}
	lib, err := c.stringLit()
	if err != nil {
		return err
	}
	if err := c.expectEnd(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !sess.hasSchemaPrivilege("mysql", "INSERT") {
		return myErr(ErTableAccessDenied, "INSERT command denied to user '%s'@'%%' for table 'plugin'", sess.user.Name)
	}
	if err := s.checkWritableLocked(sess, writeOp{kind: opAccount}); err != nil {
		return err // mysql.plugin is written: read_only applies (1290)
	}
	key := strings.ToLower(name)
	if s.pluginActiveLocked(key) {
		return myErr(ErUDFExists, "Function '%s' already exists", name)
	}
	def, err := findPlugin(key, lib)
	if err != nil {
		return err
	}
	ps := &s.ext.plugins
	ps.installed[def.name] = lib
	if err := writeInstalledPlugins(s.disk, ps.installed); err != nil {
		delete(ps.installed, def.name)
		return myErr(1105, "mysqlsim: writing mysql.plugin: %v", err)
	}
	ps.active[def.name], ps.loadOpt[def.name] = def, "ON"
	s.log.Info("plugin installed", "plugin", def.name, "library", lib, "user", sess.user.Name)
	return nil
}

// execUninstallPlugin is UNINSTALL PLUGIN name: DELETE on mysql.plugin; a
// plugin that is not loaded gives 1305, a built-in one 1619. A plugin
// loaded by --plugin-load-add is unloaded for this run only.
func (s *Server) execUninstallPlugin(sess *session, c *cursor) error {
	if err := c.expectKw("PLUGIN"); err != nil {
		return err
	}
	name, err := c.ident()
	if err != nil {
		return err
	}
	if err := c.expectEnd(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !sess.hasSchemaPrivilege("mysql", "DELETE") {
		return myErr(ErTableAccessDenied, "DELETE command denied to user '%s'@'%%' for table 'plugin'", sess.user.Name)
	}
	if err := s.checkWritableLocked(sess, writeOp{kind: opAccount}); err != nil {
		return err // mysql.plugin is written: read_only applies (1290)
	}
	key := strings.ToLower(name)
	for _, b := range builtinPlugins {
		if strings.EqualFold(b.name, key) {
			return myErr(ErPluginDeleteBuiltin, "Built-in plugins cannot be deleted")
		}
	}
	ps := &s.ext.plugins
	if _, ok := ps.active[key]; !ok {
		return myErr(ErSPDoesNotExist, "PLUGIN %s does not exist", name)
	}
	if ps.loadOpt[key] == "FORCE_PLUS_PERMANENT" {
		return myErr(1702, "Plugin '%s' is force_plus_permanent and can not be unloaded", name)
	}
	if _, ok := ps.installed[key]; ok {
		delete(ps.installed, key)
		if err := writeInstalledPlugins(s.disk, ps.installed); err != nil {
			return myErr(1105, "mysqlsim: writing mysql.plugin: %v", err)
		}
	}
	delete(ps.active, key)
	s.log.Info("plugin uninstalled", "plugin", key, "user", sess.user.Name)
	return nil
}

// pluginRowsLocked lists every plugin as information_schema.PLUGINS does.
func (s *Server) pluginRowsLocked() [][]any {
	var rows [][]any
	row := func(d pluginDef, loadOpt string) []any {
		var lib, libVer any
		if d.library != "" {
			lib, libVer = d.library, d.libraryVersion
		}
		return []any{d.name, d.version, "ACTIVE", d.typ, d.typeVersion, lib, libVer, d.author, d.description, d.license, loadOpt}
	}
	for _, b := range builtinPlugins {
		rows = append(rows, row(b, "ON"))
	}
	names := make([]string, 0, len(s.ext.plugins.active))
	for n := range s.ext.plugins.active {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		rows = append(rows, row(s.ext.plugins.active[n], s.ext.plugins.loadOpt[n]))
	}
	return rows
}

// pluginColumns are information_schema.PLUGINS' columns in MySQL 9.7.
var pluginColumns = []column{
	{"PLUGIN_NAME", colString}, {"PLUGIN_VERSION", colString}, {"PLUGIN_STATUS", colString},
	{"PLUGIN_TYPE", colString}, {"PLUGIN_TYPE_VERSION", colString}, {"PLUGIN_LIBRARY", colString},
	{"PLUGIN_LIBRARY_VERSION", colString}, {"PLUGIN_AUTHOR", colString}, {"PLUGIN_DESCRIPTION", colString},
	{"PLUGIN_LICENSE", colString}, {"LOAD_OPTION", colString},
}

// isPluginsTable reports information_schema.PLUGINS.
func isPluginsTable(db, name string) bool {
	return strings.EqualFold(db, "information_schema") && strings.EqualFold(name, "plugins")
}

// selectPlugins answers SELECT … FROM information_schema.PLUGINS [WHERE
// column = 'value'] (the one filter a plugin check uses).
func (s *Server) selectPlugins(items []selItem, c *cursor) (*table, error) {
	col, want := "", ""
	if c.acceptKw("WHERE") {
		var err error
		if col, err = c.ident(); err != nil {
			return nil, err
		}
		if !c.acceptPunct("=") {
			return nil, c.errHere()
		}
		if want, err = c.stringLit(); err != nil {
			return nil, err
		}
	}
	if err := c.expectEnd(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	rows := s.pluginRowsLocked()
	s.mu.Unlock()
	if col != "" {
		idx := -1
		for i, pc := range pluginColumns {
			if strings.EqualFold(pc.name, col) {
				idx = i
			}
		}
		if idx < 0 {
			return nil, myErr(1054, "Unknown column '%s' in 'where clause'", col)
		}
		var kept [][]any
		for _, r := range rows {
			if v, ok := r[idx].(string); ok && strings.EqualFold(v, want) {
				kept = append(kept, r)
			}
		}
		rows = kept
	}
	return project(pluginColumns, rows, items)
}

// showPlugins is SHOW PLUGINS: Name, Status, Type, Library, License.
func (s *Server) showPlugins(c *cursor) (*table, error) {
	if err := c.expectEnd(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	rows := s.pluginRowsLocked()
	s.mu.Unlock()
	t := &table{cols: []column{{"Name", colString}, {"Status", colString}, {"Type", colString}, {"Library", colString}, {"License", colString}}}
	for _, r := range rows {
		t.rows = append(t.rows, []any{r[0], r[2], r[3], r[5], r[9]})
	}
	return t, nil
}

func readInstalledPlugins(d disk) (map[string]string, error) {
	b, err := d.readFile(pluginFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("mysqlsim: %s: %w", pluginFile, err)
	}
	return m, nil
}

func writeInstalledPlugins(d disk, m map[string]string) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return d.writeFileAtomic(pluginFile, b)
}
