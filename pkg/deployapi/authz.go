package deployapi

import (
	"context"
	"errors"
	"slices"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/generated/clientset/versioned"
	v1alpha1 "github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

var errForbidden = errors.New("forbidden")

// authorizer decides, from MysqlDatabase objects read from the API server on
// every request (never a cache, so removing a deployment client takes
// effect at once), which group namespace a caller may act on.
type authorizer struct {
	client versioned.Interface
	// namespaces the operator watches; empty means all.
	namespaces []string
}

// grantsOf returns, per namespace, the names of the MysqlDatabases that
// reference group and declare caller as a deployment client.
func (a *authorizer) grantsOf(ctx context.Context, group string, caller Caller) (map[string][]string, error) {
	nss := a.namespaces
	if len(nss) == 0 {
		nss = []string{metav1.NamespaceAll}
	}
	out := map[string][]string{}
	for _, ns := range nss {
		list, err := a.client.ShipstreamV1alpha1().MysqlDatabases(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			db := &list.Items[i]
			if authorizes(db, group, caller) {
				out[db.Namespace] = append(out[db.Namespace], db.Name)
			}
		}
	}
	return out, nil
}

// authorizes is the per-database rule: same group name, caller declared,
// and the database not being deleted.
func authorizes(db *v1alpha1.MysqlDatabase, group string, caller Caller) bool {
	if db.DeletionTimestamp != nil || db.Spec.FailoverGroupRef.Name != group {
		return false
	}
	return slices.ContainsFunc(db.Spec.DeploymentClients, func(c v1alpha1.DeploymentClient) bool {
		return c.Namespace == caller.Namespace && c.ServiceAccount == caller.Name
	})
}

// pickNamespace resolves the one group namespace of a request. With an
// instance, only namespaces where that database authorizes the caller count.
// Several candidates are ambiguous unless disambiguate (when non-nil)
// selects exactly one. Every failure is errForbidden, whether or not a group
// of that name exists anywhere.
func pickNamespace(ctx context.Context, grants map[string][]string, instance string, disambiguate func(ctx context.Context, ns string) (bool, error)) (string, error) {
	var candidates []string
	for ns, dbs := range grants {
		if instance == "" || slices.Contains(dbs, instance) {
			candidates = append(candidates, ns)
		}
	}
	sort.Strings(candidates)
	if len(candidates) == 1 {
		return candidates[0], nil
	}
	if len(candidates) == 0 || disambiguate == nil {
		return "", errForbidden
	}
	var matched []string
	for _, ns := range candidates {
		ok, err := disambiguate(ctx, ns)
		if err != nil {
			return "", err
		}
		if ok {
			matched = append(matched, ns)
		}
	}
	if len(matched) != 1 {
		return "", errForbidden
	}
	return matched[0], nil
}
