package mysql

import (
	"crypto/tls"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
)

var errBadConn = driver.ErrBadConn

// Defaults for the product's connections.
const (
	DefaultDialTimeout = 5 * time.Second
	// DefaultReadTimeout bounds every read. It must exceed the longest
	// WAIT_FOR_EXECUTED_GTID_SET timeout, or the driver would drop the
	// connection while the server is still waiting.
	DefaultReadTimeout  = 60 * time.Second
	DefaultWriteTimeout = 10 * time.Second
	// readTimeoutMargin is how much longer than the longest wait a read may take.
	readTimeoutMargin = 5 * time.Second
)

// Options are the product's connection settings for one site.
type Options struct {
	Addr     string // host:port of mysqld
	User     string
	Password string
	// TLS enables TLS with this configuration; nil connects without TLS.
	TLS *tls.Config
	// PasswordSource, if set, gives the password of each new connection
	// instead of Password (a rotated password reaches a long-running pool).
	PasswordSource func() string
	// Interpolate sends arguments inlined in COM_QUERY (interpolateParams=true)
	// instead of preparing statements; both are supported.
	Interpolate bool
	DialTimeout time.Duration
	ReadTimeout time.Duration
	// WriteTimeout bounds every write.
	WriteTimeout time.Duration
	// MaxWait is the longest WAIT_FOR_EXECUTED_GTID_SET timeout callers will
	// use; ReadTimeout must exceed it by a margin.
	MaxWait time.Duration
	// Program is sent as the program_name connection attribute (visible in
	// performance_schema.session_connect_attrs), e.g. "bloodraven-operator".
	Program string
	// StatementTimeout is the deadline of each call that has none earlier.
	StatementTimeout time.Duration
}

// DriverConfig validates o and builds the driver configuration.
func (o Options) DriverConfig() (*mysqldriver.Config, error) {
	if o.Addr == "" {
		return nil, errors.New("mysql options: Addr is empty")
	}
	if o.User == "" {
		return nil, errors.New("mysql options: User is empty")
	}
	o = o.withDefaults()
	if o.MaxWait > 0 && o.ReadTimeout < o.MaxWait+readTimeoutMargin {
		return nil, fmt.Errorf("mysql options: ReadTimeout %s must exceed MaxWait %s by at least %s", o.ReadTimeout, o.MaxWait, readTimeoutMargin)
	}
	cfg := mysqldriver.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd = "tcp", o.Addr, o.User, o.Password
	cfg.TLS = o.TLS
	applyPasswordSource(cfg, o.PasswordSource)
	cfg.InterpolateParams = o.Interpolate
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = o.DialTimeout, o.ReadTimeout, o.WriteTimeout
	cfg.ParseTime = true
	if o.Program != "" {
		cfg.ConnectionAttributes = "program_name:" + o.Program
	}
	return cfg, nil
}

func (o Options) withDefaults() Options {
	if o.DialTimeout == 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = DefaultReadTimeout
		if o.MaxWait+readTimeoutMargin > o.ReadTimeout {
			o.ReadTimeout = o.MaxWait + readTimeoutMargin
		}
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.StatementTimeout == 0 {
		o.StatementTimeout = 10 * time.Second
	}
	return o
}

// DSN renders the options as a DSN string for tools and logs that need one.
// The password is included: never log the result. TLS as a *tls.Config
// cannot be expressed in a DSN; DSN fails if o.TLS is set (use Open).
func (o Options) DSN() (string, error) {
	if o.TLS != nil {
		return "", errors.New("mysql options: a DSN string cannot carry a TLS configuration; use Open")
	}
	cfg, err := o.DriverConfig()
	if err != nil {
		return "", err
	}
	return cfg.FormatDSN(), nil
}

// Open creates a Client for one site. It does not connect yet.
func Open(o Options) (*Client, error) {
	cfg, err := o.DriverConfig()
	if err != nil {
		return nil, err
	}
	conn, err := mysqldriver.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetConnMaxIdleTime(time.Minute)
	db.SetMaxOpenConns(4)
	o = o.withDefaults()
	return &Client{db: db, timeout: o.StatementTimeout, maxWait: o.maxWait(), addr: o.Addr}, nil
}

// maxWait is the longest WAIT_FOR_EXECUTED_GTID_SET timeout the read timeout
// leaves room for.
func (o Options) maxWait() time.Duration {
	if o.MaxWait > 0 {
		return o.MaxWait
	}
	if w := o.ReadTimeout - readTimeoutMargin; w > 0 {
		return w
	}
	return 0
}
