// Package devsitemap reads and writes the development site-address map: a small
// text file that tells the operator, the sidecars and the MySQL simulators
// where each site of a failover group really listens when there is no cluster
// network (the local playground and the tests).
//
// In a cluster the operator reaches a site through its internal Service,
// <group>-<site>-internal.<namespace>.svc. Outside a cluster that name does
// not resolve, so the map binds each site, keyed namespace/group/site, to the
// loopback addresses of its mysqld and sidecar. Because every site's internal
// Service FQDN is derived from its key, a simulator that receives
//
//	CHANGE REPLICATION SOURCE TO SOURCE_HOST='orders-iad-internal.shop.svc', ...
//
// finds the simulated server to replicate from with LookupHost.
//
// The file format, one site per line:
//
//	# comments and blank lines are ignored
//	<namespace>/<group>/<site> mysqld=<host:port> [sidecar=<host:port>]
//
// The map is development-only; the operator ignores it unless its flag is set.
package devsitemap

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/shipstream/bloodraven/pkg/siteaddr"
)

// EnvVar names the environment variable through which every process (operator,
// sidecar, simulator) is told the map's path. The operator's flag defaults to it.
const EnvVar = "BLOODRAVEN_DEV_SITE_ADDRESSES"

// Entry is one site's line: where its mysqld and (optionally) its sidecar listen.
type Entry struct {
	Site    siteaddr.SiteKey
	MySQL   string // host:port of mysqld (or its simulator)
	Sidecar string // host:port of the sidecar; empty when none runs
}

// Map is a parsed, validated address map. The zero value is empty and usable.
type Map struct {
	bySite map[siteaddr.SiteKey]Entry
	byFQDN map[string]siteaddr.SiteKey
}

// New builds a map from entries, validating them as Parse does.
func New(entries ...Entry) (*Map, error) {
	m := &Map{bySite: map[siteaddr.SiteKey]Entry{}, byFQDN: map[string]siteaddr.SiteKey{}}
	mysqlOwner := map[string]siteaddr.SiteKey{}
	for _, e := range entries {
		if err := m.add(e, mysqlOwner); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Map) add(e Entry, mysqlOwner map[string]siteaddr.SiteKey) error {
	if err := e.Site.Validate(); err != nil {
		return err
	}
	if _, dup := m.bySite[e.Site]; dup {
		return fmt.Errorf("site %s is listed twice", e.Site)
	}
	if err := validateAddr("mysqld", e.MySQL); err != nil {
		return fmt.Errorf("site %s: %w", e.Site, err)
	}
	if e.Sidecar != "" {
		if err := validateAddr("sidecar", e.Sidecar); err != nil {
			return fmt.Errorf("site %s: %w", e.Site, err)
		}
	}
	// Two sites on one server would make every GTID comparison between them
	// meaningless; refuse it rather than let a test pass for the wrong reason.
	if other, dup := mysqlOwner[e.MySQL]; dup {
		return fmt.Errorf("site %s: mysqld=%s is already the address of site %s", e.Site, e.MySQL, other)
	}
	mysqlOwner[e.MySQL] = e.Site
	m.bySite[e.Site] = e
	m.byFQDN[e.Site.InternalServiceFQDN()] = e.Site
	return nil
}

func validateAddr(key, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s=%q: want host:port: %v", key, addr, err)
	}
	if host == "" {
		return fmt.Errorf("%s=%q: host is empty", key, addr)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%s=%q: port must be a number from 1 to 65535", key, addr)
	}
	return nil
}

// Parse reads the file format described in the package comment. Errors name
// the line number and the offending field.
func Parse(r io.Reader) (*Map, error) {
	var entries []Entry
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		e, err := parseLine(text)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	m, err := New(entries...)
	if err != nil {
		return nil, err
	}
	return m, nil
}

func parseLine(text string) (Entry, error) {
	fields := strings.Fields(text)
	key, err := siteaddr.ParseSiteKey(fields[0])
	if err != nil {
		return Entry{}, err
	}
	e := Entry{Site: key}
	seen := map[string]bool{}
	for _, f := range fields[1:] {
		name, value, ok := strings.Cut(f, "=")
		if !ok {
			return Entry{}, fmt.Errorf("site %s: %q is not key=value", key, f)
		}
		if seen[name] {
			return Entry{}, fmt.Errorf("site %s: %s is given twice", key, name)
		}
		seen[name] = true
		switch name {
		case "mysqld":
			e.MySQL = value
		case "sidecar":
			e.Sidecar = value
		default:
			return Entry{}, fmt.Errorf("site %s: unknown key %q (want mysqld or sidecar)", key, name)
		}
	}
	if e.MySQL == "" {
		return Entry{}, fmt.Errorf("site %s: mysqld=<host:port> is required", key)
	}
	return e, nil
}

// Load reads and parses the file at path.
func Load(path string) (*Map, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("development site-address map: %w", err)
	}
	m, err := Parse(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("development site-address map %s: %w", path, err)
	}
	return m, nil
}

// Entries returns the entries sorted by site key.
func (m *Map) Entries() []Entry {
	out := make([]Entry, 0, len(m.bySite))
	for _, e := range m.bySite {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Site.String() < out[j].Site.String() })
	return out
}

// Lookup returns the entry of one site.
func (m *Map) Lookup(k siteaddr.SiteKey) (Entry, bool) {
	e, ok := m.bySite[k]
	return e, ok
}

// LookupHost finds the site whose internal Service FQDN is host. It accepts
// the forms a resolver would: any letter case, a trailing dot, and the
// .svc.cluster.local suffix.
func (m *Map) LookupHost(host string) (Entry, bool) {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	h = strings.TrimSuffix(h, ".cluster.local")
	k, ok := m.byFQDN[h]
	if !ok {
		return Entry{}, false
	}
	return m.bySite[k], true
}

// ResolveMySQL turns a replication source (SOURCE_HOST, SOURCE_PORT) into the
// address to dial. A mapped internal Service FQDN on the in-cluster MySQL
// port resolves to that site's mysqld address; anything else is dialed as given.
func (m *Map) ResolveMySQL(host string, port int) string {
	if e, ok := m.LookupHost(host); ok && (port == siteaddr.MySQLPort || port == 0) {
		return e.MySQL
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// Write renders the map in the file format, sorted by site key, so a test or
// the playground can produce the file the other processes read.
func (m *Map) Write(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# Bloodraven development site-address map (development only).\n")
	b.WriteString("# <namespace>/<group>/<site> mysqld=<host:port> [sidecar=<host:port>]\n")
	for _, e := range m.Entries() {
		fmt.Fprintf(&b, "%s mysqld=%s", e.Site, e.MySQL)
		if e.Sidecar != "" {
			fmt.Fprintf(&b, " sidecar=%s", e.Sidecar)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteFile writes the map to path atomically (write to a temporary file in
// the same directory, then rename), so a reader never sees half a file.
func (m *Map) WriteFile(path string) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".devsitemap-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	if err := m.Write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// ErrNotMapped is returned by the Map resolver for a site the file does not list.
var ErrNotMapped = errors.New("site is not in the development site-address map")

// MySQLAddr returns the mapped mysqld address of a site.
func (m *Map) MySQLAddr(k siteaddr.SiteKey) (string, error) {
	e, ok := m.Lookup(k)
	if !ok {
		return "", fmt.Errorf("site %s: %w", k, ErrNotMapped)
	}
	return e.MySQL, nil
}

// SidecarAddr returns the mapped sidecar address of a site.
func (m *Map) SidecarAddr(k siteaddr.SiteKey) (string, error) {
	e, ok := m.Lookup(k)
	if !ok {
		return "", fmt.Errorf("site %s: %w", k, ErrNotMapped)
	}
	if e.Sidecar == "" {
		return "", fmt.Errorf("site %s: no sidecar= address in the development site-address map", k)
	}
	return e.Sidecar, nil
}

var _ siteaddr.Resolver = (*Map)(nil)
