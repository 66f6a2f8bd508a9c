package topologymanager

import (
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/shipstream/bloodraven/pkg/accounts"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// Credentials are the MySQL accounts the manager uses for a group. They are
// never logged, recorded in Events or written to status.
type Credentials struct {
	// User and Password: the operator account (observe, fence, repoint,
	// clone recipient).
	User, Password string
	// ReplicationUser and ReplicationPassword: what followers replicate
	// with, and the clone donor account.
	ReplicationUser, ReplicationPassword string
	// Behind is, by site, the operator password a site that missed a
	// rotation while unreachable still has (appliedEntry.Behind): the
	// manager connects to it with that one until it caught up.
	Behind map[string]string
	// SecretErr is why the credential Secrets could not be read when the
	// passwords above come from the applied-password store instead (the
	// previous password keeps working; CredentialsReady says why).
	SecretErr error
}

// CredentialSource reads a group's credentials.
type CredentialSource interface {
	Get(g *v1alpha1.MysqlFailoverGroup) (Credentials, error)
}

// Keys of the operator Secret (spec.credentials.operatorSecretName).
const (
	SecretKeyUsername            = accounts.SecretKeyUsername
	SecretKeyPassword            = accounts.SecretKeyPassword
	SecretKeyReplicationUser     = accounts.SecretKeyReplicationUser
	SecretKeyReplicationPassword = accounts.SecretKeyReplicationPassword
)

// secretCredentials reads the credential Secrets through the Secret
// informer of the group's namespace, and the passwords the servers accept
// from the applied-password store (AppliedSecretName): during a rotation
// the Secret already holds a password the servers may not have yet.
type secretCredentials struct{ c *Controller }

func newSecretCredentials(c *Controller) (CredentialSource, error) {
	for _, f := range c.informers.Kube {
		// A handler-less registration makes the controller wait for the
		// Secret cache before its first reconcile.
		if err := c.Watch(f.Core().V1().Secrets().Informer(), cache.ResourceEventHandlerFuncs{}); err != nil {
			return nil, err
		}
	}
	return secretCredentials{c: c}, nil
}

func (s secretCredentials) lister(ns string) corelisters.SecretNamespaceLister {
	return s.c.informers.KubeFor(ns).Core().V1().Secrets().Lister().Secrets(ns)
}

// secretData is a SecretGetter over the lister.
func (s secretCredentials) secretData(ns string) accounts.SecretGetter {
	return func(name string) (map[string][]byte, error) {
		sec, err := s.lister(ns).Get(name)
		if err != nil {
			return nil, err
		}
		return sec.Data, nil
	}
}

func (s secretCredentials) Get(g *v1alpha1.MysqlFailoverGroup) (Credentials, error) {
	if g.Spec.Credentials.OperatorSecretName == "" {
		return Credentials{}, fmt.Errorf("spec.credentials.operatorSecretName is empty")
	}
	if s.c.informers.KubeFor(g.Namespace) == nil {
		return Credentials{}, fmt.Errorf("namespace %s is not watched", g.Namespace)
	}
	applied := readApplied(s.lister(g.Namespace), g)
	accts, err := accounts.FromSecrets(g.Spec.Credentials, s.secretData(g.Namespace))
	if err != nil {
		// The previous passwords keep working: use what the store says the
		// servers accept, if it knows.
		if c, ok := applied.credentials(nil); ok {
			c.SecretErr = err
			return c, nil
		}
		return Credentials{}, fmt.Errorf("spec.credentials: %w", err)
	}
	c, _ := applied.credentials(accts)
	return c, nil
}

// credentialsFromData validates the operator Secret's keys; errors name
// the Secret and the key, never a value.
func credentialsFromData(secret string, data map[string][]byte) (Credentials, error) {
	accts, err := accounts.FromSecrets(v1alpha1.CredentialsSpec{OperatorSecretName: secret},
		func(string) (map[string][]byte, error) { return data, nil })
	if err != nil {
		return Credentials{}, err
	}
	c, _ := appliedPasswords{}.credentials(accts)
	return c, nil
}

// AppliedSecretName is the group's applied-password store: a Secret the
// operator owns holding, per role, the rotation state (the passwords the
// servers accept). It is what lets the operator survive its own restart
// mid-rotation; it is never mounted into a pod.
func AppliedSecretName(group string) string { return group + "-bloodraven-applied-credentials" }

// appliedEntry is one role's stored rotation.
type appliedEntry struct {
	User       string    `json:"user"`
	Phase      string    `json:"phase,omitempty"`
	Current    string    `json:"current"`
	Next       string    `json:"next,omitempty"`
	AuthBefore string    `json:"authBefore,omitempty"`
	Since      time.Time `json:"since,omitempty"`
	// AppliedGTIDs is the active site's gtid_executed right after the
	// ALTER: a site that contains it has the new password.
	AppliedGTIDs string `json:"appliedGTIDs,omitempty"`
	// Unmoved (the replication account only) are the sites whose
	// replication channel was not moved to the new password because they
	// could not be reached then: their channel keeps a password that stops
	// working at the discard, until the manager moves it when they return
	// (moveReturnedChannels). Kept across the rotation's phases.
	Unmoved []string `json:"unmoved,omitempty"`
	// Behind and BehindGTIDs (the operator account only): the password
	// the Unmoved sites still have (they missed the ALTER: it reaches them
	// by replication once their channel is moved), which the manager
	// connects to them with until they executed BehindGTIDs (the active
	// site's gtid_executed after the ALTER they missed).
	Behind      string `json:"behind,omitempty"`
	BehindGTIDs string `json:"behindGTIDs,omitempty"`
}

func (e appliedEntry) rotation() accounts.Rotation {
	return accounts.Rotation{Phase: accounts.Phase(e.Phase), Current: e.Current, Next: e.Next, AuthBefore: e.AuthBefore, Since: e.Since}
}

func entryOf(user string, r accounts.Rotation, gtids string) appliedEntry {
	return appliedEntry{User: user, Phase: string(r.Phase), Current: r.Current, Next: r.Next, AuthBefore: r.AuthBefore, Since: r.Since, AppliedGTIDs: gtids}
}

// appliedPasswords is the store's content by role.
type appliedPasswords map[accounts.Role]appliedEntry

// readApplied reads the store from the lister; a missing or unreadable
// store is empty (a role missing from it starts at its Secret's password).
func readApplied(l corelisters.SecretNamespaceLister, g *v1alpha1.MysqlFailoverGroup) appliedPasswords {
	sec, err := l.Get(AppliedSecretName(g.Name))
	if err != nil {
		return appliedPasswords{}
	}
	return decodeApplied(sec)
}

func decodeApplied(sec *corev1.Secret) appliedPasswords {
	out := appliedPasswords{}
	for _, r := range accounts.Roles() {
		var e appliedEntry
		if raw, ok := sec.Data[string(r)]; ok && json.Unmarshal(raw, &e) == nil && e.User != "" {
			out[r] = e
		}
	}
	return out
}

func (a appliedPasswords) encode() map[string][]byte {
	out := map[string][]byte{}
	for r, e := range a {
		raw, _ := json.Marshal(e)
		out[string(r)] = raw
	}
	return out
}

// credentials are the manager's connection credentials: each account's
// user from accts (the Secrets) and the password the store says the
// servers accept for it (the Secret's when the store has none, or names
// another user). Without accts, the store's alone; ok is false when it
// lacks the operator account.
func (a appliedPasswords) credentials(accts []accounts.Account) (Credentials, bool) {
	use := func(acc accounts.Account) string {
		if e, ok := a[acc.Role]; ok && e.User == acc.User {
			return e.rotation().Use()
		}
		return acc.Password
	}
	if accts == nil {
		if _, ok := a[accounts.RoleOperator]; !ok {
			return Credentials{}, false
		}
		for _, r := range []accounts.Role{accounts.RoleOperator, accounts.RoleReplication} {
			if e, ok := a[r]; ok {
				accts = append(accts, accounts.Account{Role: r, User: e.User, Password: e.rotation().Use()})
			}
		}
	}
	op, _ := accounts.Find(accts, accounts.RoleOperator)
	repl := accounts.ReplicationOf(accts)
	c := Credentials{User: op.User, Password: use(op), ReplicationUser: repl.User, ReplicationPassword: use(repl)}
	if e, ok := a[accounts.RoleOperator]; ok && e.User == op.User && e.Behind != "" {
		c.Behind = map[string]string{}
		for _, site := range e.Unmoved {
			c.Behind[site] = e.Behind
		}
	}
	return c, true
}
