package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/shipstream/bloodraven/generated/clientset/versioned"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// kubeFlags are kubectl's connection flags, resolved the way kubectl
// resolves them (KUBECONFIG, the current context, its namespace).
type kubeFlags struct {
	kubeconfig, context, cluster, user, namespace string
}

func bindKubeFlags(fs *flag.FlagSet) *kubeFlags {
	k := &kubeFlags{}
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
	fs.StringVar(&k.context, "context", "", "the kubeconfig context to use")
	fs.StringVar(&k.cluster, "cluster", "", "the kubeconfig cluster to use")
	fs.StringVar(&k.user, "user", "", "the kubeconfig user to use")
	fs.StringVar(&k.namespace, "namespace", "", "the namespace of the group (default: the context's namespace)")
	fs.StringVar(&k.namespace, "n", "", "the namespace of the group")
	return k
}

// clients are what every command talks to, in one namespace.
type clients struct {
	ns   string
	ship versioned.Interface
	kube kubernetes.Interface
	// cfg is the resolved connection, for what the clientsets do not cover
	// (gtid-audit's port-forward).
	cfg *rest.Config
}

func (k *kubeFlags) clients() (*clients, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: k.context}
	overrides.Context.Cluster, overrides.Context.AuthInfo, overrides.Context.Namespace = k.cluster, k.user, k.namespace
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := cc.ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		return nil, fmt.Errorf("no kubeconfig found: pass --kubeconfig, set KUBECONFIG, or create ~/.kube/config (kubectl config view shows what kubectl uses)")
	}
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig namespace: %w", err)
	}
	cfg.UserAgent = "kubectl-bloodraven"
	c := &clients{ns: ns, cfg: cfg}
	if c.ship, err = versioned.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *clients) getGroup(ctx context.Context, name string) (*v1alpha1.MysqlFailoverGroup, error) {
	g, err := c.ship.ShipstreamV1alpha1().MysqlFailoverGroups(c.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, c.explain(err, "read", name)
	}
	return g, nil
}

// annotate sets one annotation with a JSON merge patch, as kubectl annotate
// does: no resourceVersion, so a status write by the operator meanwhile
// cannot make it fail with a conflict.
func (c *clients) annotate(ctx context.Context, group, key, value string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
	if err != nil {
		return err
	}
	_, err = c.ship.ShipstreamV1alpha1().MysqlFailoverGroups(c.ns).Patch(ctx, group, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-bloodraven"})
	if err != nil {
		return c.explain(err, "annotate", group)
	}
	return nil
}

// explain turns the API errors a user meets into what to do about them.
func (c *clients) explain(err error, verb, group string) error {
	switch {
	case apierrors.IsNotFound(err) && !namesObject(err):
		return fmt.Errorf("the API server does not serve mysqlfailovergroups.shipstream.io: install the CRDs (docs/install.md) or check --context (%v)", err)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("MysqlFailoverGroup %q not found in namespace %q: pass -n <namespace> (kubectl get mfg -A lists every group)", group, c.ns)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("not allowed to %s MysqlFailoverGroup %s/%s: %v (ask for RBAC on mysqlfailovergroups.shipstream.io: get, list and patch)", verb, c.ns, group, err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the API server did not accept the kubeconfig's credentials: %v (check --context or log in again)", err)
	}
	return fmt.Errorf("%s MysqlFailoverGroup %s/%s: %w", verb, c.ns, group, err)
}

// namesObject tells "no such group" from "no such resource": the API server
// names the object in a NotFound only when the resource exists.
func namesObject(err error) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	d := st.Status().Details
	return d != nil && d.Name != ""
}
