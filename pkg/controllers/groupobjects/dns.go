package groupobjects

import (
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"

	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/shipstream/bloodraven/pkg/render"
)

// dnsCRDPresent asks discovery whether external-dns's DNSEndpoint resource
// exists, remembering the answer for dnsRecheck.
func (c *Controller) dnsCRDPresent() (bool, error) {
	c.crdMu.Lock()
	defer c.crdMu.Unlock()
	if !c.crdChecked.IsZero() && time.Since(c.crdChecked) < c.dnsRecheck {
		return c.crdPresent, nil
	}
	gv := render.DNSEndpointGVR.GroupVersion().String()
	list, err := c.kube.Discovery().ServerResourcesForGroupVersion(gv)
	switch {
	case apierrors.IsNotFound(err):
		c.crdPresent = false
	case err != nil:
		return false, fmt.Errorf("discover %s: %w", gv, err)
	default:
		c.crdPresent = false
		for _, r := range list.APIResources {
			if r.Name == render.DNSEndpointGVR.Resource {
				c.crdPresent = true
			}
		}
	}
	c.crdChecked = time.Now()
	return c.crdPresent, nil
}

// forgetDNSCRD makes the next dnsCRDPresent ask discovery again.
func (c *Controller) forgetDNSCRD() {
	c.crdMu.Lock()
	c.crdChecked = time.Time{}
	c.crdMu.Unlock()
}

const dnsCRDName = "dnsendpoints.externaldns.k8s.io"

// dns points the group's DNSEndpoint at the active site. Without the CRD it
// says so (condition and Warning Event) and asks to be run again later;
// nothing else of the reconcile depends on it.
func (p *pass) dns(ctx context.Context) {
	g := p.g
	desired := render.DNSEndpoint(g)
	if desired == nil {
		msg := "no active site with a loadBalancerIP yet: the DNS record is left as it is"
		p.setCondition(v1alpha1.ConditionDNSReady, metav1.ConditionFalse, v1alpha1.ReasonNoDNSTarget, msg)
		return
	}
	present, err := p.c.dnsCRDPresent()
	if err != nil {
		p.fail(err)
		return
	}
	target := g.Spec.Sites[siteIdx(g, g.Status.ActiveSite)].LoadBalancerIP
	if !present {
		msg := fmt.Sprintf("the external-dns CRD %s is not installed: %s is not pointed at %s (site %s)", dnsCRDName, g.Spec.DNS.Hostname, target, g.Status.ActiveSite)
		if p.changed(v1alpha1.ConditionDNSReady, metav1.ConditionFalse, v1alpha1.ReasonDNSEndpointCRDMissing, msg) {
			p.eventAfterStatus(corev1.EventTypeWarning, v1alpha1.EventDNSEndpointSkippedCRDMissing, msg)
		}
		p.setCondition(v1alpha1.ConditionDNSReady, metav1.ConditionFalse, v1alpha1.ReasonDNSEndpointCRDMissing, msg)
		p.requeue = p.c.dnsRecheck
		return
	}
	api := p.c.dyn.Resource(render.DNSEndpointGVR).Namespace(g.Namespace)
	live, err := api.Get(ctx, desired.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := api.Create(ctx, desired, metav1.CreateOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				p.c.forgetDNSCRD() // the CRD went away since discovery said it was there
			}
			p.fail(fmt.Errorf("create DNSEndpoint %s: %w", desired.GetName(), err))
			return
		}
		p.c.recorder.Eventf(g, corev1.EventTypeNormal, v1alpha1.EventDNSEndpointUpdated, "%s now points at %s (site %s)", g.Spec.DNS.Hostname, target, g.Status.ActiveSite)
	case err != nil:
		p.fail(fmt.Errorf("get DNSEndpoint %s: %w", desired.GetName(), err))
		return
	case !metav1.IsControlledBy(live, g):
		p.invalid = append(p.invalid, fmt.Sprintf("DNSEndpoint %s exists and is not controlled by this group", live.GetName()))
		return
	default:
		out := live.DeepCopy()
		meta := metav1.ObjectMeta{Labels: out.GetLabels(), OwnerReferences: out.GetOwnerReferences()}
		render.MergeMeta(&meta, metav1.ObjectMeta{Labels: desired.GetLabels(), OwnerReferences: desired.GetOwnerReferences()})
		out.SetLabels(meta.Labels)
		out.SetOwnerReferences(meta.OwnerReferences)
		out.Object["spec"] = desired.Object["spec"]
		if !equality.Semantic.DeepEqual(out.Object, live.Object) {
			if _, err := api.Update(ctx, out, metav1.UpdateOptions{}); err != nil {
				p.fail(fmt.Errorf("update DNSEndpoint %s: %w", out.GetName(), err))
				return
			}
			if targets(live) != targets(desired) {
				p.c.recorder.Eventf(g, corev1.EventTypeNormal, v1alpha1.EventDNSEndpointUpdated, "%s now points at %s (site %s)", g.Spec.DNS.Hostname, target, g.Status.ActiveSite)
			}
		}
	}
	p.setCondition(v1alpha1.ConditionDNSReady, metav1.ConditionTrue, v1alpha1.ReasonDNSEndpointCurrent,
		fmt.Sprintf("%s points at %s (site %s)", g.Spec.DNS.Hostname, target, g.Status.ActiveSite))
}

// targets renders a DNSEndpoint's record targets for comparison.
func targets(u *unstructured.Unstructured) string {
	eps, _, _ := unstructured.NestedSlice(u.Object, "spec", "endpoints")
	return fmt.Sprint(eps)
}

// deleteDNSEndpoint removes the group's DNSEndpoint if it exists and the
// group controls it.
func (c *Controller) deleteDNSEndpoint(ctx context.Context, namespace, name string, owner metav1.Object) (bool, error) {
	present, err := c.dnsCRDPresent()
	if err != nil || !present {
		return false, err
	}
	api := c.dyn.Resource(render.DNSEndpointGVR).Namespace(namespace)
	live, err := api.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get DNSEndpoint %s: %w", name, err)
	}
	if !metav1.IsControlledBy(live, owner) {
		return false, nil
	}
	uid := live.GetUID()
	err = api.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("delete DNSEndpoint %s: %w", name, err)
	}
	return err == nil, nil
}
