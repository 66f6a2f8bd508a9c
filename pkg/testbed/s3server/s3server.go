// Package s3server runs a real S3-compatible server for tests: the pinned versitygw that
// scripts/build-controlplane.sh builds into bin/ from its Go module, with its posix backend on a
// directory of the test's own. Each server listens on a free 127.0.0.1 port with random
// credentials, and is stopped by its own PID only (StartT also on test failure).
package s3server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/shipstream/bloodraven/e2e/framework"
	"github.com/shipstream/bloodraven/pkg/backup/objstore"
	"github.com/shipstream/bloodraven/pkg/testbed/testca"
)

// Region is the region the server answers for (versitygw's default).
const Region = "us-east-1"

// Server is one running versitygw.
type Server struct {
	// AccessKey and SecretKey are the root credentials, random per server.
	AccessKey, SecretKey string

	endpoint string
	caPEM    []byte // set when the server speaks TLS
	dataDir  string
	logPath  string
	cmd      *exec.Cmd
	done     chan struct{}
	waitErr  error
	client   *minio.Client
}

// Binary is bin/versitygw, or an error saying how to build it.
func Binary() (string, error) {
	p := filepath.Join(framework.BinDir(), "versitygw")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("bin/versitygw is missing (%v): run `make tools` (scripts/build-controlplane.sh builds it, pinned)", err)
	}
	return p, nil
}

// StartT starts a server in a temporary directory of t and stops it when t ends, failed or not.
// Under -short it skips t: the server is an integration dependency.
func StartT(t testing.TB) *Server { return startT(t, false) }

// StartTLST is StartT with the server on HTTPS, its certificate (for 127.0.0.1) issued by a
// throw-away CA that CA returns.
func StartTLST(t testing.TB) *Server { return startT(t, true) }

func startT(t testing.TB, useTLS bool) *Server {
	t.Helper()
	if testing.Short() {
		t.Skip("needs bin/versitygw (an integration test; -short skips it)")
	}
	s, err := start(context.Background(), t.TempDir(), useTLS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stopping versitygw: %v", err)
		}
	})
	return s
}

// Start runs versitygw with its posix backend below dir (created) and returns once it answers
// HTTP. The caller must Stop it.
func Start(ctx context.Context, dir string) (*Server, error) {
	return start(ctx, dir, false)
}

// StartTLS is Start on HTTPS (see StartTLST).
func StartTLS(ctx context.Context, dir string) (*Server, error) {
	return start(ctx, dir, true)
}

func start(ctx context.Context, dir string, useTLS bool) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	s := &Server{AccessKey: "AK" + randomHex(9), SecretKey: randomHex(20),
		dataDir: filepath.Join(dir, "data"), logPath: filepath.Join(dir, "versitygw.log")}
	if err := os.MkdirAll(s.dataDir, 0o750); err != nil {
		return nil, err
	}
	var tlsArgs []string
	if useTLS {
		if tlsArgs, err = s.writeCertificate(filepath.Join(dir, "tls")); err != nil {
			return nil, err
		}
	}
	var lastErr error
	// A free port can be taken between choosing it and versitygw binding it; try a few.
	for attempt := 0; attempt < 3; attempt++ {
		port, err := framework.FreePort()
		if err != nil {
			return nil, err
		}
		if lastErr = s.launch(ctx, bin, port, tlsArgs); lastErr == nil {
			return s, nil
		}
	}
	return nil, lastErr
}

// writeCertificate issues the server's certificate from a new CA into dir and returns the
// arguments that make versitygw serve it.
func (s *Server) writeCertificate(dir string) ([]string, error) {
	ca, err := testca.New("s3server test CA", 24*time.Hour)
	if err != nil {
		return nil, err
	}
	pair, err := ca.Issue("127.0.0.1")
	if err != nil {
		return nil, err
	}
	if err := ca.WriteDir(dir, pair); err != nil {
		return nil, err
	}
	s.caPEM = ca.CertPEM
	return []string{"--cert", filepath.Join(dir, "tls.crt"), "--key", filepath.Join(dir, "tls.key")}, nil
}

func (s *Server) launch(ctx context.Context, bin string, port int, tlsArgs []string) error {
	addr := "127.0.0.1:" + strconv.Itoa(port)
	logFile, err := os.OpenFile(s.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	args := append([]string{"--port", addr, "--region", Region, "--quiet"}, tlsArgs...)
	cmd := exec.Command(bin, append(args, "posix", s.dataDir)...)
	// The credentials go through the environment, not argv, where any process could read them.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(),
		"ROOT_ACCESS_KEY_ID=" + s.AccessKey, "ROOT_SECRET_ACCESS_KEY=" + s.SecretKey}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	errc := make(chan error, 1)
	starter <- func() { errc <- cmd.Start() }
	if err := <-errc; err != nil {
		_ = logFile.Close()
		return fmt.Errorf("start versitygw: %w", err)
	}
	scheme := "http://"
	if s.caPEM != nil {
		scheme = "https://"
	}
	s.cmd, s.done, s.endpoint = cmd, make(chan struct{}), scheme+addr
	go func() {
		s.waitErr = cmd.Wait()
		_ = logFile.Close()
		close(s.done)
	}()
	transport, err := s.transport()
	if err != nil {
		_ = s.Stop()
		return err
	}
	if err := s.waitReady(ctx, transport); err != nil {
		_ = s.Stop()
		return err
	}
	client, err := minio.New(addr, &minio.Options{Creds: credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""),
		Region: Region, Secure: s.caPEM != nil, Transport: transport})
	if err != nil {
		_ = s.Stop()
		return err
	}
	s.client = client
	return nil
}

// transport trusts the server's CA when it has one.
func (s *Server) transport() (*http.Transport, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if s.caPEM != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(s.caPEM) {
			return nil, errors.New("s3server: the test CA is not PEM")
		}
		t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return t, nil
}

// waitReady polls until the server answers any HTTP response, or fails when it exits.
func (s *Server) waitReady(ctx context.Context, transport http.RoundTripper) error {
	addr := s.endpoint
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	hc := &http.Client{Timeout: time.Second, Transport: transport}
	for {
		select {
		case <-s.done:
			return fmt.Errorf("versitygw exited before serving (%v); log %s:\n%s", s.waitErr, s.logPath, tail(s.logPath))
		case <-ctx.Done():
			return fmt.Errorf("versitygw on %s did not answer: %w; log:\n%s", addr, ctx.Err(), tail(s.logPath))
		case <-time.After(20 * time.Millisecond):
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, addr+"/", nil)
		if resp, err := hc.Do(req); err == nil {
			_ = resp.Body.Close()
			return nil
		}
	}
}

// Endpoint is the server's URL, http://127.0.0.1:PORT (https:// when started with TLS).
func (s *Server) Endpoint() string { return s.endpoint }

// CA is the PEM certificate of the CA that issued a TLS server's certificate (nil without TLS).
func (s *Server) CA() []byte { return s.caPEM }

// PID is the server process's id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// DataDir is the posix backend's root: one directory per bucket, one file per object.
func (s *Server) DataDir() string { return s.dataDir }

// Client is a minio client with the root credentials, for tests to see what the server holds.
func (s *Server) Client() *minio.Client { return s.client }

// Bucket creates a bucket.
func (s *Server) Bucket(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.client.MakeBucket(ctx, name, minio.MakeBucketOptions{Region: Region}); err != nil {
		return fmt.Errorf("create bucket %s: %w", name, err)
	}
	return nil
}

// Config is an objstore configuration for bucket and prefix on this server.
func (s *Server) Config(bucket, prefix string) objstore.S3Config {
	return objstore.S3Config{Endpoint: s.endpoint, Region: Region, Bucket: bucket, Prefix: prefix,
		AccessKey: s.AccessKey, SecretKey: s.SecretKey, CA: s.caPEM}
}

// Stop sends SIGTERM to the server (by its PID), and SIGKILL after five seconds.
func (s *Server) Stop() error {
	if s.cmd == nil {
		return nil
	}
	select {
	case <-s.done:
		return nil
	default:
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal versitygw (pid %d): %w", s.cmd.Process.Pid, err)
	}
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	return nil
}

// Exited reports whether the server process has ended.
func (s *Server) Exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// starter runs every fork on one OS thread that never exits: Pdeathsig fires when the thread
// that forked the child ends, so a permanent thread makes a dying test binary take its servers
// with it (as e2e/framework does for the control plane).
var starter = make(chan func())

func init() {
	go func() {
		runtime.LockOSThread()
		for f := range starter {
			f()
		}
	}()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func tail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(data) > 2000 {
		data = data[len(data)-2000:]
	}
	return string(data)
}
