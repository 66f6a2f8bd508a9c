package managerintegration

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/shipstream/bloodraven/pkg/accounts"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

var allRoles = []accounts.Role{accounts.RoleApp, accounts.RoleReadOnly, accounts.RoleMonitor, accounts.RoleBackup}

// TestAccountsBootstrapWithEveryRole: a group whose sites booted from the
// rendered init script bootstraps with every role's account on every site
// holding its role's grants, without any site minting GTIDs of its own for
// them (the followers replicate without divergence), and CredentialsReady
// True.
func TestAccountsBootstrapWithEveryRole(t *testing.T) {
	e := newAccountsEnv(t, threeSites, allRoles...)
	for name, s := range e.sites {
		if ex := s.Snapshot().Executed; !ex.IsEmpty() {
			t.Fatalf("site %s executed %s at first boot: the init script logged its accounts", name, ex)
		}
	}
	e.startOperator()
	e.create(e.groupWith(threeSites))
	e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	e.waitCondition(v1alpha1.ConditionCredentialsReady, metav1.ConditionTrue, v1alpha1.ReasonCredentialsCurrent)
	for _, r := range append([]accounts.Role{accounts.RoleReplication}, allRoles...) {
		e.waitRoleEverywhere(r, credUsers[r])
		for site := range e.sites {
			if err := e.loginWorks(site, credUsers[r], e.passwords[r]); err != nil {
				t.Errorf("the %s account cannot log in on %s: %v", r, site, err)
			}
		}
	}
	if n := e.failedAuths(acctOpUser, acctReplUser); len(n) > 0 {
		t.Errorf("managed consumers failed to authenticate: %v", n)
	}
	if evs := e.eventsOf(v1alpha1.EventAccountCreated); len(evs) > 0 {
		t.Errorf("accounts had to be created after first boot: %q", evs[0].Message)
	}
}

// TestAccountsRoleAddedLaterIsCreatedOnTheActiveSite: a role named after
// first boot is created on the active site only, and reaches the others by
// replication (never sent to a fenced site); a drifted grant is restored
// there and replicates too.
func TestAccountsRoleAddedLaterIsCreatedOnTheActiveSite(t *testing.T) {
	e := newAccountsEnv(t, threeSites, accounts.RoleApp)
	e.startOperator()
	g := e.groupWith(threeSites)
	e.create(g)
	e.waitCondition(v1alpha1.ConditionCredentialsReady, metav1.ConditionTrue, v1alpha1.ReasonCredentialsCurrent)
	for site := range e.sites {
		if _, err := e.showGrants(site, credUsers[accounts.RoleMonitor]); err == nil {
			t.Fatalf("site %s has the monitor account before the group names it", site)
		}
	}

	e.passwords[accounts.RoleMonitor] = "monitor-pw-1"
	e.writeSecret(accounts.RoleMonitor)
	e.updateCredentials(func(c *v1alpha1.CredentialsSpec) { c.MonitorSecretName = credSecrets[accounts.RoleMonitor] })
	e.waitRoleEverywhere(accounts.RoleMonitor, credUsers[accounts.RoleMonitor])
	e.waitEvent(v1alpha1.EventAccountCreated, "Normal")
	// Created on iad and replicated: the followers' GTIDs of it are iad's.
	iad := e.sites["iad"].Snapshot()
	for _, site := range []string{"pdx", "reader"} {
		s := e.sites[site].Snapshot()
		if !s.Executed.IsSubsetOf(iad.Executed) {
			t.Errorf("site %s executed %s that the active site lacks: an account statement ran there", site, s.Executed.Subtract(iad.Executed))
		}
	}
	if err := e.loginWorks("pdx", credUsers[accounts.RoleMonitor], "monitor-pw-1"); err != nil {
		t.Errorf("the monitor account cannot log in on a replica: %v", err)
	}

	// Drift: someone gives the app account SUPER and takes its DELETE.
	e.exec0("iad", "GRANT SUPER ON *.* TO "+accounts.Name(credUsers[accounts.RoleApp]),
		"REVOKE DELETE ON *.* FROM "+accounts.Name(credUsers[accounts.RoleApp]))
	e.waitEvent(v1alpha1.EventAccountGrantsRestored, "Warning")
	e.waitRoleEverywhere(accounts.RoleApp, credUsers[accounts.RoleApp])
	lines, _ := e.showGrants("reader", credUsers[accounts.RoleApp])
	if strings.Contains(strings.Join(lines, " "), "SUPER") {
		t.Errorf("the reader still shows SUPER: %q", lines)
	}
}

// TestAccountsBadInputIsAWarning: two roles with one username, and a
// missing Secret, change nothing on the servers and say why in
// CredentialsReady and a Warning; the operator keeps working with the
// passwords it has.
func TestAccountsBadInputIsAWarning(t *testing.T) {
	e := newAccountsEnv(t, threeSites, accounts.RoleApp)
	e.startOperator()
	e.create(e.groupWith(threeSites))
	e.waitCondition(v1alpha1.ConditionCredentialsReady, metav1.ConditionTrue, v1alpha1.ReasonCredentialsCurrent)

	e.updateCredentials(func(c *v1alpha1.CredentialsSpec) { c.BackupSecretName = "orders-nope" })
	g := e.waitCondition(v1alpha1.ConditionCredentialsReady, metav1.ConditionFalse, v1alpha1.ReasonCredentialsInvalid)
	if c := condition(g, v1alpha1.ConditionCredentialsReady); !contains(c.Message, "orders-nope", "previous passwords keep working") {
		t.Errorf("CredentialsReady does not name the missing Secret: %q", c.Message)
	}
	e.waitEvent(v1alpha1.EventCredentialsRejected, "Warning")

	// Two roles, one username.
	e.passwords[accounts.RoleBackup] = "backup-pw"
	credUsersBackup := credUsers[accounts.RoleBackup]
	credUsers[accounts.RoleBackup] = credUsers[accounts.RoleApp]
	t.Cleanup(func() { credUsers[accounts.RoleBackup] = credUsersBackup })
	e.writeSecret(accounts.RoleBackup)
	e.updateCredentials(func(c *v1alpha1.CredentialsSpec) { c.BackupSecretName = credSecrets[accounts.RoleBackup] })
	eventually(t, waitFor, "CredentialsReady names the shared username", func() error {
		c := condition(e.get(), v1alpha1.ConditionCredentialsReady)
		if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "same username") {
			return fmt.Errorf("%+v", c)
		}
		return nil
	})
	lines, err := e.showGrants("iad", credUsers[accounts.RoleApp])
	if err != nil || strings.Contains(strings.Join(lines, " "), "RELOAD") {
		t.Errorf("the shared account was given the backup role's grants: %q, %v", lines, err)
	}
	if c := condition(e.get(), v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("the group stopped being Ready over a credential problem: %+v", c)
	}
	if n := e.failedAuths(acctOpUser, acctReplUser); len(n) > 0 {
		t.Errorf("managed consumers failed to authenticate: %v", n)
	}
}

// updateCredentials changes spec.credentials, retried on a conflict with
// the operator's own writes of the group.
func (e *acctEnv) updateCredentials(change func(*v1alpha1.CredentialsSpec)) {
	e.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live := e.get()
		change(&live.Spec.Credentials)
		_, err := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).Update(e.t.Context(), live, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
}
