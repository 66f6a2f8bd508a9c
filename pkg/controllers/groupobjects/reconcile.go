package groupobjects

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/utils/ptr"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controller"
	"github.com/shipstream/bloodraven/pkg/render"
)

// pass is one reconcile of one group: what it observed, the conditions it
// decided, the errors it met and how soon it wants to run again.
type pass struct {
	c       *Controller
	g       *v1alpha1.MysqlFailoverGroup
	kube    kubeinformers.SharedInformerFactory
	conds   []metav1.Condition
	errs    []error
	invalid []string // render and ownership problems, for ResourcesReady
	// refused are objects the API server refused as invalid (a requested
	// nodePort outside the cluster's range or taken, an extra container it
	// rejects): retrying cannot help until the spec changes, so
	// ResourcesReady says so.
	refused []string
	requeue time.Duration

	sts  map[string]*appsv1.StatefulSet
	pods map[string]*corev1.Pod
	// phase is the status.updatePhase this pass decided (set when
	// phaseDecided).
	phase        v1alpha1.UpdatePhase
	phaseDecided bool
	// conditionEvents describe a condition or phase this pass sets: they are
	// recorded only once the status write that stores it succeeded, so an
	// Event never reports a state the group does not show (a failed write
	// leaves the stored condition as it was, and the next pass reports the
	// change again).
	conditionEvents []conditionEvent
}

type conditionEvent struct{ typ, reason, msg string }

func (p *pass) fail(err error) { p.errs = append(p.errs, err) }

// eventAfterStatus records an Event about the condition or phase being set,
// after the status write.
func (p *pass) eventAfterStatus(typ, reason, msg string) {
	p.conditionEvents = append(p.conditionEvents, conditionEvent{typ, reason, msg})
}

func (p *pass) setCondition(typ string, status metav1.ConditionStatus, reason, msg string) {
	p.conds = append(p.conds, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: p.g.Generation,
	})
}

// previous is the condition as stored before this pass.
func (p *pass) previous(typ string) *metav1.Condition {
	return meta.FindStatusCondition(p.g.Status.Conditions, typ)
}

// changed reports whether cond differs from the stored one in status,
// reason or message: Events are recorded on changes, not on every pass.
func (p *pass) changed(typ string, status metav1.ConditionStatus, reason, msg string) bool {
	prev := p.previous(typ)
	return prev == nil || prev.Status != status || prev.Reason != reason || prev.Message != msg
}

func (c *Controller) reconcile(ctx context.Context, key controller.Key) (controller.Result, error) {
	f := c.informers.ShipstreamFor(key.Namespace)
	kf := c.informers.KubeFor(key.Namespace)
	if f == nil || kf == nil {
		return controller.Result{}, nil
	}
	g, err := f.Shipstream().V1alpha1().MysqlFailoverGroups().Lister().MysqlFailoverGroups(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	if g.DeletionTimestamp != nil {
		c.forgetSkew(g.UID)
		return controller.Result{}, c.finalize(ctx, g)
	}
	if !hasFinalizer(g) {
		g = g.DeepCopy()
		g.Finalizers = append(g.Finalizers, render.Finalizer)
		if g, err = c.ship.ShipstreamV1alpha1().MysqlFailoverGroups(g.Namespace).Update(ctx, g, metav1.UpdateOptions{}); err != nil {
			return controller.Result{}, fmt.Errorf("add finalizer %s: %w", render.Finalizer, err)
		}
	}

	p := &pass{c: c, g: g, kube: kf, sts: map[string]*appsv1.StatefulSet{}, pods: map[string]*corev1.Pod{}}
	c.sidecarSkew(g)
	p.initDB(ctx) // initdb.go: before the pods that mount it
	p.sites(ctx)
	p.services(ctx)
	p.activeLabels(ctx)
	p.readPool(ctx)
	p.dns(ctx)
	p.taints(ctx)
	p.resourcesReady()
	if err := p.writeStatus(ctx); err != nil {
		p.fail(err)
	} else {
		for _, e := range p.conditionEvents {
			c.recorder.Event(p.g, e.typ, e.reason, e.msg)
		}
	}
	return controller.Result{RequeueAfter: p.requeue}, errors.Join(p.errs...)
}

// resourcesReady sets ResourcesReady from what the pass met: render and
// ownership problems first, then objects the API server refused. A Warning
// Event is recorded when the message changes, not on every pass.
func (p *pass) resourcesReady() {
	reason, event, problems := v1alpha1.ReasonRenderFailed, v1alpha1.EventSiteRenderFailed, p.invalid
	if len(problems) == 0 {
		reason, event, problems = v1alpha1.ReasonApplyRefused, v1alpha1.EventObjectRefused, p.refused
	} else {
		problems = append(problems, p.refused...)
	}
	if len(problems) == 0 {
		p.setCondition(v1alpha1.ConditionResourcesReady, metav1.ConditionTrue, v1alpha1.ReasonReconciled, "every site's StatefulSet, ConfigMap and Services match the spec")
		return
	}
	msg := strings.Join(problems, "; ")
	// The API server's refusals can be long; a condition message over the
	// API's limit would make the whole status write fail.
	if len(msg) > maxConditionMessage {
		msg = strings.ToValidUTF8(msg[:maxConditionMessage], "") + " (truncated)"
	}
	if p.changed(v1alpha1.ConditionResourcesReady, metav1.ConditionFalse, reason, msg) {
		p.eventAfterStatus(corev1.EventTypeWarning, event, msg)
	}
	p.setCondition(v1alpha1.ConditionResourcesReady, metav1.ConditionFalse, reason, msg)
}

// maxConditionMessage bounds ResourcesReady's message, well under the
// 32768 bytes a condition message may hold.
const maxConditionMessage = 4096

// applyFailed records a failed create or update of one of the group's
// objects. It is always an error of the pass (retried with backoff: a port
// taken by another Service may be released); when the API server refused
// the object as invalid, it is also reported in ResourcesReady, naming the
// object and the spec fields it comes from.
func (p *pass) applyFailed(object, from string, err error) {
	p.fail(err)
	if apierrors.IsInvalid(err) {
		var status apierrors.APIStatus
		msg := err.Error()
		if errors.As(err, &status) {
			msg = status.Status().Message
		}
		p.refused = append(p.refused, fmt.Sprintf("%s (from %s) refused by the API server: %s", object, from, msg))
	}
}

func hasFinalizer(g *v1alpha1.MysqlFailoverGroup) bool {
	for _, f := range g.Finalizers {
		if f == render.Finalizer {
			return true
		}
	}
	return false
}

func (p *pass) writeStatus(ctx context.Context) error {
	update := p.c.ship.ShipstreamV1alpha1().MysqlFailoverGroups(p.g.Namespace).UpdateStatus
	_, _, err := controller.UpdateStatusIfChanged(ctx, p.g,
		func(o *v1alpha1.MysqlFailoverGroup) any { return o.Status },
		func(o *v1alpha1.MysqlFailoverGroup) {
			for _, c := range p.conds {
				meta.SetStatusCondition(&o.Status.Conditions, c)
			}
			if p.phaseDecided {
				o.Status.UpdatePhase = p.phase
			}
		}, update)
	if err != nil {
		return fmt.Errorf("update status: %w", err)
	}
	return nil
}

func strategyOf(g *v1alpha1.MysqlFailoverGroup) v1alpha1.UpdateStrategyType {
	if g.Spec.UpdateStrategy != nil && g.Spec.UpdateStrategy.Type != "" {
		return g.Spec.UpdateStrategy.Type
	}
	return v1alpha1.DefaultUpdateStrategyType
}

// sites renders every site, observes its StatefulSet and pod, decides the
// rollout and applies it.
func (p *pass) sites(ctx context.Context) {
	g := p.g
	rendered := map[string]*render.Site{}
	var states []SiteState
	for i, spec := range g.Spec.Sites {
		s, err := render.RenderSite(g, i, p.c.render)
		if err != nil {
			p.invalid = append(p.invalid, fmt.Sprintf("site %s: %v", spec.Name, err))
			continue
		}
		st, ok := p.observeSite(s)
		if !ok {
			continue
		}
		st.Role = spec.Role
		rendered[spec.Name] = s
		states = append(states, st)
	}
	plan := PlanRollout(p.rolloutInput(states))
	for _, a := range plan.Sites {
		if err := p.applySite(ctx, rendered[a.Name], a); err != nil {
			p.applyFailed("site "+a.Name, fmt.Sprintf("spec.sites[%d] and the group-wide pod settings: image, sidecar, podLabels, podAnnotations, extraContainers, extraInitContainers", siteIdx(g, a.Name)), fmt.Errorf("site %s: %w", a.Name, err))
		}
	}
	p.orderedUpdate(ctx, plan)
}

// observeSite reads the site's StatefulSet and pod from the informers. A
// StatefulSet of that name that this group does not control is left alone
// and reported.
func (p *pass) observeSite(s *render.Site) (SiteState, bool) {
	st := SiteState{Name: s.Name, DesiredHash: s.TemplateHash}
	sts, err := p.kube.Apps().V1().StatefulSets().Lister().StatefulSets(p.g.Namespace).Get(s.StatefulSet.Name)
	switch {
	case apierrors.IsNotFound(err):
		return st, true
	case err != nil:
		p.fail(err)
		return st, false
	case !metav1.IsControlledBy(sts, p.g):
		p.invalid = append(p.invalid, fmt.Sprintf("site %s: StatefulSet %s exists and is not controlled by this group", s.Name, sts.Name))
		return st, false
	}
	p.sts[s.Name] = sts
	st.StatefulSetExists = true
	st.StatefulSetHash = sts.Spec.Template.Annotations[render.AnnotationPodTemplateHash]
	if !sameImages(sts.Spec.Template.Spec, s.StatefulSet.Spec.Template.Spec) {
		// Edited out of band (an image pinned by hand) while the hash
		// annotation stayed: treat it as an old template, so it is rolled back.
		st.StatefulSetHash = ""
	}
	st.StatefulSetObserved = sts.Status.ObservedGeneration >= sts.Generation
	pod, err := p.kube.Core().V1().Pods().Lister().Pods(p.g.Namespace).Get(render.PodName(p.g.Name, s.Name))
	if err == nil && metav1.IsControlledBy(pod, sts) {
		p.pods[s.Name] = pod
		st.PodExists = true
		st.PodHash = pod.Annotations[render.AnnotationPodTemplateHash]
		st.PodTerminating = pod.DeletionTimestamp != nil
		observePodReadiness(pod, &st)
	}
	for _, ss := range p.g.Status.Sites {
		if ss.Name == s.Name {
			st.Replication, st.DivergentGTID, st.RecoveryState = ss.Replication, ss.DivergentGTID, ss.RecoveryState
		}
	}
	return st, true
}

// observePodReadiness reads whether the pod is Ready and since when it has
// been (or not been) Ready, from its Ready condition's last transition, and
// how often its containers restarted.
func observePodReadiness(pod *corev1.Pod, st *SiteState) {
	st.PodNotReadySince = pod.CreationTimestamp.Time
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.PodReady {
			continue
		}
		st.PodReady = c.Status == corev1.ConditionTrue
		if st.PodReady {
			st.PodReadySince = c.LastTransitionTime.Time
		} else if !c.LastTransitionTime.IsZero() {
			st.PodNotReadySince = c.LastTransitionTime.Time
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		st.PodRestarts += cs.RestartCount
	}
}

func (p *pass) applySite(ctx context.Context, s *render.Site, a SiteAction) error {
	g := p.g
	live := p.sts[s.Name]
	// The my.cnf of a held or waiting site stays as it is: a restart of its
	// container must not pick up a configuration the rollout has not reached.
	if err := p.ensureConfigMap(ctx, s.ConfigMap, live == nil || a.ApplyTemplate || (!a.Held && !a.Waiting)); err != nil {
		return err
	}
	apps := p.c.kube.AppsV1().StatefulSets(g.Namespace)
	if live == nil {
		if _, err := apps.Create(ctx, s.StatefulSet, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create StatefulSet %s: %w", s.StatefulSet.Name, err)
		}
		p.warnIgnored(s)
		return nil
	}
	out := live.DeepCopy()
	render.MergeMeta(&out.ObjectMeta, s.StatefulSet.ObjectMeta)
	out.Spec.Replicas = ptr.To(int32(1))
	out.Spec.UpdateStrategy = s.StatefulSet.Spec.UpdateStrategy
	out.Spec.PersistentVolumeClaimRetentionPolicy = s.StatefulSet.Spec.PersistentVolumeClaimRetentionPolicy
	if a.ApplyTemplate {
		out.Spec.Template = s.StatefulSet.Spec.Template
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[render.AnnotationPodTemplateHash] = out.Spec.Template.Annotations[render.AnnotationPodTemplateHash]
	if !equality.Semantic.DeepEqual(out, live) {
		if _, err := apps.Update(ctx, out, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update StatefulSet %s: %w", out.Name, err)
		}
		if a.ApplyTemplate {
			p.warnIgnored(s)
		}
	}
	if a.DeletePod {
		pod := p.pods[s.Name]
		err := p.c.kube.CoreV1().Pods(g.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: ptr.To(pod.UID)},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("delete pod %s: %w", pod.Name, err)
		}
		if err == nil {
			p.c.recorder.Eventf(g, corev1.EventTypeNormal, v1alpha1.EventSiteRolled,
				"site %s: deleted pod %s so that it is recreated from pod template %s", s.Name, pod.Name, s.TemplateHash)
		}
	}
	return nil
}

func (p *pass) warnIgnored(s *render.Site) {
	if len(s.IgnoredOptions) > 0 {
		p.c.recorder.Eventf(p.g, corev1.EventTypeWarning, v1alpha1.EventMySQLConfOptionIgnored,
			"site %s: %s ignored: the operator owns these options", s.Name, strings.Join(s.IgnoredOptions, ", "))
	}
}

// ensureConfigMap creates the ConfigMap, or, when update is set, makes the
// existing one match.
func (p *pass) ensureConfigMap(ctx context.Context, desired *corev1.ConfigMap, update bool) error {
	cms := p.c.kube.CoreV1().ConfigMaps(p.g.Namespace)
	live, err := p.kube.Core().V1().ConfigMaps().Lister().ConfigMaps(p.g.Namespace).Get(desired.Name)
	if apierrors.IsNotFound(err) {
		if _, err := cms.Create(ctx, desired, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create ConfigMap %s: %w", desired.Name, err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if !metav1.IsControlledBy(live, p.g) {
		p.invalid = append(p.invalid, fmt.Sprintf("ConfigMap %s exists and is not controlled by this group", live.Name))
		return nil
	}
	if !update {
		return nil
	}
	out := live.DeepCopy()
	render.MergeMeta(&out.ObjectMeta, desired.ObjectMeta)
	out.Data = desired.Data
	out.BinaryData = nil
	if equality.Semantic.DeepEqual(out, live) {
		return nil
	}
	if _, err := cms.Update(ctx, out, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update ConfigMap %s: %w", out.Name, err)
	}
	return nil
}

// services creates or updates the group's Services, keeping what Kubernetes
// allocated (see render.MergeService).
func (p *pass) services(ctx context.Context) {
	desired, err := render.Services(p.g)
	if err != nil {
		p.invalid = append(p.invalid, err.Error())
		return
	}
	api := p.c.kube.CoreV1().Services(p.g.Namespace)
	lister := p.kube.Core().V1().Services().Lister().Services(p.g.Namespace)
	for _, d := range desired {
		live, err := lister.Get(d.Name)
		switch {
		case apierrors.IsNotFound(err):
			if _, err := api.Create(ctx, render.NewService(d), metav1.CreateOptions{}); err != nil {
				p.applyFailed("Service "+d.Name, serviceFields(p.g, d), fmt.Errorf("create Service %s: %w", d.Name, err))
			}
			continue
		case err != nil:
			p.fail(err)
			continue
		case !metav1.IsControlledBy(live, p.g):
			p.invalid = append(p.invalid, fmt.Sprintf("Service %s exists and is not controlled by this group", d.Name))
			continue
		}
		if out, changed := render.MergeService(d, live); changed {
			if _, err := api.Update(ctx, out, metav1.UpdateOptions{}); err != nil {
				p.applyFailed("Service "+d.Name, serviceFields(p.g, d), fmt.Errorf("update Service %s: %w", d.Name, err))
			}
		}
	}
}

// serviceFields names the spec fields a rendered Service comes from, for a
// refusal's message.
func serviceFields(g *v1alpha1.MysqlFailoverGroup, svc *corev1.Service) string {
	site := svc.Labels[render.LabelSite]
	switch {
	case svc.Labels[render.LabelService] == render.ServiceInternal:
		return fmt.Sprintf("spec.sites[%d].name", siteIdx(g, site))
	case site != "":
		return fmt.Sprintf("spec.serviceTemplate and spec.sites[%d].serviceTemplate", siteIdx(g, site))
	default:
		return "spec.serviceTemplate"
	}
}

// activeLabels keeps LabelActive on each site's pod true to
// status.activeSite; the primary and replicas Services select on it.
func (p *pass) activeLabels(ctx context.Context) {
	for site, pod := range p.pods {
		want := "false"
		if site == p.g.Status.ActiveSite {
			want = "true"
		}
		if pod.Labels[render.LabelActive] == want || pod.DeletionTimestamp != nil {
			continue
		}
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, render.LabelActive, want)
		_, err := p.c.kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			p.fail(fmt.Errorf("label pod %s %s=%s: %w", pod.Name, render.LabelActive, want, err))
		}
	}
}

// sameImages reports whether two pod specs run the same image in each
// container, by name: the drift an out-of-band edit most often causes, and
// one the API server never introduces by defaulting.
func sameImages(live, desired corev1.PodSpec) bool {
	images := func(s corev1.PodSpec) map[string]string {
		m := map[string]string{}
		for _, c := range s.InitContainers {
			m["init/"+c.Name] = c.Image
		}
		for _, c := range s.Containers {
			m[c.Name] = c.Image
		}
		return m
	}
	l, d := images(live), images(desired)
	if len(l) != len(d) {
		return false
	}
	for k, v := range d {
		if l[k] != v {
			return false
		}
	}
	return true
}
