package deployapiintegration_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// BenchmarkLatencyAtFixedRate measures GET and renew latency over TLS on
// loopback against the real API server, at a fixed open-loop request rate
// (requests start on schedule whether or not earlier ones finished, so a
// slow answer cannot hide the ones queued behind it). b.N is the number of
// requests; run it with a count, e.g.
//
//	go test ./pkg/deployapi/deployapiintegration -run '^$' -bench LatencyAtFixedRate -benchtime 500x
//
// BENCH_RATE sets the rate per second (default 50) and BENCH_GROUPS the
// number of groups, one lease each, the requests rotate over (default 100:
// real clients renew each lease every ttl/3, never one lease 50 times a
// second). BENCH_SELECTABLE_FIELD=1 first declares
// spec.failoverGroupRef.name selectable on the MysqlDatabase CRD, so
// authorization lists only the group's databases. It prints and reports
// p50 and p99 in milliseconds; it asserts nothing about speed.
func BenchmarkLatencyAtFixedRate(b *testing.B) {
	rate := envInt("BENCH_RATE", 50)
	groups := envInt("BENCH_GROUPS", 100)
	if os.Getenv("BENCH_SELECTABLE_FIELD") == "1" {
		enableSelectableGroupRef(b)
	}
	for _, kind := range []string{"GET", "renew"} {
		b.Run(fmt.Sprintf("%s@%drps", kind, rate), func(b *testing.B) {
			f := newFixture(b)
			// Renewals spread over groups, one migration lease each, as many
			// deployments renewing every ttl/3 would; one lease renewed 50
			// times a second would only measure its own write contention.
			type lease struct{ group, body string }
			var leases []lease
			for i := range groups {
				group := fmt.Sprintf("bench-%d", i)
				f.group(f.ns, group, 1)
				f.database(f.ns, group+"-app", group, client(f.appNS, "deployer"))
				g := f.do(f.op, "POST", "/deploy/v1/groups/"+group+"/leases", f.token, grantBody("migration", opA, group+"-app", 120), nil)
				f.expect(g, 201, "")
				body, _ := json.Marshal(map[string]any{"token": g.str("token"), "ttlSeconds": 120})
				leases = append(leases, lease{group, string(body)})
			}
			var next int
			newReq := func() *http.Request {
				l := leases[next%len(leases)]
				next++
				if kind == "GET" {
					r, _ := http.NewRequest("GET", f.op.server.URL+"/deploy/v1/groups/"+l.group, nil)
					r.Header.Set("Authorization", "Bearer "+f.token)
					return r
				}
				r, _ := http.NewRequest("PUT", f.op.server.URL+leasePath(l.group, "migration", opA), bytes.NewReader([]byte(l.body)))
				r.Header.Set("Authorization", "Bearer "+f.token)
				return r
			}
			f.mu.Lock()
			f.requests += 5 + b.N // sent below, outside f.do
			f.mu.Unlock()
			// Keep connections alive as long-lived client pods do; the
			// default two idle connections would make most requests pay a
			// fresh TLS handshake.
			f.op.client.Transport.(*http.Transport).MaxIdleConnsPerHost = 512
			// Warm the connection pool and the TokenReview cache.
			for range 5 {
				if resp, err := f.op.client.Do(newReq()); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
			lat := make([]time.Duration, b.N)
			var failures sync.Map
			var wg sync.WaitGroup
			tick := time.NewTicker(time.Second / time.Duration(rate))
			defer tick.Stop()
			b.ResetTimer()
			for i := range b.N {
				<-tick.C
				req := newReq()
				wg.Go(func() {
					start := time.Now()
					resp, err := f.op.client.Do(req)
					if err != nil {
						failures.Store(i, err.Error())
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					lat[i] = time.Since(start)
					if resp.StatusCode != http.StatusOK {
						failures.Store(i, resp.Status)
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			n := 0
			failures.Range(func(_, v any) bool { n++; b.Logf("request failed: %v", v); return n < 5 })
			if n > 0 {
				b.Fatalf("%d requests failed", n)
			}
			slices.Sort(lat)
			p50, p99 := lat[len(lat)*50/100], lat[min(len(lat)-1, len(lat)*99/100)]
			b.ReportMetric(ms(p50), "p50-ms")
			b.ReportMetric(ms(p99), "p99-ms")
			b.ReportMetric(0, "ns/op") // wall time per request is set by the rate, not meaningful
			fmt.Printf("deploy api %s at %d req/s over %d groups, TLS on loopback, %d requests: p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
				kind, rate, groups, b.N, ms(p50), ms(p99), ms(lat[len(lat)-1]))
		})
	}
}

// envInt reads a positive integer setting of the benchmark.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
