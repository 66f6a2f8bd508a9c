//go:build e2e

package scenarios

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/testbed/playground"
)

// deployClient is a deploy API client that trusts the playground's
// self-signed certificate (and checks the host name against it).
func deployClient(t *testing.T) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(pg.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("no certificate in " + pg.CAFile)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// apiResult is one deploy API answer.
type apiResult struct {
	code int
	body map[string]any
	raw  string
}

func (r apiResult) str(key string) string {
	s, _ := r.body[key].(string)
	return s
}

// call sends method path (under /deploy/v1) with an optional JSON body.
func call(t *testing.T, token, method, path string, body any, header ...string) apiResult {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, pg.DeployURL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := deployClient(t).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := apiResult{code: resp.StatusCode, raw: string(raw)}
	_ = json.Unmarshal(raw, &r.body)
	return r
}

func token(t *testing.T) string {
	t.Helper()
	tok, err := pg.MintToken(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// requireReady waits for the group's Ready condition.
func requireReady(t *testing.T) {
	t.Helper()
	if err := pg.WaitGroupReady(context.Background(), 2*time.Minute); err != nil {
		t.Fatal(err)
	}
}

func group(t *testing.T) *v1alpha1.MysqlFailoverGroup {
	t.Helper()
	g, err := pg.Ship.ShipstreamV1alpha1().MysqlFailoverGroups(pg.Namespace).Get(context.Background(), pg.Group, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// eventually polls f until it returns "" or timeout passes, then fails
// with f's last answer.
func eventually(t *testing.T, timeout time.Duration, f func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		msg := f()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, msg)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func newOperationID() string { return playground.NewUUID() }
