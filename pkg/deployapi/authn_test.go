package deployapi

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// reviewer is a fake TokenReview endpoint (pure cache logic only; the real
// API server is exercised by the integration tests): tokens "sa:<ns>:<name>"
// authenticate for audience bloodraven-deploy, others do not.
func reviewer(calls *atomic.Int64) *fake.Clientset {
	c := fake.NewClientset()
	c.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		calls.Add(1)
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		var ns, name string
		if _, err := fmt.Sscanf(tr.Spec.Token, "sa:%s", &ns); err == nil {
			ns, name, _ = cutColon(ns)
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, Audiences: tr.Spec.Audiences,
				User: authenticationv1.UserInfo{Username: serviceAccountPrefix + ns + ":" + name}}
		}
		return true, tr, nil
	})
	return c
}

func cutColon(s string) (string, string, bool) {
	for i := range s {
		if s[i] == ':' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func TestAuthenticatorCachesSuccessesByHashFor15s(t *testing.T) {
	var calls atomic.Int64
	now := time.Unix(1_700_000_000, 0)
	a := newAuthenticator(reviewer(&calls), DefaultAudience, func() time.Time { return now }, DefaultTokenCacheTTL, DefaultTokenCacheSize)
	ctx := context.Background()
	c, err := a.authenticate(ctx, "sa:app:deployer")
	if err != nil || c != (Caller{Namespace: "app", Name: "deployer"}) {
		t.Fatalf("got %v %v", c, err)
	}
	for range 5 {
		if _, err := a.authenticate(ctx, "sa:app:deployer"); err != nil {
			t.Fatal(err)
		}
	}
	if calls.Load() != 1 {
		t.Fatalf("%d TokenReviews within the cache lifetime, want 1", calls.Load())
	}
	now = now.Add(15 * time.Second)
	_, _ = a.authenticate(ctx, "sa:app:deployer")
	if calls.Load() != 1 {
		t.Fatalf("reviewed again at exactly 15 s")
	}
	now = now.Add(time.Millisecond)
	_, _ = a.authenticate(ctx, "sa:app:deployer")
	if calls.Load() != 2 {
		t.Fatalf("not reviewed again after 15 s")
	}
	// Failures are never cached.
	for range 3 {
		if _, err := a.authenticate(ctx, "bogus"); err != errUnauthenticated {
			t.Fatalf("bogus token: %v", err)
		}
	}
	if calls.Load() != 5 {
		t.Fatalf("%d reviews, want every failure reviewed", calls.Load())
	}
	// The cache is keyed by hash: the token itself is not a key.
	for k := range a.entries {
		if string(k[:]) == "sa:app:deployer" {
			t.Fatal("raw token used as key")
		}
	}
}

func TestAuthenticatorCacheBounded(t *testing.T) {
	var calls atomic.Int64
	now := time.Unix(1_700_000_000, 0)
	a := newAuthenticator(reviewer(&calls), DefaultAudience, func() time.Time { return now }, DefaultTokenCacheTTL, DefaultTokenCacheSize)
	ctx := context.Background()
	for i := range 1500 {
		if _, err := a.authenticate(ctx, fmt.Sprintf("sa:ns%d:sa", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := a.cacheLen(); n != 1024 {
		t.Fatalf("cache holds %d entries, want the bound 1024", n)
	}
	// The oldest were evicted, the newest kept.
	before := calls.Load()
	_, _ = a.authenticate(ctx, "sa:ns1499:sa")
	_, _ = a.authenticate(ctx, "sa:ns0:sa")
	if calls.Load()-before != 1 {
		t.Fatalf("want the newest cached and the oldest evicted")
	}
}

func TestAcceptRequiresServiceAccountAndAudience(t *testing.T) {
	a := &authenticator{audience: DefaultAudience}
	ok := authenticationv1.TokenReviewStatus{Authenticated: true, Audiences: []string{DefaultAudience},
		User: authenticationv1.UserInfo{Username: "system:serviceaccount:app:deployer"}}
	if c, good := a.accept(ok); !good || c.String() != "app/deployer" {
		t.Fatalf("valid review refused")
	}
	for name, st := range map[string]authenticationv1.TokenReviewStatus{
		"unauthenticated": {Authenticated: false, User: ok.User},
		"other audience":  {Authenticated: true, Audiences: []string{"api"}, User: ok.User},
		"error":           {Authenticated: true, Error: "boom", User: ok.User},
		"user":            {Authenticated: true, User: authenticationv1.UserInfo{Username: "admin"}},
		"node":            {Authenticated: true, User: authenticationv1.UserInfo{Username: "system:node:n1"}},
		"malformed":       {Authenticated: true, User: authenticationv1.UserInfo{Username: "system:serviceaccount:app"}},
		"extra colon":     {Authenticated: true, User: authenticationv1.UserInfo{Username: "system:serviceaccount:app:a:b"}},
	} {
		if _, good := a.accept(st); good {
			t.Errorf("%s accepted", name)
		}
	}
}

func TestBearerToken(t *testing.T) {
	for h, want := range map[string]string{"Bearer abc": "abc", "bearer  abc ": "abc", "Basic abc": "", "Bearer": "", "Bearer ": "", "abc": ""} {
		got, ok := bearerToken(h)
		if got != want || ok != (want != "") {
			t.Errorf("%q: got %q %v", h, got, ok)
		}
	}
}

func TestPickNamespace(t *testing.T) {
	ctx := context.Background()
	grants := map[string][]string{"east": {"orders-east"}, "west": {"orders-west", "shared"}}
	if _, err := pickNamespace(ctx, grants, "", nil); err != errForbidden {
		t.Fatalf("ambiguous without instance: %v", err)
	}
	if ns, err := pickNamespace(ctx, grants, "orders-west", nil); err != nil || ns != "west" {
		t.Fatalf("instance orders-west: %s %v", ns, err)
	}
	if _, err := pickNamespace(ctx, grants, "unknown", nil); err != errForbidden {
		t.Fatalf("unknown instance: %v", err)
	}
	if _, err := pickNamespace(ctx, map[string][]string{}, "", nil); err != errForbidden {
		t.Fatalf("no grants: %v", err)
	}
	only := func(want string) func(context.Context, string) (bool, error) {
		return func(_ context.Context, ns string) (bool, error) { return ns == want, nil }
	}
	if ns, err := pickNamespace(ctx, grants, "", only("east")); err != nil || ns != "east" {
		t.Fatalf("disambiguated: %s %v", ns, err)
	}
	both := func(context.Context, string) (bool, error) { return true, nil }
	if _, err := pickNamespace(ctx, grants, "", both); err != errForbidden {
		t.Fatalf("still ambiguous: %v", err)
	}
}
