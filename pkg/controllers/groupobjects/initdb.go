package groupobjects

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/shipstream/bloodraven/pkg/accounts"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controller"
	"github.com/shipstream/bloodraven/pkg/render"
)

// initDB keeps the group's first-boot init script Secret
// (render.InitDBSecret) in step with the credential Secrets. It is applied
// before the StatefulSets, whose pods mount it: a pod whose volume Secret
// is missing does not start. A later change of a credential Secret
// changes the script for servers that boot for the first time from then
// on; it changes no existing account.
func (p *pass) initDB(ctx context.Context) {
	g := p.g
	secrets := p.kube.Core().V1().Secrets().Lister().Secrets(g.Namespace)
	get := func(name string) (map[string][]byte, error) {
		s, err := secrets.Get(name)
		if err != nil {
			return nil, err
		}
		return s.Data, nil
	}
	// Bad input (a missing Secret or key, two roles with one username, a
	// role named root) renders nothing: the Secret keeps its last good
	// script, and ResourcesReady and a Warning say why.
	accts, err := render.AccountsFromSecrets(g, get)
	if err != nil {
		p.invalid = append(p.invalid, "the first-boot init script: "+err.Error())
		return
	}
	desired := render.InitDBSecret(g, accts)
	if err := p.ensureSecret(ctx, desired); err != nil {
		p.applyFailed("Secret "+desired.Name, "spec.credentials", err)
	}
}

func (p *pass) ensureSecret(ctx context.Context, desired *corev1.Secret) error {
	api := p.c.kube.CoreV1().Secrets(p.g.Namespace)
	live, err := p.kube.Core().V1().Secrets().Lister().Secrets(p.g.Namespace).Get(desired.Name)
	if apierrors.IsNotFound(err) {
		if _, err := api.Create(ctx, desired, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create Secret %s: %w", desired.Name, err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if !metav1.IsControlledBy(live, p.g) {
		p.invalid = append(p.invalid, fmt.Sprintf("Secret %s exists and is not controlled by this group", live.Name))
		return nil
	}
	out := live.DeepCopy()
	render.MergeMeta(&out.ObjectMeta, desired.ObjectMeta)
	out.Data, out.StringData, out.Type = desired.Data, nil, desired.Type
	if equality.Semantic.DeepEqual(out, live) {
		return nil
	}
	if _, err := api.Update(ctx, out, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update Secret %s: %w", out.Name, err)
	}
	return nil
}

// groupsOfSecret maps a Secret to the groups it concerns: its controlling
// group (the init script Secret) and the groups naming it as a credential
// Secret.
func (c *Controller) groupsOfSecret(obj metav1.Object) []controller.Key {
	var keys []controller.Key
	for _, g := range c.allGroups() {
		if g.Namespace != obj.GetNamespace() {
			continue
		}
		if metav1.IsControlledBy(obj, g) || namesSecret(g, obj.GetName()) {
			keys = append(keys, cache.NewObjectName(g.Namespace, g.Name))
		}
	}
	return keys
}

func namesSecret(g *v1alpha1.MysqlFailoverGroup, name string) bool {
	for _, r := range accounts.Roles() {
		if n := accounts.SecretOf(g.Spec.Credentials, r); n != "" && n == name {
			return true
		}
	}
	return false
}
