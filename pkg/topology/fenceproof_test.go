package topology

import (
	"strings"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/protocol"
)

var lastWritableIAD = protocol.Instance{PodUID: "pod-1", ContainerID: "c-1", ServerUUID: "3e11fa47-71ca-11e1-9e33-c80aa9429562"}

// goodProof is a proof that holds: iad's sidecar saw the container last
// seen writable exit, 30 ms into a 40 ms request, after taking in f1.
func goodProof(verdict string) FenceProofAnswer {
	return FenceProofAnswer{
		Proof: protocol.FenceProof{Site: "iad", TransitionID: "f1", Verdict: verdict, Instance: lastWritableIAD,
			AckAgeMillis: 30, ObservedAgeMillis: 30},
		SentAt: t0, ReceivedAt: t0.Add(40 * time.Millisecond),
	}
}

func proofCheck() FenceProofCheck {
	return FenceProofCheck{TransitionID: "f1", Source: "iad", LastWritable: lastWritableIAD, Now: t0.Add(50 * time.Millisecond)}
}

func TestCheckFenceProof(t *testing.T) {
	for _, v := range []string{protocol.ProofExited, protocol.ProofFenced} {
		if ok, why := CheckFenceProof(goodProof(v), proofCheck()); !ok {
			t.Fatalf("%s: refused: %s", v, why)
		}
	}
	cases := []struct {
		name   string
		change func(*FenceProofAnswer, *FenceProofCheck)
		want   string
	}{
		{"this process never saw a writable instance (a restarted operator)", func(_ *FenceProofAnswer, c *FenceProofCheck) {
			c.LastWritable = protocol.Instance{}
		}, "never saw a writable instance"},
		{"the last writable instance lacks its container", func(_ *FenceProofAnswer, c *FenceProofCheck) {
			c.LastWritable.ContainerID = ""
		}, "never saw a writable instance"},
		{"another transition", func(a *FenceProofAnswer, _ *FenceProofCheck) { a.Proof.TransitionID = "f0" }, `transition "f0"`},
		{"another site answered", func(a *FenceProofAnswer, _ *FenceProofCheck) { a.Proof.Site = "pdx" }, `site "pdx"`},
		{"a replacement pod (the old one may still run on a partitioned node)", func(a *FenceProofAnswer, _ *FenceProofCheck) {
			a.Proof.Instance.PodUID, a.Proof.Instance.ContainerID = "pod-2", ""
		}, "comes from pod pod-2"},
		{"another server", func(a *FenceProofAnswer, _ *FenceProofCheck) { a.Proof.Instance.ServerUUID = "other" }, "about server other"},
		{"observed before the sidecar held the transition", func(a *FenceProofAnswer, _ *FenceProofCheck) {
			a.Proof.AckAgeMillis = 10
		}, "not taken after the sidecar held"},
		{"observed before the request was sent (a stale report)", func(a *FenceProofAnswer, _ *FenceProofCheck) {
			a.Proof.AckAgeMillis, a.Proof.ObservedAgeMillis = 900, 900
		}, "older than the request"},
		{"a negative age", func(a *FenceProofAnswer, _ *FenceProofCheck) { a.Proof.ObservedAgeMillis = -1 }, "not taken after"},
		{"an answer acted on too late", func(_ *FenceProofAnswer, c *FenceProofCheck) {
			c.Now = t0.Add(FenceProofMaxAge + time.Millisecond)
		}, "old (more than"},
		{"another container exited (mysqld restarted since it was seen writable)", func(a *FenceProofAnswer, _ *FenceProofCheck) {
			a.Proof.Instance.ContainerID = "c-2"
		}, "container that exited is c-2"},
		{"no verdict", func(a *FenceProofAnswer, _ *FenceProofCheck) {
			a.Proof.Verdict, a.Proof.Reason = protocol.ProofNone, "mysqld did not answer: Error 1045: Access denied"
		}, "no proof: mysqld did not answer"},
		{"an unknown verdict", func(a *FenceProofAnswer, _ *FenceProofCheck) { a.Proof.Verdict = "Gone" }, "verdict Gone"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, chk := goodProof(protocol.ProofExited), proofCheck()
			c.change(&a, &chk)
			ok, why := CheckFenceProof(a, chk)
			if ok || !strings.Contains(why, c.want) {
				t.Fatalf("ok %v, why %q; want refused with %q", ok, why, c.want)
			}
		})
	}
	t.Run("Fenced needs the server, not the container: mysqld restarted read-only", func(t *testing.T) {
		a := goodProof(protocol.ProofFenced)
		a.Proof.Instance.ContainerID = "c-2"
		if ok, why := CheckFenceProof(a, proofCheck()); !ok {
			t.Fatalf("refused: %s", why)
		}
	})
}

// proofInput is iad down in AwaitingSelfFence with its deadline far off, and
// the proof a given.
func proofInput(a *FenceProofAnswer) Input {
	in := failoverInput(iadDown(), inFailover(v1alpha1.StepAwaitingSelfFence))
	in.Now = t0.Add(50 * time.Millisecond)
	si := in.Observed["iad"]
	si.LastWritable, si.FenceProof = lastWritableIAD, a
	in.Observed["iad"] = si
	return in
}

func TestFailoverOnFenceProof(t *testing.T) {
	t.Run("a proof that holds ends the wait: CatchingUp, with an Event", func(t *testing.T) {
		a := goodProof(protocol.ProofExited)
		d := Decide(proofInput(&a))
		if tr := d.Status.Transition; tr == nil || tr.Step != v1alpha1.StepCatchingUp || !d.WriteFirst {
			t.Fatalf("transition %+v, writeFirst %v", tr, d.WriteFirst)
		}
		if !hasEvent(d, v1alpha1.EventFailoverSourceFenceConfirmed, false) {
			t.Fatalf("events %+v", d.Events)
		}
	})
	t.Run("from Recorded, no deadline is needed", func(t *testing.T) {
		a := goodProof(protocol.ProofExited)
		in := proofInput(&a)
		in.Status.Transition.Step, in.Status.Transition.SourceFenceDeadline = v1alpha1.StepRecorded, nil
		if tr := Decide(in).Status.Transition; tr == nil || tr.Step != v1alpha1.StepCatchingUp || tr.SourceFenceDeadline != nil {
			t.Fatalf("transition %+v", tr)
		}
	})
	t.Run("not while the intent is not served: the sidecar may still be confirmed afterwards", func(t *testing.T) {
		a := goodProof(protocol.ProofExited)
		in := proofInput(&a)
		in.Status.Transition.Step, in.Status.Transition.SourceFenceDeadline = v1alpha1.StepRecorded, nil
		in.TransitionUnserved = true
		if tr := Decide(in).Status.Transition; tr == nil || tr.Step != v1alpha1.StepRecorded {
			t.Fatalf("transition %+v", tr)
		}
	})
	t.Run("a proof that does not hold: the bound is waited, and the message says why", func(t *testing.T) {
		a := goodProof(protocol.ProofExited)
		a.Proof.Instance.PodUID = "pod-2"
		d := Decide(proofInput(&a))
		if tr := d.Status.Transition; tr == nil || tr.Step != v1alpha1.StepAwaitingSelfFence || d.WriteFirst {
			t.Fatalf("transition %+v", tr)
		}
		if hasEvent(d, v1alpha1.EventFailoverSourceFenceConfirmed, false) {
			t.Fatalf("events %+v", d.Events)
		}
	})
	t.Run("no answer: the bound is waited", func(t *testing.T) {
		if tr := Decide(proofInput(nil)).Status.Transition; tr.Step != v1alpha1.StepAwaitingSelfFence {
			t.Fatalf("step %s", tr.Step)
		}
	})
	t.Run("a proof never makes a writable old primary promotable", func(t *testing.T) {
		a := goodProof(protocol.ProofExited)
		in := proofInput(&a)
		in.Observed["iad"] = SiteInput{Reach: in.Observed["iad"].Reach, Fresh: true, Last: site("iad", true, "I:1-10", nil).Last,
			SidecarSeen: true, LastWritable: lastWritableIAD, FenceProof: &a}
		d := Decide(in)
		if strings.Join(actions(d), ",") != "Fence iad" || d.Status.Transition.Step != v1alpha1.StepAwaitingSelfFence {
			t.Fatalf("actions %v, step %s", actions(d), d.Status.Transition.Step)
		}
	})
}
