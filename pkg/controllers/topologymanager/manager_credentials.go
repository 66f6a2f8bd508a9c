package topologymanager

import (
	"fmt"

	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

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
}

// CredentialSource reads a group's credentials.
type CredentialSource interface {
	Get(g *v1alpha1.MysqlFailoverGroup) (Credentials, error)
}

// Keys of the operator Secret (spec.credentials.operatorSecretName).
const (
	SecretKeyUsername            = "username"
	SecretKeyPassword            = "password"
	SecretKeyReplicationUser     = "MYSQL_REPLICATION_USER"
	SecretKeyReplicationPassword = "MYSQL_REPLICATION_PASSWORD"
)

// secretCredentials reads the operator Secret through the Secret informer of
// the group's namespace.
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

func (s secretCredentials) Get(g *v1alpha1.MysqlFailoverGroup) (Credentials, error) {
	name := g.Spec.Credentials.OperatorSecretName
	if name == "" {
		return Credentials{}, fmt.Errorf("spec.credentials.operatorSecretName is empty")
	}
	if s.c.informers.KubeFor(g.Namespace) == nil {
		return Credentials{}, fmt.Errorf("namespace %s is not watched", g.Namespace)
	}
	sec, err := s.lister(g.Namespace).Get(name)
	if err != nil {
		return Credentials{}, fmt.Errorf("spec.credentials.operatorSecretName: Secret %s/%s: %w", g.Namespace, name, err)
	}
	return credentialsFromData(g.Namespace+"/"+name, sec.Data)
}

// credentialsFromData validates the Secret's keys; errors name the Secret
// and the key, never a value.
func credentialsFromData(secret string, data map[string][]byte) (Credentials, error) {
	get := func(k string) string { return string(data[k]) }
	c := Credentials{User: get(SecretKeyUsername), Password: get(SecretKeyPassword),
		ReplicationUser: get(SecretKeyReplicationUser), ReplicationPassword: get(SecretKeyReplicationPassword)}
	switch {
	case c.User == "":
		return Credentials{}, fmt.Errorf("Secret %s: key %q is missing or empty", secret, SecretKeyUsername)
	case c.Password == "":
		return Credentials{}, fmt.Errorf("Secret %s: key %q is missing or empty", secret, SecretKeyPassword)
	case c.ReplicationUser != "" && c.ReplicationPassword == "":
		return Credentials{}, fmt.Errorf("Secret %s: key %q is set but %q is missing or empty", secret, SecretKeyReplicationUser, SecretKeyReplicationPassword)
	}
	if c.ReplicationUser == "" {
		c.ReplicationUser, c.ReplicationPassword = c.User, c.Password
	}
	return c, nil
}
