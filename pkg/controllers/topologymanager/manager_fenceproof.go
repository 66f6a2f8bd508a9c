package topologymanager

import (
	"context"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
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

// askFenceProof starts, alongside this pass's polls, a fence-proof request
// to the source's sidecar when an automatic failover waits for its source
// to be fenced, the intent is in the cache /active-site answers from, the
// source's mysqld did not answer its latest poll but its sidecar did, and
// this process knows the instance last seen writable there. The channel
// yields the answer, or nil (not asked, or no answer): then the self-fence
// bound is waited. Whatever this pass's poll of the source finds decides
// first (a writable answer is fenced, a fenced one is fenced).
func (p *mpass) askFenceProof(ctx context.Context) <-chan *topology.FenceProofAnswer {
	out := make(chan *topology.FenceProofAnswer, 1)
	t := p.g.Status.Transition
	if t == nil || t.Kind != v1alpha1.TransitionAutomatic || !preFenceSteps[t.Step] || p.served == nil || p.served.ID != t.ID {
		out <- nil
		return out
	}
	src := t.SourceSite
	p.m.mu.Lock()
	ask := p.st.lastWritable[src].Complete() && p.st.sidecarAnswered[src] && p.st.pollFailed[src]
	p.m.mu.Unlock()
	addr, err := p.m.opts.Resolver.SidecarAddr(siteKey(p.g, src))
	if !ask || err != nil {
		out <- nil
		return out
	}
	doc := p.announcement()
	go func() {
		ctx, cancel := context.WithTimeout(ctx, p.pollTimeout())
		defer cancel()
		sent := p.m.opts.Now()
		proof, err := (protocol.Client{}).FenceProof(ctx, addr, protocol.FenceProofRequest{Announcement: doc})
		if err != nil {
			p.log.Debug("no fence proof", "site", src, "err", err.Error())
			out <- nil
			return
		}
		out <- &topology.FenceProofAnswer{Proof: proof, SentAt: sent, ReceivedAt: p.m.opts.Now()}
	}()
	return out
}
