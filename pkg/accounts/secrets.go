package accounts

import (
	"fmt"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// Keys of the credential Secrets (spec.credentials).
const (
	SecretKeyUsername            = "username"
	SecretKeyPassword            = "password"
	SecretKeyReplicationUser     = "MYSQL_REPLICATION_USER"
	SecretKeyReplicationPassword = "MYSQL_REPLICATION_PASSWORD"
)

// SecretOf is the Secret of role r in c ("" when the group names none).
// The replication account lives in the operator Secret.
func SecretOf(c v1alpha1.CredentialsSpec, r Role) string {
	switch r {
	case RoleOperator, RoleReplication:
		return c.OperatorSecretName
	case RoleApp:
		return c.AppSecretName
	case RoleReadOnly:
		return c.ReadOnlySecretName
	case RoleMonitor:
		return c.MonitorSecretName
	case RoleBackup:
		return c.BackupSecretName
	}
	return ""
}

// SecretGetter returns a Secret's data, or an error naming why it has none.
type SecretGetter func(name string) (map[string][]byte, error)

// FromSecrets reads every account spec.credentials names, in Roles()
// order. The replication account is left out when MYSQL_REPLICATION_USER
// is unset or names the operator account (the operator account then
// replicates). Errors name the Secret and the key, never a value; Validate
// has judged the result when no error is returned.
func FromSecrets(c v1alpha1.CredentialsSpec, get SecretGetter) ([]Account, error) {
	var out []Account
	cache := map[string]map[string][]byte{}
	for _, r := range Roles() {
		name := SecretOf(c, r)
		if name == "" {
			if r == RoleOperator {
				return nil, fmt.Errorf("spec.credentials.operatorSecretName is empty")
			}
			continue
		}
		data, ok := cache[name]
		if !ok {
			d, err := get(name)
			if err != nil {
				return nil, fmt.Errorf("the %s account's Secret %s: %w", r, name, err)
			}
			data, cache[name] = d, d
		}
		a, ok, err := accountOf(r, name, data)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, a)
		}
	}
	if err := Validate(out); err != nil {
		return nil, err
	}
	return out, nil
}

// ReplicationOf is the account replicas and clone recipients use: the
// replication account when accts has one, else the operator's.
func ReplicationOf(accts []Account) Account {
	var op Account
	for _, a := range accts {
		switch a.Role {
		case RoleReplication:
			return a
		case RoleOperator:
			op = a
		}
	}
	return op
}

// Find is the account of role r in accts.
func Find(accts []Account, r Role) (Account, bool) {
	for _, a := range accts {
		if a.Role == r {
			return a, true
		}
	}
	return Account{}, false
}

func accountOf(r Role, secret string, data map[string][]byte) (Account, bool, error) {
	userKey, pwKey := SecretKeyUsername, SecretKeyPassword
	if r == RoleReplication {
		userKey, pwKey = SecretKeyReplicationUser, SecretKeyReplicationPassword
		u := string(data[userKey])
		if u == "" || u == string(data[SecretKeyUsername]) {
			return Account{}, false, nil
		}
	}
	for _, k := range []string{userKey, pwKey} {
		if len(data[k]) == 0 {
			return Account{}, false, fmt.Errorf("Secret %s: key %q of the %s account is missing or empty", secret, k, r)
		}
	}
	return Account{Role: r, User: string(data[userKey]), Password: string(data[pwKey])}, true, nil
}

// The sidecars' password Secret: the operator writes the operator
// account's password the servers accept (and, during a rotation's overlap,
// the previous one), the pod mounts it, and the sidecar re-reads the file
// for each new connection, so a rotation reaches it without a restart (an
// environment variable never changes in a running container).
const (
	SidecarPasswordKey         = "password"
	SidecarPreviousPasswordKey = "password-previous"
)

// SidecarSecretName is the group's sidecar password Secret.
func SidecarSecretName(group string) string { return group + "-bloodraven-sidecar-mysql" }
