package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/shipstream/bloodraven/pkg/devsitemap"
	"github.com/shipstream/bloodraven/pkg/logging"
	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/protocol"
	"github.com/shipstream/bloodraven/pkg/sidecar"
	"github.com/shipstream/bloodraven/pkg/siteaddr"
)

type options struct {
	namespace, group, site     string
	listenAddr                 string
	operatorEndpoint           string
	leaseTimeout, peerInterval time.Duration
	peerSites                  string
	mysqlAddr                  string
	mysqlAdminAddr             string
	mysqlPIDFile               string
	podUID                     string
	mysqlUser, mysqlUserFile   string
	mysqlPasswordFile          string
	mysqlPasswordDir           string
	mysqlPassword              string // only from the environment, never a flag
	mysqlTLSDir                string
	siteAddresses              string
	logLevel                   slog.Level
	mysqlAddrSet, peerSitesSet bool
	mysqlAdminAddrSet          bool
}

// parse reads flags, with each default taken from its environment variable.
func parse(args []string, getenv func(string) string) (options, error) {
	var o options
	fs := flag.NewFlagSet("bloodraven-sidecar", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	fs.StringVar(&o.namespace, "namespace", env(protocol.EnvNamespace, ""), "namespace of the failover group ($"+protocol.EnvNamespace+")")
	fs.StringVar(&o.group, "group", env(protocol.EnvGroup, ""), "failover group name ($"+protocol.EnvGroup+")")
	fs.StringVar(&o.podUID, "pod-uid", env(protocol.EnvPodUID, ""), "the pod's metadata.uid, named in every fence proof ($"+protocol.EnvPodUID+"; none: the operator never accepts this sidecar's fence proofs)")
	fs.StringVar(&o.site, "site", env(protocol.EnvSite, ""), "this sidecar's site ($"+protocol.EnvSite+")")
	fs.StringVar(&o.listenAddr, "listen-addr", env(protocol.EnvListenAddr, fmt.Sprintf(":%d", protocol.SidecarPort)), "listen address ($"+protocol.EnvListenAddr+")")
	fs.StringVar(&o.operatorEndpoint, "operator-endpoint", env(protocol.EnvOperatorEndpoint, ""), "host:port of the operator's auxiliary listener, spec.sidecar.operatorEndpoint ($"+protocol.EnvOperatorEndpoint+")")
	lease := fs.String("lease-timeout", env(protocol.EnvLeaseTimeout, protocol.DefaultLeaseTimeout.String()), "spec.sidecar.leaseTimeout ($"+protocol.EnvLeaseTimeout+")")
	interval := fs.String("peer-check-interval", env(protocol.EnvPeerCheckInterval, protocol.DefaultPeerCheckInterval.String()), "spec.sidecar.peerCheckInterval ($"+protocol.EnvPeerCheckInterval+")")
	fs.StringVar(&o.peerSites, "peer-sites", env(protocol.EnvPeerSites, ""), "comma-separated names of the group's other sites ($"+protocol.EnvPeerSites+"); with a development site-address map, defaults to every other site of the group in it")
	fs.StringVar(&o.mysqlAddr, "mysql-addr", env(protocol.EnvMySQLAddr, "127.0.0.1:3306"), "host:port of the local mysqld ($"+protocol.EnvMySQLAddr+"); with a development site-address map, defaults to this site's mysqld in it")
	fs.StringVar(&o.mysqlAdminAddr, "mysql-admin-addr", env(protocol.EnvMySQLAdminAddr, fmt.Sprintf("127.0.0.1:%d", protocol.MySQLAdminPort)), "host:port of the local mysqld's administrative connection interface, used to fence ($"+protocol.EnvMySQLAdminAddr+"); with a development site-address map, defaults to this site's mysqld in it")
	fs.StringVar(&o.mysqlPIDFile, "mysql-pid-file", env(protocol.EnvMySQLPIDFile, ""), "mysqld's pid-file; a fence that does not take effect in time stops the process it names ($"+protocol.EnvMySQLPIDFile+"; none: no process stop)")
	fs.StringVar(&o.mysqlUser, "mysql-user", env(protocol.EnvMySQLUser, ""), "MySQL user, the operator Secret's username ($"+protocol.EnvMySQLUser+")")
	fs.StringVar(&o.mysqlUserFile, "mysql-user-file", env(protocol.EnvMySQLUserFile, ""), "file holding the MySQL user, e.g. the mounted operator Secret's username key ($"+protocol.EnvMySQLUserFile+")")
	fs.StringVar(&o.mysqlPasswordFile, "mysql-password-file", env(protocol.EnvMySQLPasswordFile, ""), "file holding the MySQL password, e.g. the mounted operator Secret's password key ($"+protocol.EnvMySQLPasswordFile+"); otherwise $"+protocol.EnvMySQLPassword)
	fs.StringVar(&o.mysqlPasswordDir, "mysql-password-dir", env(protocol.EnvMySQLPasswordDir, ""), "directory of the mounted sidecars' password Secret, re-read for every new MySQL connection so that a password rotation needs no restart; the password above until it exists ($"+protocol.EnvMySQLPasswordDir+")")
	fs.StringVar(&o.mysqlTLSDir, "mysql-tls-dir", env(protocol.EnvMySQLTLSDir, ""), "directory of the mounted spec.tls Secret (ca.crt, tls.crt, tls.key): connect to mysqld with TLS verified against ca.crt and the site's internal Service name, and reload mysqld's TLS when the files change ($"+protocol.EnvMySQLTLSDir+"; none: no TLS)")
	fs.StringVar(&o.siteAddresses, "dev-site-addresses", env(devsitemap.EnvVar, ""), "development-only site-address map file ($"+devsitemap.EnvVar+")")
	level := fs.String("log-level", env(protocol.EnvLogLevel, "info"), "debug, info, warn or error ($"+protocol.EnvLogLevel+")")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "mysql-addr":
			o.mysqlAddrSet = true
		case "peer-sites":
			o.peerSitesSet = true
		case "mysql-admin-addr":
			o.mysqlAdminAddrSet = true
		}
	})
	o.mysqlAddrSet = o.mysqlAddrSet || getenv(protocol.EnvMySQLAddr) != ""
	o.peerSitesSet = o.peerSitesSet || getenv(protocol.EnvPeerSites) != ""
	o.mysqlAdminAddrSet = o.mysqlAdminAddrSet || getenv(protocol.EnvMySQLAdminAddr) != ""
	o.mysqlPassword = getenv(protocol.EnvMySQLPassword)
	var err error
	if o.leaseTimeout, err = time.ParseDuration(*lease); err != nil {
		return o, fmt.Errorf("--lease-timeout %q: %v", *lease, err)
	}
	if o.peerInterval, err = time.ParseDuration(*interval); err != nil {
		return o, fmt.Errorf("--peer-check-interval %q: %v", *interval, err)
	}
	if o.logLevel, err = logging.ParseLevel(*level); err != nil {
		return o, fmt.Errorf("--log-level: %v", err)
	}
	return o, nil
}

// sidecarConfig resolves credentials and addresses.
func (o options) sidecarConfig() (sidecar.Config, error) {
	cfg := sidecar.Config{Namespace: o.namespace, Group: o.group, Site: o.site, PodUID: o.podUID, OperatorEndpoint: o.operatorEndpoint,
		LeaseTimeout: o.leaseTimeout, PeerCheckInterval: o.peerInterval}
	user, err := secretValue("--mysql-user-file", o.mysqlUserFile, o.mysqlUser)
	if err != nil {
		return cfg, err
	}
	pass, err := secretValue("--mysql-password-file", o.mysqlPasswordFile, o.mysqlPassword)
	if err != nil {
		return cfg, err
	}
	cfg.MySQL = mysql.Options{Addr: o.mysqlAddr, User: user, Password: pass, Program: sidecar.Program}
	cfg.MySQLAdminAddr, cfg.MySQLPIDFile = o.mysqlAdminAddr, o.mysqlPIDFile
	cfg.TLSDir = o.mysqlTLSDir
	if o.mysqlPasswordDir != "" {
		cfg.MySQL.PasswordSource = sidecar.NewPasswordFile(o.mysqlPasswordDir, pass).Password
	}

	var resolver siteaddr.Resolver = siteaddr.Cluster{SidecarPort: protocol.SidecarPort}
	var dev *devsitemap.Map
	if o.siteAddresses != "" {
		if dev, err = devsitemap.Load(o.siteAddresses); err != nil {
			return cfg, fmt.Errorf("--dev-site-addresses: %w", err)
		}
		resolver = dev
		if !o.mysqlAddrSet {
			if cfg.MySQL.Addr, err = dev.MySQLAddr(o.key(o.site)); err != nil {
				return cfg, fmt.Errorf("--dev-site-addresses: %w", err)
			}
		}
		// A development map names no administrative interface: fence over
		// the ordinary one unless told otherwise.
		if !o.mysqlAdminAddrSet {
			cfg.MySQLAdminAddr = cfg.MySQL.Addr
		}
	}
	sites := splitList(o.peerSites)
	if !o.peerSitesSet && dev != nil {
		sites = nil
		for _, e := range dev.Entries() {
			if e.Site.Namespace == o.namespace && e.Site.Group == o.group && e.Site.Site != o.site && e.Sidecar != "" {
				sites = append(sites, e.Site.Site)
			}
		}
	}
	for _, s := range sites {
		addr, err := resolver.SidecarAddr(o.key(s))
		if err != nil {
			return cfg, fmt.Errorf("--peer-sites: %w", err)
		}
		cfg.Peers = append(cfg.Peers, sidecar.Peer{Site: s, Addr: addr})
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("configuration: %s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return cfg, nil
}

func (o options) key(site string) siteaddr.SiteKey {
	return siteaddr.SiteKey{Namespace: o.namespace, Group: o.group, Site: site}
}

// secretValue reads a credential from a file (a mounted Secret key, trailing
// newline ignored) or takes the direct value. The value is never logged.
func secretValue(flagName, file, direct string) (string, error) {
	if file == "" {
		return direct, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("%s: %w", flagName, err)
	}
	v := strings.TrimRight(string(b), "\r\n")
	if v == "" {
		return "", fmt.Errorf("%s: %s is empty", flagName, file)
	}
	return v, nil
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
