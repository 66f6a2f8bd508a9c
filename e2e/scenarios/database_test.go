//go:build e2e

package scenarios

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/mysql"
)

// TestSampleDatabaseReadyAndSurvivesFailover is what a new user tries: the
// playground's sample MysqlDatabase turns Ready, its owner (password from
// the sample Secret) creates a table in the schema, the application
// account writes and reads it, and after the primary crashes and the group
// fails over the database stays Ready throughout and the new active site
// serves the same schema, owner and row.
func TestSampleDatabaseReadyAndSurvivesFailover(t *testing.T) {
	requireReady(t)
	waitCooldown(t)
	ctx := context.Background()
	var db *v1alpha1.MysqlDatabase
	eventually(t, 90*time.Second, func() string {
		var err error
		if db, err = pg.Ship.ShipstreamV1alpha1().MysqlDatabases(pg.Namespace).Get(ctx, pg.Database, metav1.GetOptions{}); err != nil {
			return err.Error()
		}
		if c := apimeta.FindStatusCondition(db.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Sprintf("MysqlDatabase %s: phase %s, Ready %+v", pg.Database, db.Status.Phase, c)
		}
		return ""
	})
	if db.Status.AppliedCharacterSet == "" || db.Status.ObservedGeneration != db.Generation {
		t.Fatalf("status %+v", db.Status)
	}
	sec, err := pg.CP.Client().CoreV1().Secrets(pg.Namespace).Get(ctx, db.Spec.Owner.PasswordSecretKeyRef.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ownerPass := string(sec.Data["password"])
	schema := db.Spec.DatabaseName

	// connect opens the active site's mysqld over the banner's TLS as user.
	connect := func(user, pass string) *mysql.Client {
		t.Helper()
		app, err := pg.AppTLS(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := app.ClientTLS()
		if err != nil {
			t.Fatal(err)
		}
		if user == "" {
			user, pass = app.User, app.Password
		}
		c, err := mysql.Open(mysql.Options{Addr: net.JoinHostPort(app.Host, app.Port), User: user, Password: pass, TLS: cfg,
			Program: "bloodraven-e2e-database", StatementTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	owner := connect(db.Spec.Owner.Username, ownerPass)
	if _, err := owner.DB().ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+schema+".e2e_items (id INT, note VARCHAR(40))"); err != nil {
		t.Fatalf("the owner cannot create a table: %v", err)
	}
	app := connect("", "")
	if _, err := app.DB().ExecContext(ctx, "INSERT INTO "+schema+".e2e_items VALUES (1, 'before the failover')"); err != nil {
		t.Fatalf("the application account cannot write the owner's table: %v", err)
	}

	// Ready is sampled all through the failover.
	var notReady atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			d, err := pg.Ship.ShipstreamV1alpha1().MysqlDatabases(pg.Namespace).Get(ctx, pg.Database, metav1.GetOptions{})
			if err != nil {
				continue
			}
			if c := apimeta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
				notReady.CompareAndSwap(nil, fmt.Sprintf("phase %s Ready %+v", d.Status.Phase, c))
			}
		}
	})
	// The row must be on the other site before the crash, or the failover
	// would rightly refuse (or lose) it.
	from := group(t).Status.ActiveSite
	eventually(t, 30*time.Second, func() string {
		g := group(t)
		a := siteStatus(g, from).GTIDExecuted
		for _, s := range g.Status.Sites {
			if s.Name != from && s.Role == "PrimaryCandidate" && s.GTIDExecuted != a {
				return fmt.Sprintf("site %s has %s, %s has %s", s.Name, s.GTIDExecuted, from, a)
			}
		}
		return ""
	})
	fault(t, from, "crash")
	t.Cleanup(func() { restartIfDown(from) })
	to := failedOver(t, from, 90*time.Second)
	time.Sleep(2 * time.Second) // the controller's reconciles on the new active site
	close(stop)
	wg.Wait()
	if v := notReady.Load(); v != nil {
		t.Fatalf("the database was not Ready during the failover %s -> %s: %s", from, to, v)
	}

	owner2 := connect(db.Spec.Owner.Username, ownerPass)
	if _, err := owner2.DB().ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+schema+".e2e_after (id INT)"); err != nil {
		t.Fatalf("the owner cannot work on the new active site %s: %v", to, err)
	}
	app2 := connect("", "")
	var n int
	if err := app2.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM "+schema+".e2e_items").Scan(&n); err != nil || n < 1 {
		t.Fatalf("the application account reads %d rows on %s (%v), want the row written before the failover", n, to, err)
	}
	if _, err := app2.DB().ExecContext(ctx, "INSERT INTO "+schema+".e2e_items VALUES (2, 'after the failover')"); err != nil {
		t.Fatalf("the application account cannot write on %s: %v", to, err)
	}
}
