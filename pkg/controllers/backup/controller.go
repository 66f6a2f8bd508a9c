package backup

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/shipstream/bloodraven/generated/clientset/versioned"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controller"
	"github.com/shipstream/bloodraven/pkg/operator"
)

// QueueName names the controller's workqueue (metrics label, logs).
const QueueName = "backup"

// DefaultResync is how often a backup is looked at again with no event.
const DefaultResync = 5 * time.Minute

// byGroupIndex indexes MysqlBackups by "<namespace>/<failoverGroupRef>".
const byGroupIndex = "failoverGroup"

var backupKind = schema.GroupKind{Group: v1alpha1.SchemeGroupVersion.Group, Kind: "MysqlBackup"}

// Options configure the controller.
type Options struct {
	// Image is the Bloodraven image whose entrypoint runs the upload step
	// (encrypt-upload). Required.
	Image string
	// Results reads the stamps of finished Jobs; nil: StoreResults{}.
	Results Results
	// Resync: how often a backup is checked again with no event; zero:
	// DefaultResync.
	Resync time.Duration
	// Now replaces the clock in tests.
	Now func() time.Time
}

// Controller runs each MysqlBackup as one Job and records its result.
type Controller struct {
	*controller.Loop
	client    versioned.Interface
	kube      kubernetes.Interface
	informers *operator.Informers
	recorder  record.EventRecorder
	opts      Options

	mu     sync.Mutex
	groups map[string]*groupSlot // by namespace/group
}

// groupSlot serializes the claims of one group's backups: one backup of a
// group runs at a time, and the cache may not show a claim this process
// just wrote.
type groupSlot struct {
	sync.Mutex
	// holder is the backup this process last saw claim the slot.
	holder     types.UID
	holderName string
}

// New builds the controller on d's clients and informers and registers its
// event handlers; start the informers after it, then Run.
func New(d operator.Deps, opts Options) (*Controller, error) {
	if d.Shipstream == nil || d.Kube == nil || d.Informers == nil || d.Recorder == nil {
		return nil, errors.New("backup controller: Kube, Shipstream, Informers and Recorder are required")
	}
	if opts.Image == "" {
		return nil, errors.New("backup controller: Options.Image (the Bloodraven image running encrypt-upload) is required")
	}
	if opts.Results == nil {
		opts.Results = StoreResults{}
	}
	if opts.Resync <= 0 {
		opts.Resync = DefaultResync
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Controller{client: d.Shipstream, kube: d.Kube, informers: d.Informers, recorder: d.Recorder, opts: opts, groups: map[string]*groupSlot{}}
	loop, err := controller.New(controller.Options{Name: QueueName, Reconcile: c.reconcile, MetricsProvider: d.WorkqueueMetrics(), Logger: d.Logger()})
	if err != nil {
		return nil, err
	}
	c.Loop = loop
	for ns, f := range d.Informers.Shipstream {
		backups := f.Shipstream().V1alpha1().MysqlBackups()
		inf := backups.Informer()
		if err := inf.AddIndexers(cache.Indexers{byGroupIndex: indexByGroup}); err != nil {
			return nil, fmt.Errorf("backup controller: %w", err)
		}
		if err := loop.Watch(inf, loop.EnqueueSelf()); err != nil {
			return nil, err
		}
		// A backup finishing frees its group's slot: wake its siblings.
		if err := loop.Watch(inf, loop.EnqueueMapped(siblings(inf.GetIndexer()))); err != nil {
			return nil, err
		}
		groups := f.Shipstream().V1alpha1().MysqlFailoverGroups().Informer()
		if err := loop.Watch(groups, loop.EnqueueMapped(mapIndex(inf.GetIndexer()))); err != nil {
			return nil, err
		}
		k := d.Informers.Kube[ns]
		if k == nil {
			continue
		}
		get := func(namespace, name string) (metav1.Object, error) {
			return backups.Lister().MysqlBackups(namespace).Get(name)
		}
		if err := loop.Watch(k.Batch().V1().Jobs().Informer(), loop.EnqueueOwner(backupKind, get)); err != nil {
			return nil, err
		}
		k.Core().V1().Secrets().Informer() // read through its lister
	}
	return c, nil
}

func indexByGroup(obj any) ([]string, error) {
	b, ok := obj.(*v1alpha1.MysqlBackup)
	if !ok {
		return nil, nil
	}
	return []string{b.Namespace + "/" + b.Spec.FailoverGroupRef.Name}, nil
}

func siblings(idx cache.Indexer) controller.MapFunc {
	byGroup := mapIndex(idx)
	return func(o metav1.Object) []controller.Key {
		b, ok := o.(*v1alpha1.MysqlBackup)
		if !ok {
			return nil
		}
		return byGroup(&metav1.ObjectMeta{Namespace: b.Namespace, Name: b.Spec.FailoverGroupRef.Name})
	}
}

// mapIndex maps a group (or a stand-in with its namespace and name) to its
// backups.
func mapIndex(idx cache.Indexer) controller.MapFunc {
	return func(o metav1.Object) []controller.Key {
		objs, err := idx.ByIndex(byGroupIndex, o.GetNamespace()+"/"+o.GetName())
		if err != nil {
			return nil
		}
		var keys []controller.Key
		for _, x := range objs {
			if k, ok := controller.KeyOf(x); ok {
				keys = append(keys, k)
			}
		}
		return keys
	}
}

func (c *Controller) slot(ns, group string) *groupSlot {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := ns + "/" + group
	if c.groups[k] == nil {
		c.groups[k] = &groupSlot{}
	}
	return c.groups[k]
}

func (c *Controller) reconcile(ctx context.Context, key controller.Key) (controller.Result, error) {
	f := c.informers.ShipstreamFor(key.Namespace)
	if f == nil {
		return controller.Result{}, nil
	}
	b, err := f.Shipstream().V1alpha1().MysqlBackups().Lister().MysqlBackups(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	if b.DeletionTimestamp != nil || b.Status.Phase == v1alpha1.PhaseSucceeded || b.Status.Phase == v1alpha1.PhaseFailed {
		return controller.Result{}, nil
	}
	slot := c.slot(b.Namespace, b.Spec.FailoverGroupRef.Name)
	if b.Status.JobName == "" {
		// Deciding whether this backup may claim its group's slot and
		// writing the claim happen under the slot's lock.
		slot.Lock()
		defer slot.Unlock()
	}
	in, err := c.input(ctx, b, slot)
	if err != nil {
		return controller.Result{}, err
	}
	v := Decide(in)
	if v.Action == ReadResult {
		var conf Confirmed
		var readErr error
		if p := profileOf(in); p != nil {
			in, conf, readErr = c.readResult(ctx, in, p)
		}
		var retry error
		if v, retry = Outcome(in, conf, readErr); retry != nil {
			return controller.Result{}, fmt.Errorf("MysqlBackup %s/%s: the stamp of Job %s: %w", b.Namespace, b.Name, b.Status.JobName, retry)
		}
	}
	wrote, err := c.publish(ctx, b, v)
	if err != nil {
		return controller.Result{}, err
	}
	if wrote && v.Action == CreateJob && b.Status.JobName == "" {
		slot.holder, slot.holderName = b.UID, b.Name
	}
	if v.Action == CreateJob {
		if err := c.createJob(ctx, b, in, v.Status); err != nil {
			return controller.Result{}, err
		}
	}
	requeue := c.opts.Resync
	if v.RequeueAfter > 0 && v.RequeueAfter < requeue {
		requeue = v.RequeueAfter
	}
	return controller.Result{RequeueAfter: requeue}, nil
}

func profileOf(in Input) *v1alpha1.BackupProfile {
	if in.Group == nil {
		return nil
	}
	return findProfile(in.Group, in.Backup.Spec.ProfileName)
}

// input reads what Decide needs from the listers. A claimed backup's Job
// missing from the cache is looked up on the API server, so that a Job the
// cache has not caught up with is never taken for a deleted one.
func (c *Controller) input(ctx context.Context, b *v1alpha1.MysqlBackup, slot *groupSlot) (Input, error) {
	lister := c.informers.ShipstreamFor(b.Namespace).Shipstream().V1alpha1()
	in := Input{Backup: b, Now: c.opts.Now(), Secret: c.secretGetter(b.Namespace), Cloning: map[string]bool{}}
	g, err := lister.MysqlFailoverGroups().Lister().MysqlFailoverGroups(b.Namespace).Get(b.Spec.FailoverGroupRef.Name)
	switch {
	case err == nil:
		in.Group, in.Cloning = g, CloningSites(g)
	case !apierrors.IsNotFound(err):
		return in, err
	}
	if b.Status.JobName != "" {
		j, err := c.job(ctx, b.Namespace, b.Status.JobName)
		if err != nil {
			return in, err
		}
		in.Job = j
		if j == nil { // the Job is about to be created: its claim matters
			in.Claim, err = c.provisionedClaim(ctx, in)
		}
		return in, err
	}
	if in.Claim, err = c.provisionedClaim(ctx, in); err != nil {
		return in, err
	}
	in.Blocker, err = c.blocker(b, slot)
	return in, err
}

func (c *Controller) job(ctx context.Context, ns, name string) (*batchv1.Job, error) {
	k := c.informers.KubeFor(ns)
	if k != nil {
		j, err := k.Batch().V1().Jobs().Lister().Jobs(ns).Get(name)
		if err == nil {
			return j, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	j, err := c.kube.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return j, err
}

// blocker names the backup of b's group that holds the group's slot: the
// oldest other claimed, unfinished one, or the one this process saw claim
// it last if the cache does not show it finished.
func (c *Controller) blocker(b *v1alpha1.MysqlBackup, slot *groupSlot) (string, error) {
	idx := c.informers.ShipstreamFor(b.Namespace).Shipstream().V1alpha1().MysqlBackups().Informer().GetIndexer()
	objs, err := idx.ByIndex(byGroupIndex, b.Namespace+"/"+b.Spec.FailoverGroupRef.Name)
	if err != nil {
		return "", err
	}
	var held []*v1alpha1.MysqlBackup
	holderLive := false
	for _, o := range objs {
		x, ok := o.(*v1alpha1.MysqlBackup)
		if !ok || x.UID == b.UID {
			continue
		}
		unfinished := x.Status.Phase != v1alpha1.PhaseSucceeded && x.Status.Phase != v1alpha1.PhaseFailed && x.DeletionTimestamp == nil
		if x.UID == slot.holder && unfinished {
			holderLive = true
		}
		if unfinished && x.Status.JobName != "" {
			held = append(held, x)
		}
	}
	if len(held) > 0 {
		sort.Slice(held, func(i, j int) bool { return older(held[i], held[j]) })
		return held[0].Name, nil
	}
	if holderLive {
		return slot.holderName, nil
	}
	if slot.holder != b.UID {
		slot.holder, slot.holderName = "", ""
	}
	return "", nil
}

func older(a, b *v1alpha1.MysqlBackup) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

func (c *Controller) secretGetter(ns string) SecretGetter {
	return func(name string) (map[string][]byte, bool) {
		k := c.informers.KubeFor(ns)
		if k == nil || name == "" {
			return nil, false
		}
		s, err := k.Core().V1().Secrets().Lister().Secrets(ns).Get(name)
		if err != nil {
			return nil, false
		}
		return s.Data, true
	}
}

// publish writes v's status when it changed and records its Event if it did.
func (c *Controller) publish(ctx context.Context, b *v1alpha1.MysqlBackup, v Verdict) (bool, error) {
	status := func(o *v1alpha1.MysqlBackup) any { return o.Status }
	update := c.client.ShipstreamV1alpha1().MysqlBackups(b.Namespace).UpdateStatus
	_, wrote, err := controller.UpdateStatusIfChanged(ctx, b, status, func(o *v1alpha1.MysqlBackup) { o.Status = v.Status }, update)
	if err != nil {
		return false, fmt.Errorf("update status of MysqlBackup %s/%s: %w", b.Namespace, b.Name, err)
	}
	if wrote && v.Event != nil {
		c.recorder.Event(b, v.Event.Type, v.Event.Reason, v.Event.Message)
	}
	return wrote, nil
}

// createJob makes the key snapshot (encrypted profiles) and the Job the
// claim in st names. Both names are fixed by the claim, so a retry after a
// crash finds what the first try made.
func (c *Controller) createJob(ctx context.Context, b *v1alpha1.MysqlBackup, in Input, st v1alpha1.MysqlBackupStatus) error {
	p := profileOf(in)
	if p == nil {
		return fmt.Errorf("MysqlBackup %s/%s: profile %s is gone; the claimed Job %s was not created", b.Namespace, b.Name, b.Spec.ProfileName, st.JobName)
	}
	claimed := b.DeepCopy()
	claimed.Status = st
	if provisioned(p) {
		if err := c.ensureClaim(ctx, in.Group, p); err != nil {
			return err
		}
	}
	if st.Encryption != nil {
		if err := c.keySnapshot(ctx, claimed, in, p); err != nil {
			return err
		}
	}
	j, err := RenderJob(JobInput{Backup: claimed, Group: in.Group, Profile: p, Image: c.opts.Image})
	if err != nil {
		return fmt.Errorf("MysqlBackup %s/%s: %w", b.Namespace, b.Name, err)
	}
	_, err = c.kube.BatchV1().Jobs(b.Namespace).Create(ctx, j, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Job %s/%s: %w", b.Namespace, j.Name, err)
	}
	return nil
}

// keySnapshot copies the profile's passphrase into the backup's own key
// Secret. It has no owner reference: it must outlive the backup object and
// the group, as long as the artifact may be restored.
func (c *Controller) keySnapshot(ctx context.Context, b *v1alpha1.MysqlBackup, in Input, p *v1alpha1.BackupProfile) error {
	name := b.Status.Encryption.KeySecretName
	if _, err := c.kube.CoreV1().Secrets(b.Namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
		return nil // made by an earlier try: never replaced
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	ref := p.Encryption.PassphraseSecretKeyRef
	data, ok := in.Secret(ref.Name)
	if !ok || len(strings.TrimSpace(string(data[passphraseKey(p.Encryption)]))) == 0 {
		return fmt.Errorf("MysqlBackup %s/%s: the passphrase Secret %s went away before the key snapshot was made", b.Namespace, b.Name, ref.Name)
	}
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: b.Namespace,
			Labels:      map[string]string{LabelBackup: b.Name, LabelGroup: b.Spec.FailoverGroupRef.Name, labelManagedBy: "bloodraven"},
			Annotations: map[string]string{annotationBackupUID: string(b.UID)}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{PassphraseKey: data[passphraseKey(p.Encryption)]},
	}
	_, err := c.kube.CoreV1().Secrets(b.Namespace).Create(ctx, sec, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create key snapshot Secret %s/%s: %w", b.Namespace, name, err)
	}
	return nil
}

// annotationBackupUID on a key snapshot names the backup it decrypts.
const annotationBackupUID = "bloodraven.shipstream.io/backup-uid"

// provisionedClaim is the provisioned claim of the backup's profile, read
// from the API server (not a cache: a claim the operator created a moment
// ago must not look absent, nor a foreign one), or nil.
func (c *Controller) provisionedClaim(ctx context.Context, in Input) (*corev1.PersistentVolumeClaim, error) {
	p := profileOf(in)
	if p == nil || !provisioned(p) {
		return nil, nil
	}
	name := ProvisionedClaimName(in.Group.Name, p.Name)
	pvc, err := c.kube.CoreV1().PersistentVolumeClaims(in.Group.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get PersistentVolumeClaim %s/%s: %w", in.Group.Namespace, name, err)
	}
	return pvc, nil
}

// ensureClaim creates the profile's provisioned claim if it is absent. One
// that exists is left as it is; if it is not the group's, the Job is not
// created, and the next look (Decide, claimProblem) fails the backup.
func (c *Controller) ensureClaim(ctx context.Context, g *v1alpha1.MysqlFailoverGroup, p *v1alpha1.BackupProfile) error {
	want, err := RenderClaim(g, p)
	if err != nil {
		return err
	}
	_, err = c.kube.CoreV1().PersistentVolumeClaims(g.Namespace).Create(ctx, want, metav1.CreateOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create PersistentVolumeClaim %s/%s: %w", g.Namespace, want.Name, err)
	}
	cur, err := c.kube.CoreV1().PersistentVolumeClaims(g.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get PersistentVolumeClaim %s/%s: %w", g.Namespace, want.Name, err)
	}
	if !ownedBy(cur, g) {
		return fmt.Errorf("PersistentVolumeClaim %s/%s exists and is not MysqlFailoverGroup %s's; the Job is not created", g.Namespace, want.Name, g.Name)
	}
	return nil
}
