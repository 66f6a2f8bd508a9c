package topologymanager

import (
	"context"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/observe"
	"github.com/shipstream/bloodraven/pkg/protocol"
	"github.com/shipstream/bloodraven/pkg/topology"
)

// The fence proof's I/O (docs/safety.md, "Proof from the old primary's
// sidecar"); topology.CheckFenceProof judges it.

// noteWritable records the instance a successful poll saw writable, when
// the site's sidecar named the same server in the same poll: the instance a
// later fence proof must be about.
func (p *mpass) noteWritable(site string, s Sample, a sidecarAnswer) {
	if s.Observation.SuperReadOnly || a.process == nil || a.process.Exited {
		return
	}
	inst := a.process.Instance
	if !inst.Complete() || inst.ServerUUID != s.Observation.ServerUUID {
		return
	}
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	p.st.lastWritable[site] = inst
}

// preFenceSteps are the steps of an automatic failover that wait for its
// source to be fenced.
var preFenceSteps = map[v1alpha1.TransitionStep]bool{
	v1alpha1.StepRecorded: true, v1alpha1.StepNotifyingSidecars: true,
	v1alpha1.StepFencingSource: true, v1alpha1.StepAwaitingSelfFence: true,
}

// askFenceProof asks the source's sidecar for a fence proof when an
// automatic failover waits for its source to be fenced, the intent is in
// the cache /active-site answers from, the source's mysqld did not answer
// this pass but its sidecar did, and this process knows the instance last
// seen writable there. Otherwise, or when the sidecar does not answer, nil:
// the self-fence bound is waited.
func (p *mpass) askFenceProof(ctx context.Context, results map[string]observe.Result[Sample]) *topology.FenceProofAnswer {
	t := p.g.Status.Transition
	if t == nil || t.Kind != v1alpha1.TransitionAutomatic || !preFenceSteps[t.Step] || p.served == nil || p.served.ID != t.ID {
		return nil
	}
	src := t.SourceSite
	if r, ok := results[src]; !ok || r.Err == nil {
		return nil
	}
	p.m.mu.Lock()
	known, answered := p.st.lastWritable[src].Complete(), p.st.sidecarAnswered[src]
	p.m.mu.Unlock()
	if !known || !answered {
		return nil
	}
	addr, err := p.m.opts.Resolver.SidecarAddr(siteKey(p.g, src))
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.pollTimeout())
	defer cancel()
	sent := p.m.opts.Now()
	proof, err := (protocol.Client{}).FenceProof(ctx, addr, protocol.FenceProofRequest{Announcement: p.announcement()})
	if err != nil {
		p.log.Debug("no fence proof", "site", src, "err", err.Error())
		return nil
	}
	return &topology.FenceProofAnswer{Proof: proof, SentAt: sent, ReceivedAt: p.m.opts.Now()}
}
