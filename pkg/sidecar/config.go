// Package sidecar is the Bloodraven sidecar that runs next to each mysqld: it
// reports the local mysqld's health and state, answers its peers, and fences
// the local mysqld (super_read_only=ON) when it may no longer be the writable
// site. The fencing rule itself is the pure function in package fencing; this
// package does the I/O around it and serves the HTTP endpoints of
// pkg/protocol. docs/sidecar.md describes the endpoints, the configuration,
// the rule and its timing bound.
package sidecar

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/protocol"
)

// Peer is another site's sidecar.
type Peer struct {
	Site string
	Addr string // host:port
}

// Config configures a Sidecar.
type Config struct {
	Namespace, Group, Site string
	// PodUID is the pod's metadata.uid, reported in every Instance so that
	// a sidecar in a replacement pod cannot vouch for the old pod's mysqld.
	// Empty (development only) means no fence proof is ever accepted.
	PodUID string
	// MySQL reaches the local mysqld with the operator's credentials.
	MySQL mysql.Options
	// MySQLAdminAddr is mysqld's administrative connection interface
	// (admin_address:admin_port), which the fencing sequence uses with
	// MySQL's credentials: it admits accounts with SERVICE_CONNECTION_ADMIN
	// whatever max_connections. Empty means MySQL.Addr (development only).
	MySQLAdminAddr string
	// MySQLPIDFile is mysqld's pid-file; the fencing sequence stops the
	// process it names when a fence does not take effect in time. Empty
	// means no process stop (development only).
	MySQLPIDFile string
	// TLSDir is where spec.tls's Secret is mounted (ca.crt, tls.crt,
	// tls.key); set, every connection to mysqld uses TLS verified against
	// ca.crt and the site's internal Service name, and a change of the
	// files is applied with ALTER INSTANCE RELOAD TLS (tls.go).
	TLSDir string
	// OperatorEndpoint is host:port of the operator's auxiliary listener.
	OperatorEndpoint string
	Peers            []Peer
	// LeaseTimeout and PeerCheckInterval are spec.sidecar's values.
	LeaseTimeout      time.Duration
	PeerCheckInterval time.Duration
	// RequestTimeout bounds each request to the operator, to a peer and
	// each observation of mysqld within a round. Zero means
	// protocol.SidecarRequestTimeout(PeerCheckInterval).
	RequestTimeout time.Duration
	// FenceTimeout is the fencing sequence's budget (fencing.NewPlan).
	// Zero means protocol.SelfFenceStatementTimeout.
	FenceTimeout time.Duration
	// WedgedAfter is how long the fencing loop may go without completing
	// a round before /livez fails. Zero means twice the longest a healthy
	// round can take (see defaultWedgedAfter).
	WedgedAfter time.Duration
	// Version is the sidecar's release, reported in /status and /peer/ping.
	Version string
	// Logger receives the sidecar's records; nil discards them.
	Logger *slog.Logger
	// HTTPClient talks to the operator and the peers; nil builds one.
	HTTPClient *http.Client
}

// withDefaults fills the zero durations.
func (c Config) withDefaults() Config {
	if c.RequestTimeout == 0 {
		c.RequestTimeout = protocol.SidecarRequestTimeout(c.PeerCheckInterval)
	}
	if c.FenceTimeout == 0 {
		c.FenceTimeout = protocol.SelfFenceStatementTimeout
	}
	if c.WedgedAfter == 0 {
		c.WedgedAfter = defaultWedgedAfter(c.PeerCheckInterval, c.RequestTimeout, c.FenceTimeout)
	}
	if c.MySQL.Program == "" {
		c.MySQL.Program = Program
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Transport: &http.Transport{
			Proxy:               nil, // the sidecar talks to in-cluster addresses only
			DialContext:         (&net.Dialer{Timeout: c.RequestTimeout}).DialContext,
			MaxIdleConnsPerHost: 2,
			IdleConnTimeout:     time.Minute,
		}}
	}
	return c
}

// Program is the program_name connection attribute the sidecar sends to
// mysqld (the simulator partitions clients by it).
const Program = "bloodraven-sidecar"

// defaultWedgedAfter is twice the longest healthy round: a wait of one check
// interval, the round's requests, and a fence.
func defaultWedgedAfter(interval, request, fence time.Duration) time.Duration {
	return 2 * (interval + request + fence)
}

// Validate checks the configuration; errors name the flag-level field.
func (c Config) Validate() error {
	var errs []error
	req := func(name, v string) {
		if v == "" {
			errs = append(errs, fmt.Errorf("%s is required", name))
		}
	}
	req("namespace", c.Namespace)
	req("group", c.Group)
	req("site", c.Site)
	req("mysql address", c.MySQL.Addr)
	if c.MySQLAdminAddr != "" {
		if err := validateHostPort(c.MySQLAdminAddr); err != nil {
			errs = append(errs, fmt.Errorf("mysql admin address: %w", err))
		}
	}
	req("mysql user", c.MySQL.User)
	if err := validateHostPort(c.OperatorEndpoint); err != nil {
		errs = append(errs, fmt.Errorf("operator endpoint: %w", err))
	}
	if c.LeaseTimeout < 2*time.Second || c.LeaseTimeout > 5*time.Minute {
		errs = append(errs, fmt.Errorf("lease timeout %s must be between 2s and 5m", c.LeaseTimeout))
	}
	if c.PeerCheckInterval < 500*time.Millisecond || c.PeerCheckInterval > time.Minute {
		errs = append(errs, fmt.Errorf("peer check interval %s must be between 500ms and 1m", c.PeerCheckInterval))
	}
	if c.PeerCheckInterval >= c.LeaseTimeout {
		errs = append(errs, fmt.Errorf("peer check interval %s must be shorter than the lease timeout %s", c.PeerCheckInterval, c.LeaseTimeout))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"request timeout", c.RequestTimeout}, {"fence timeout", c.FenceTimeout}, {"wedged-after", c.WedgedAfter}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s %s must not be negative", d.name, d.v))
		}
	}
	seen := map[string]bool{c.Site: true}
	for i, p := range c.Peers {
		if p.Site == "" {
			errs = append(errs, fmt.Errorf("peer %d: site is required", i))
		} else if seen[p.Site] {
			errs = append(errs, fmt.Errorf("peer %q: listed twice or names this sidecar's own site", p.Site))
		}
		seen[p.Site] = true
		if err := validateHostPort(p.Addr); err != nil {
			errs = append(errs, fmt.Errorf("peer %q address: %w", p.Site, err))
		}
	}
	return errors.Join(errs...)
}

func validateHostPort(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: want host:port", addr)
	}
	if host == "" {
		return fmt.Errorf("%q: host is empty", addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%q: port must be a number from 1 to 65535", addr)
	}
	return nil
}
