// Package netcut cuts HTTP traffic between named endpoints, for tests that
// partition sidecars and the operator from each other: a request across a
// cut gets no answer (no refusal either) until its deadline, as on a
// partitioned network. Every endpoint makes its requests through Client.
package netcut

import (
	"net/http"
	"sync"
	"time"
)

// Network holds the endpoint names and the cuts between them.
type Network struct {
	mu    sync.Mutex
	names map[string]string // host:port -> endpoint name
	cut   map[[2]string]bool
}

// New returns a network without cuts.
func New() *Network {
	return &Network{names: map[string]string{}, cut: map[[2]string]bool{}}
}

// Name gives the endpoint listening on addr (host:port) a name.
func (n *Network) Name(addr, name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.names[addr] = name
}

// Sever cuts endpoint a from every endpoint in others, both ways.
func (n *Network) Sever(a string, others ...string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, o := range others {
		n.cut[[2]string{a, o}], n.cut[[2]string{o, a}] = true, true
	}
}

// Heal lifts every cut.
func (n *Network) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut = map[[2]string]bool{}
}

// Blocked reports whether a request from endpoint from to addr is cut.
func (n *Network) Blocked(from, addr string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cut[[2]string{from, n.names[addr]}]
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Client is endpoint from's HTTP client: real connections, except that a
// request across a cut waits for its context to end and fails with its
// error.
func (n *Network) Client(from string) *http.Client {
	base := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 2, IdleConnTimeout: time.Minute}
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if n.Blocked(from, r.URL.Host) {
			<-r.Context().Done()
			return nil, r.Context().Err()
		}
		return base.RoundTrip(r)
	})}
}
