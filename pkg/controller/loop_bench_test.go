package controller

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"k8s.io/client-go/tools/cache"
)

// BenchmarkLoopThroughput measures the loop's own overhead: keys per second
// through the queue and two workers with a reconcile that does nothing.
func BenchmarkLoopThroughput(b *testing.B) {
	var wg sync.WaitGroup
	l, err := New(Options{Name: "bench", Reconcile: func(context.Context, Key) (Result, error) {
		wg.Done()
		return Result{}, nil
	}})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = l.Run(ctx, 2); close(done) }()
	keys := make([]Key, b.N)
	for i := range keys {
		keys[i] = cache.NewObjectName("ns", "obj-"+strconv.Itoa(i))
	}
	b.ResetTimer()
	wg.Add(b.N)
	for _, k := range keys {
		l.Enqueue(k)
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "keys/s")
	cancel()
	<-done
}
