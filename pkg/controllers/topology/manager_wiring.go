package topology

import (
	"context"
	"time"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controller"
)

// manage runs the topology manager for g when it is configured. It returns
// the group as stored afterwards (so the resource pass renders the active
// site just published, and writes its conditions on the current
// resourceVersion) and when to poll again (0: no manager).
func (c *Controller) manage(ctx context.Context, g *v1alpha1.MysqlFailoverGroup) (*v1alpha1.MysqlFailoverGroup, time.Duration, error) {
	if c.manager == nil {
		return g, 0, nil
	}
	c.manager.closeOnDone(ctx)
	return c.manager.Reconcile(ctx, g)
}

// forgetGroup drops the manager's cache of a deleted group.
func (c *Controller) forgetGroup(key controller.Key) {
	if c.manager != nil {
		c.manager.forget(key.String())
	}
}

// sooner returns the shorter positive delay (0 means none).
func sooner(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	default:
		return min(a, b)
	}
}

// closeOnDone closes every connection pool once the controller's context
// ends (shutdown, or leadership lost).
func (m *Manager) closeOnDone(ctx context.Context) {
	m.closeOnce.Do(func() {
		context.AfterFunc(ctx, func() {
			m.mu.Lock()
			groups := m.groups
			m.groups = map[string]*groupState{}
			m.mu.Unlock()
			for _, s := range groups {
				for _, c := range s.clients {
					_ = c.client.Close()
				}
			}
		})
	})
}
