// Package controller is the one work loop every Bloodraven controller runs:
// a named, typed, rate-limited workqueue of object keys fed by informer event
// handlers, and workers that call a reconcile function for each key, requeue
// it with backoff when it fails and after a delay when it asks to be polled.
package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Key names the object a controller reconciles.
type Key = cache.ObjectName

// Result tells the loop what to do with a key that reconciled without error.
type Result struct {
	// RequeueAfter, if positive, reconciles the key again after this delay
	// (periodic polls); zero leaves it until the next event.
	RequeueAfter time.Duration
}

// ReconcileFunc makes the world match one object. It reads from listers, so
// it must not modify the objects they return (DeepCopy first).
type ReconcileFunc func(ctx context.Context, key Key) (Result, error)

// Options configure a Loop.
type Options struct {
	// Name names the queue in metrics and logs, e.g. "database".
	Name      string
	Reconcile ReconcileFunc
	// MetricsProvider receives the queue's metrics; nil uses client-go's global provider.
	MetricsProvider workqueue.MetricsProvider
	// RateLimiter decides the backoff of failed keys; nil uses client-go's
	// controller default (per-key exponential 5ms..1000s, overall 10 qps burst 100).
	RateLimiter workqueue.TypedRateLimiter[Key]
	Logger      *slog.Logger
}

// Loop is one controller's queue and workers. Create it with New, register
// event handlers with Watch before the informers start, then Run it.
type Loop struct {
	name      string
	queue     workqueue.TypedRateLimitingInterface[Key]
	reconcile ReconcileFunc
	log       *slog.Logger

	mu     sync.Mutex
	synced []cache.InformerSynced
}

// New builds a loop. Name and Reconcile are required.
func New(opts Options) (*Loop, error) {
	if opts.Name == "" {
		return nil, errors.New("controller: Options.Name is required")
	}
	if opts.Reconcile == nil {
		return nil, fmt.Errorf("controller %s: Options.Reconcile is required", opts.Name)
	}
	rl := opts.RateLimiter
	if rl == nil {
		rl = workqueue.DefaultTypedControllerRateLimiter[Key]()
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Loop{
		name: opts.Name,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[Key]{
			Name: opts.Name, MetricsProvider: opts.MetricsProvider,
		}),
		reconcile: opts.Reconcile,
		log:       log.With("controller", opts.Name),
	}, nil
}

// Name is the queue's name.
func (l *Loop) Name() string { return l.name }

// Enqueue adds a key now.
func (l *Loop) Enqueue(k Key) { l.queue.Add(k) }

// EnqueueAfter adds a key after d (periodic work, timers).
func (l *Loop) EnqueueAfter(k Key, d time.Duration) { l.queue.AddAfter(k, d) }

// Len is the number of keys waiting (not counting delayed ones).
func (l *Loop) Len() int { return l.queue.Len() }

// Watch registers h on informer; Run waits until the handler has seen the
// informer's initial list.
func (l *Loop) Watch(informer cache.SharedInformer, h cache.ResourceEventHandler) error {
	reg, err := informer.AddEventHandler(h)
	if err != nil {
		return fmt.Errorf("controller %s: add event handler: %w", l.name, err)
	}
	l.mu.Lock()
	l.synced = append(l.synced, reg.HasSynced)
	l.mu.Unlock()
	return nil
}

// Run waits for every watched informer to sync, then runs workers until ctx
// ends. It returns after the workers have finished their current keys. A
// Loop runs once: its queue is shut down when Run returns.
func (l *Loop) Run(ctx context.Context, workers int) error {
	defer l.queue.ShutDown()
	l.mu.Lock()
	synced := append([]cache.InformerSynced(nil), l.synced...)
	l.mu.Unlock()
	if !cache.WaitForNamedCacheSyncWithContext(ctx, synced...) {
		return fmt.Errorf("controller %s: caches did not sync before shutdown", l.name)
	}
	l.log.Info("controller started", "workers", workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for l.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	l.queue.ShutDown()
	wg.Wait()
	l.log.Info("controller stopped")
	return nil
}

func (l *Loop) processNext(ctx context.Context) bool {
	key, quit := l.queue.Get()
	if quit {
		return false
	}
	defer l.queue.Done(key)
	if ctx.Err() != nil {
		return false
	}
	res, err := l.reconcileSafely(ctx, key)
	switch {
	case err != nil:
		l.queue.AddRateLimited(key)
		if res.RequeueAfter > 0 {
			// A failure in one part of a reconcile (a Service the API server
			// refuses) must not stretch the cadence the rest asked for (the
			// topology manager's polls): whichever comes first runs.
			l.queue.AddAfter(key, res.RequeueAfter)
		}
		level := slog.LevelError
		if IsStaleRead(err) {
			// A stale read lost an optimistic-concurrency race: routine, retried.
			level = slog.LevelDebug
		}
		l.log.Log(ctx, level, "reconcile failed", "key", key.String(), "err", err.Error(), "requeues", l.queue.NumRequeues(key))
	case res.RequeueAfter > 0:
		l.queue.Forget(key)
		l.queue.AddAfter(key, res.RequeueAfter)
	default:
		l.queue.Forget(key)
	}
	return true
}

// reconcileSafely runs the reconcile function and turns a panic into an
// error of that key: the key is retried with backoff, the panic and its
// stack are logged, and the other keys and the process go on. Recovering is
// safe here because everything a controller keeps in memory is a cache;
// every intent it acts on is in the API server, written with the read's
// resourceVersion.
func (l *Loop) reconcileSafely(ctx context.Context, key Key) (res Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			l.log.Error("reconcile panicked", "key", key.String(), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("reconcile panicked: %v", r)
		}
	}()
	return l.reconcile(ctx, key)
}

// IsStaleRead reports whether err is the API server refusing a write made
// on a cache that had not caught up: a Conflict (resourceVersion moved on),
// or AlreadyExists (a create of an object the informer did not show yet).
// Both are retried like any failure but are routine, not errors to report.
// A joined error is a stale read only when every part of it is one, so a
// real failure beside a conflict is still reported.
func IsStaleRead(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		parts := j.Unwrap()
		for _, e := range parts {
			if !IsStaleRead(e) {
				return false
			}
		}
		return len(parts) > 0
	}
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
}
