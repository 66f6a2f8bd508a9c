package deployapi

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

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
	// noFieldSelector is set once the API server refused the field
	// selector (the MysqlDatabase CRD does not declare spec.failoverGroupRef.name
	// as a selectable field); from then on every database is listed and
	// filtered here.
	noFieldSelector atomic.Bool
}

// groupRefField is the field selector that lets the API server return only
// the databases of one group, when the CRD declares it selectable.
const groupRefField = "spec.failoverGroupRef.name"

// grantsOf returns, per namespace, the names of the MysqlDatabases that
// reference group and declare caller as a deployment client.
func (a *authorizer) grantsOf(ctx context.Context, group string, caller Caller) (map[string][]string, error) {
	nss := a.namespaces
	if len(nss) == 0 {
		nss = []string{metav1.NamespaceAll}
	}
	out := map[string][]string{}
	for _, ns := range nss {
		list, err := a.list(ctx, ns, group)
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

// list reads the databases of ns from the API server (never a cache),
// narrowed to group by a field selector when the API server supports it.
func (a *authorizer) list(ctx context.Context, ns, group string) (*v1alpha1.MysqlDatabaseList, error) {
	dbs := a.client.ShipstreamV1alpha1().MysqlDatabases(ns)
	if !a.noFieldSelector.Load() {
		sel := fields.OneTermEqualSelector(groupRefField, group).String()
		list, err := dbs.List(ctx, metav1.ListOptions{FieldSelector: sel})
		if !apierrors.IsBadRequest(err) {
			return list, err
		}
		a.noFieldSelector.Store(true)
	}
	return dbs.List(ctx, metav1.ListOptions{})
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
