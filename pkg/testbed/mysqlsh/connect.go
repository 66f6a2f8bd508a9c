package mysqlsh

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	driver "github.com/go-sql-driver/mysql"
)

// readPassword is --passwords-from-stdin: the first line of stdin.
func readPassword(stdin io.Reader) (string, error) {
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// tlsConfig is the client TLS configuration of the shell's ssl options, as
// MySQL clients read them: without --ssl-mode, PREFERRED, or VERIFY_CA
// when --ssl-ca is given; VERIFY_CA checks the chain against the CA but not
// the name, VERIFY_IDENTITY both. nil means no TLS; "preferred" is returned
// as preferred=true (the driver's own mode).
func (c connection) tlsConfig() (cfg *tls.Config, preferred bool, err error) {
	mode := c.sslMode
	if mode == "" {
		mode = "PREFERRED"
		if c.sslCA != "" {
			mode = "VERIFY_CA"
		}
	}
	if mode == "DISABLED" {
		return nil, false, nil
	}
	cfg = &tls.Config{MinVersion: tls.VersionTLS12}
	if c.sslCert != "" || c.sslKey != "" {
		pair, err := tls.LoadX509KeyPair(c.sslCert, c.sslKey)
		if err != nil {
			return nil, false, fmt.Errorf("SSL connection error: Unable to get private key: %v", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	var pool *x509.CertPool
	if c.sslCA != "" {
		pem, err := os.ReadFile(c.sslCA)
		if err != nil {
			return nil, false, fmt.Errorf("SSL connection error: Error while reading file '%s': %v", c.sslCA, err)
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, false, fmt.Errorf("SSL connection error: no certificate in %s", c.sslCA)
		}
	}
	switch mode {
	case "PREFERRED":
		return nil, true, nil
	case "REQUIRED":
		cfg.InsecureSkipVerify = true // encryption only, as REQUIRED means
	case "VERIFY_CA":
		if pool == nil {
			return nil, false, errors.New("SSL connection error: CA certificate is required if ssl-mode is VERIFY_CA or VERIFY_IDENTITY")
		}
		cfg.InsecureSkipVerify = true // the chain is checked below, the name is not
		cfg.VerifyPeerCertificate = verifyChain(pool)
	case "VERIFY_IDENTITY":
		if pool == nil {
			return nil, false, errors.New("SSL connection error: CA certificate is required if ssl-mode is VERIFY_CA or VERIFY_IDENTITY")
		}
		cfg.RootCAs, cfg.ServerName = pool, c.host
	}
	return cfg, false, nil
}

func verifyChain(pool *x509.CertPool) func([][]byte, [][]*x509.Certificate) error {
	return func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 {
			return errors.New("SSL connection error: the server sent no certificate")
		}
		certs := make([]*x509.Certificate, len(raw))
		for i, r := range raw {
			c, err := x509.ParseCertificate(r)
			if err != nil {
				return err
			}
			certs[i] = c
		}
		inter := x509.NewCertPool()
		for _, c := range certs[1:] {
			inter.AddCert(c)
		}
		_, err := certs[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter})
		return err
	}
}

// open connects the pool the dump's sessions come from; the first
// connection is made at once so that a bad address or password fails here,
// as mysqlsh fails before it runs the operation.
func (c connection) open(ctx context.Context, sessions int) (*sql.DB, error) {
	cfg := driver.NewConfig()
	cfg.Net, cfg.Addr = "tcp", net.JoinHostPort(c.host, strconv.Itoa(c.port))
	cfg.User, cfg.Passwd = c.user, c.password
	cfg.Timeout = 10 * time.Second
	if c.connectTimeoutMillis > 0 {
		cfg.Timeout = time.Duration(c.connectTimeoutMillis) * time.Millisecond
	}
	cfg.Params = map[string]string{}
	cfg.ConnectionAttributes = "program_name:mysqlsh"
	tlsCfg, preferred, err := c.tlsConfig()
	if err != nil {
		return nil, err
	}
	cfg.TLS = tlsCfg
	if preferred {
		cfg.TLSConfig = "preferred"
	}
	conn, err := driver.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(sessions)
	db.SetMaxIdleConns(sessions)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// mysqlError formats a server error as mysqlsh prints it: "MySQL Error
// 1045 (28000): Access denied ...".
func mysqlError(err error) string {
	var me *driver.MySQLError
	if errors.As(err, &me) {
		state := ""
		if me.SQLState != [5]byte{} {
			state = " (" + string(me.SQLState[:]) + ")"
		}
		return fmt.Sprintf("MySQL Error %d%s: %s", me.Number, state, me.Message)
	}
	return "MySQL Error 2003 (HY000): " + err.Error()
}

func errNumber(err error) uint16 {
	var me *driver.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}
