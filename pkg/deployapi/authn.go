package deployapi

import (
	"container/list"
	"context"
	"crypto/sha256"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Authentication cache bounds (docs/deploy-api.md, "Who may call it"):
// successful TokenReviews only.
const (
	DefaultTokenCacheTTL  = 15 * time.Second
	DefaultTokenCacheSize = 1024
	// maxBearerLen bounds a bearer token before it is hashed or reviewed.
	maxBearerLen = 16 << 10
)

const serviceAccountPrefix = "system:serviceaccount:"

// Caller is an authenticated ServiceAccount.
type Caller struct {
	Namespace string
	Name      string
}

func (c Caller) String() string { return c.Namespace + "/" + c.Name }

var errUnauthenticated = errors.New("unauthenticated")

// authenticator resolves bearer tokens through TokenReview with one
// audience, caching successes by the token's SHA-256 (never the token).
type authenticator struct {
	client   kubernetes.Interface
	audience string
	now      func() time.Time
	ttl      time.Duration
	size     int

	mu      sync.Mutex
	entries map[[32]byte]*list.Element
	order   *list.List // oldest insertion at the front
}

type cacheEntry struct {
	key     [32]byte
	caller  Caller
	expires time.Time
}

func newAuthenticator(client kubernetes.Interface, audience string, now func() time.Time, ttl time.Duration, size int) *authenticator {
	return &authenticator{
		client: client, audience: audience, now: now, ttl: ttl, size: size,
		entries: map[[32]byte]*list.Element{}, order: list.New(),
	}
}

// bearerToken extracts the token of an Authorization: Bearer header.
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != "" && len(token) <= maxBearerLen
}

// authenticate returns the ServiceAccount the token belongs to for our
// audience, or errUnauthenticated. Other errors are the API server's.
func (a *authenticator) authenticate(ctx context.Context, token string) (Caller, error) {
	key := sha256.Sum256([]byte(token))
	if c, ok := a.lookup(key); ok {
		return c, nil
	}
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{
		Token: token, Audiences: []string{a.audience},
	}}
	out, err := a.client.AuthenticationV1().TokenReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return Caller{}, err
	}
	c, ok := a.accept(out.Status)
	if !ok {
		return Caller{}, errUnauthenticated
	}
	a.store(key, c)
	return c, nil
}

// accept is the decision on a TokenReview status: authenticated, for our
// audience, and a ServiceAccount.
func (a *authenticator) accept(st authenticationv1.TokenReviewStatus) (Caller, bool) {
	if !st.Authenticated || st.Error != "" {
		return Caller{}, false
	}
	if len(st.Audiences) > 0 && !slices.Contains(st.Audiences, a.audience) {
		return Caller{}, false
	}
	return parseServiceAccount(st.User.Username)
}

func parseServiceAccount(username string) (Caller, bool) {
	rest, ok := strings.CutPrefix(username, serviceAccountPrefix)
	if !ok {
		return Caller{}, false
	}
	ns, name, ok := strings.Cut(rest, ":")
	if !ok || ns == "" || name == "" || strings.Contains(name, ":") {
		return Caller{}, false
	}
	return Caller{Namespace: ns, Name: name}, true
}

func (a *authenticator) lookup(key [32]byte) (Caller, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	el, ok := a.entries[key]
	if !ok {
		return Caller{}, false
	}
	e := el.Value.(*cacheEntry)
	if a.now().After(e.expires) {
		a.order.Remove(el)
		delete(a.entries, key)
		return Caller{}, false
	}
	return e.caller, true
}

// store inserts a success; when full it drops the expired entries and then
// the oldest, so the cache never exceeds its size.
func (a *authenticator) store(key [32]byte, c Caller) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	if el, ok := a.entries[key]; ok {
		a.order.Remove(el)
		delete(a.entries, key)
	}
	if len(a.entries) >= a.size {
		for el := a.order.Front(); el != nil; {
			next := el.Next()
			if e := el.Value.(*cacheEntry); now.After(e.expires) {
				a.order.Remove(el)
				delete(a.entries, e.key)
			}
			el = next
		}
	}
	for len(a.entries) >= a.size {
		oldest := a.order.Front()
		a.order.Remove(oldest)
		delete(a.entries, oldest.Value.(*cacheEntry).key)
	}
	a.entries[key] = a.order.PushBack(&cacheEntry{key: key, caller: c, expires: now.Add(a.ttl)})
}

func (a *authenticator) cacheLen() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.entries)
}
