//go:build e2e

package scenarios

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/mysql"
)

// TestRotationUnderWriteLoad changes the operator Secret's password (the
// sample's replication account is the operator's, so that rotates every
// channel too) and the app Secret's while an application writes as the app
// account over TLS, moving to the new password once the operator announced
// its overlap (the operator runs with a 15 s overlap). Judged by the
// simulators: no managed consumer (the operator, each real sidecar, each
// receiver: all log in as the operator account) nor the application failed
// to authenticate; CredentialsReady ends CredentialsCurrent; the old
// passwords are refused everywhere. A clean restart of each replica's
// mysqld afterwards makes its sidecar and its receiver log in again: with
// the old passwords discarded, a sidecar that did not follow its password
// file, or a channel left on the old password, would be refused.
func TestRotationUnderWriteLoad(t *testing.T) {
	requireReady(t)
	ctx := context.Background()
	eventually(t, time.Minute, func() string { return credentialsReason(t, v1alpha1.ReasonCredentialsCurrent) })
	g := group(t)
	opUser := secretValue(t, g.Spec.Credentials.OperatorSecretName, "username")
	app, err := pg.AppTLS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := authFailures(t)
	var appPw atomic.Value
	appPw.Store(app.Password)
	writes, authErr := appWriteLoad(t, app.User, func() string { return appPw.Load().(string) })

	oldOp := rotateSecret(t, g.Spec.Credentials.OperatorSecretName)
	oldApp := rotateSecret(t, g.Spec.Credentials.AppSecretName)
	eventually(t, time.Minute, func() string {
		for _, ev := range groupEvents(t, v1alpha1.EventPasswordOverlapStarted) {
			if strings.Contains(ev, " "+app.User+" ") {
				return ""
			}
		}
		return "no PasswordOverlapStarted Event for the app account yet"
	})
	appPw.Store(secretValue(t, g.Spec.Credentials.AppSecretName, "password"))
	eventually(t, 90*time.Second, func() string { return credentialsReason(t, v1alpha1.ReasonCredentialsCurrent) })
	n := writes.Load()
	eventually(t, 30*time.Second, func() string {
		if writes.Load() <= n {
			return "no write acknowledged after the rotation"
		}
		return ""
	})
	for _, s := range pg.Sites {
		if s.Name == group(t).Status.ActiveSite {
			continue
		}
		fault(t, s.Name, "restart")
	}
	eventually(t, time.Minute, func() string {
		for _, s := range pg.Sites {
			if s.Name == group(t).Status.ActiveSite {
				continue
			}
			if st := simState(t, s.ControlURL()); st.IORunning != "Yes" {
				return fmt.Sprintf("site %s's receiver after the restart: %s", s.Name, st.IORunning)
			}
		}
		return ""
	})
	time.Sleep(3 * time.Second) // a sidecar polls its mysqld every second or two
	if err, _ := authErr.Load().(error); err != nil {
		t.Errorf("the application failed to authenticate: %v", err)
	}
	after := authFailures(t)
	for _, u := range []string{opUser, app.User} {
		if after[u] != before[u] {
			t.Errorf("user %s failed to authenticate %d times during the rotation (every site's simulator)", u, after[u]-before[u])
		}
	}
	cfg, err := pg.MySQLClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range pg.Sites {
		for user, pw := range map[string]string{opUser: oldOp, app.User: oldApp} {
			c, err := mysql.Open(mysql.Options{Addr: s.MySQLAddr, User: user, Password: pw, TLS: cfg, Program: "bloodraven-e2e-old-password"})
			if err == nil {
				err = c.DB().PingContext(ctx)
				c.Close()
			}
			if !mysql.IsNumber(err, 1045) {
				t.Errorf("user %s's old password on %s after the overlap: %v, want 1045", user, s.Name, err)
			}
		}
	}
}

func credentialsReason(t *testing.T, want string) string {
	c := apimeta.FindStatusCondition(group(t).Status.Conditions, v1alpha1.ConditionCredentialsReady)
	if c == nil || c.Reason != want {
		return fmt.Sprintf("CredentialsReady %+v, want reason %s", c, want)
	}
	return ""
}

func secretValue(t *testing.T, name, key string) string {
	t.Helper()
	sec, err := pg.CP.Client().CoreV1().Secrets(pg.Namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return string(sec.Data[key])
}

// rotateSecret sets a new password in the Secret and returns the old one.
func rotateSecret(t *testing.T, name string) string {
	t.Helper()
	api := pg.CP.Client().CoreV1().Secrets(pg.Namespace)
	sec, err := api.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old := string(sec.Data["password"])
	sec.Data["password"] = []byte(old + "-rotated")
	if _, err := api.Update(context.Background(), sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return old
}

func groupEvents(t *testing.T, reason string) []string {
	t.Helper()
	evs, err := pg.CP.Client().CoreV1().Events(pg.Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs.Items {
		if e.Reason == reason && e.InvolvedObject.Name == pg.Group {
			out = append(out, e.Message)
		}
	}
	return out
}

// authFailures sums every site simulator's failed authentications by
// user (GET /auth-failures of its fault API).
func authFailures(t *testing.T) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for _, s := range pg.Sites {
		resp, err := http.Get(s.ControlURL() + "/auth-failures")
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]uint64{}
		err = json.NewDecoder(resp.Body).Decode(&m)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("site %s's /auth-failures: %v", s.Name, err)
		}
		for u, n := range m {
			out[u] += n
		}
	}
	return out
}

type simStateView struct {
	IORunning string `json:"ioRunning"`
}

func simState(t *testing.T, url string) simStateView {
	t.Helper()
	var st simStateView
	resp, err := http.Get(url + "/state")
	if err != nil {
		return st
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(&st)
	return st
}

// appWriteLoad writes as the app account through the active site, a new
// TLS connection each time (as after a pool recycles), every 20 ms.
func appWriteLoad(t *testing.T, user string, password func() string) (*atomic.Int64, *atomic.Value) {
	t.Helper()
	cfg, err := pg.MySQLClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	var acked atomic.Int64
	var authErr atomic.Value
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			g, err := pg.Ship.ShipstreamV1alpha1().MysqlFailoverGroups(pg.Namespace).Get(ctx, pg.Group, metav1.GetOptions{})
			if err == nil {
				if s, ok := pg.Site(g.Status.ActiveSite); ok {
					c, err := mysql.Open(mysql.Options{Addr: s.MySQLAddr, User: user, Password: password(), TLS: cfg, Program: "bloodraven-e2e-app"})
					if err == nil {
						_, err = c.DB().ExecContext(ctx, "CREATE TABLE IF NOT EXISTS orders.rotation_load (id INT)")
						if err == nil {
							_, err = c.DB().ExecContext(ctx, "INSERT INTO orders.rotation_load VALUES (1)")
						}
						c.Close()
					}
					if err == nil {
						acked.Add(1)
					} else if mysql.IsNumber(err, 1045) {
						authErr.Store(err)
					}
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return &acked, &authErr
}
