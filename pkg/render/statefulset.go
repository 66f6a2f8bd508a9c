package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/shipstream/bloodraven/pkg/accounts"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/protocol"
	"github.com/shipstream/bloodraven/pkg/siteaddr"
)

// Container names in a MySQL pod.
const (
	ContainerMySQL   = "mysql"
	ContainerSidecar = "bloodraven-sidecar"
	ConfigVolumeName = "mysql-config"
	TLSVolumeName    = "mysql-tls"
	DataDir          = "/var/lib/mysql"
	// MySQLPIDFile is mysqld's pid-file (my.cnf), which the sidecar reads.
	MySQLPIDFile = DataDir + "/mysqld.pid"
	// MySQLUID is the mysql user of the official MySQL images, which mysqld
	// runs as. The sidecar runs as it too, so that it may read the data
	// directory and signal mysqld through the shared process namespace.
	MySQLUID = 999
	// ZoneLabel is the well-known node label a site's zone is matched against.
	ZoneLabel = "topology.kubernetes.io/zone"
	// MySQLPortName names port 3306 on the container and on every Service.
	MySQLPortName = "mysql"
)

// Config is what the operator process contributes to rendering.
type Config struct {
	// SidecarImage is the operator's BLOODRAVEN_SIDECAR_IMAGE, used when the
	// group does not pin spec.sidecar.image.
	SidecarImage string
	// OperatorEndpoint is host:port of the operator's auxiliary listener as
	// sidecars reach it (its in-cluster Service), used when the group does
	// not set spec.sidecar.operatorEndpoint.
	OperatorEndpoint string
}

// Site is everything rendered for one site.
type Site struct {
	Name        string
	ConfigMap   *corev1.ConfigMap
	StatefulSet *appsv1.StatefulSet
	// TemplateHash is the hash of the StatefulSet's pod template, also in
	// its AnnotationPodTemplateHash.
	TemplateHash string
	// IgnoredOptions are mysqlConf entries naming operator-owned options.
	IgnoredOptions []string
}

// OwnerReference makes g the controlling owner of an object, so the object
// is garbage-collected after g is deleted (and only after g's finalizer is
// gone).
func OwnerReference(g *v1alpha1.MysqlFailoverGroup) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         v1alpha1.SchemeGroupVersion.String(),
		Kind:               "MysqlFailoverGroup",
		Name:               g.Name,
		UID:                g.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
}

func objectMeta(g *v1alpha1.MysqlFailoverGroup, name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       g.Namespace,
		Labels:          labels,
		OwnerReferences: []metav1.OwnerReference{OwnerReference(g)},
	}
}

// SidecarImage is the sidecar image of g's pods: the group's pin, else the
// operator's default.
func (c Config) sidecarImage(g *v1alpha1.MysqlFailoverGroup) string {
	if g.Spec.Sidecar != nil && g.Spec.Sidecar.Image != "" {
		return g.Spec.Sidecar.Image
	}
	return c.SidecarImage
}

// RenderSite renders site i of g: its my.cnf ConfigMap and its StatefulSet.
func RenderSite(g *v1alpha1.MysqlFailoverGroup, i int, cfg Config) (*Site, error) {
	site := g.Spec.Sites[i]
	if cfg.sidecarImage(g) == "" {
		return nil, fmt.Errorf("spec.sidecar.image: unset, and the operator has no default sidecar image (BLOODRAVEN_SIDECAR_IMAGE)")
	}
	size, err := resource.ParseQuantity(site.Storage.Size)
	if err != nil {
		return nil, fmt.Errorf("spec.sites[%d].storage.size: %q is not a quantity: %v", i, site.Storage.Size, err)
	}
	cnf, ignored, err := MyCnf(g, i)
	if err != nil {
		return nil, err
	}
	labels := SiteLabels(g, site.Name)
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: objectMeta(g, ConfigMapName(g.Name, site.Name), labels),
		Data:       map[string]string{MyCnfKey: cnf},
	}

	tmpl := podTemplate(g, i, cfg, hash(cnf))
	tmplHash := hash(tmpl)
	tmpl.Annotations[AnnotationPodTemplateHash] = tmplHash

	sts := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: objectMeta(g, StatefulSetName(g.Name, site.Name), SiteLabels(g, site.Name)),
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To(int32(1)),
			Selector:    &metav1.LabelSelector{MatchLabels: SiteSelector(g.Name, site.Name)},
			ServiceName: InternalServiceName(g.Name, site.Name),
			Template:    tmpl,
			// The operator alone decides when a site's pod is recreated.
			UpdateStrategy:      appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
				ObjectMeta: metav1.ObjectMeta{Name: DataVolumeName, Labels: SiteLabels(g, site.Name)},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: ptr.To(site.Storage.StorageClassName),
					VolumeMode:       ptr.To(corev1.PersistentVolumeFilesystem),
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
				},
			}},
			// The data outlives the StatefulSet: deleting a group never
			// deletes its data volumes.
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
		},
	}
	sts.Annotations = map[string]string{AnnotationPodTemplateHash: tmplHash}
	return &Site{Name: site.Name, ConfigMap: cm, StatefulSet: sts, TemplateHash: tmplHash, IgnoredOptions: ignored}, nil
}

// hash is a short, stable digest of v's JSON form (encoding/json sorts map
// keys, so equal values hash equally).
func hash(v any) string {
	var b []byte
	if s, ok := v.(string); ok {
		b = []byte(s)
	} else {
		var err error
		if b, err = json.Marshal(v); err != nil {
			panic(fmt.Sprintf("render: hash of unmarshalable value: %v", err))
		}
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

// mergeUnder returns user entries overlaid with the operator's: on a
// conflict the operator's value wins.
func mergeUnder(user, operator map[string]string) map[string]string {
	out := make(map[string]string, len(user)+len(operator))
	for k, v := range user {
		out[k] = v
	}
	for k, v := range operator {
		out[k] = v
	}
	return out
}

func podTemplate(g *v1alpha1.MysqlFailoverGroup, i int, cfg Config, cnfHash string) corev1.PodTemplateSpec {
	site := g.Spec.Sites[i]
	spec := g.Spec
	grace := v1alpha1.DefaultTerminationGracePeriodSeconds
	if spec.TerminationGracePeriodSeconds != nil {
		grace = *spec.TerminationGracePeriodSeconds
	}
	image := spec.Image
	if image == "" {
		image = v1alpha1.DefaultImage
	}

	volumes := []corev1.Volume{{
		Name: ConfigVolumeName,
		VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: ConfigMapName(g.Name, site.Name)},
		}},
	}, {
		// The first-boot script (initdb.go); the image runs it once.
		Name: InitDBVolumeName,
		VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: InitDBSecretName(g.Name), DefaultMode: ptr.To(int32(0o440)),
		}},
	}}
	// The sidecars' password Secret (docs/credentials.md, "Rotation"):
	// written by the operator once it manages the group's accounts, so
	// optional, or the pod could not start before the operator's first
	// pass. The kubelet refreshes it in place. Mode 0444: the files are
	// root's and the sidecar runs as mysqld's user; only the sidecar
	// container mounts the volume.
	volumes = append(volumes, corev1.Volume{
		Name: SidecarPasswordVolumeName,
		VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: accounts.SidecarSecretName(g.Name), DefaultMode: ptr.To(int32(0o444)), Optional: ptr.To(true),
		}},
	})
	mysqlMounts := []corev1.VolumeMount{
		{Name: DataVolumeName, MountPath: DataDir},
		{Name: ConfigVolumeName, MountPath: ConfigDir, ReadOnly: true},
		{Name: InitDBVolumeName, MountPath: InitDBDir, ReadOnly: true},
	}
	if spec.TLS != nil {
		volumes = append(volumes, corev1.Volume{
			Name:         TLSVolumeName,
			VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: spec.TLS.SecretName}},
		})
		mysqlMounts = append(mysqlMounts, corev1.VolumeMount{Name: TLSVolumeName, MountPath: TLSDir, ReadOnly: true})
	}

	mysqld := corev1.Container{
		Name:  ContainerMySQL,
		Image: image,
		Ports: []corev1.ContainerPort{{Name: MySQLPortName, ContainerPort: siteaddr.MySQLPort, Protocol: corev1.ProtocolTCP}},
		Env: []corev1.EnvVar{
			secretEnv("MYSQL_ROOT_PASSWORD", spec.Credentials.OperatorSecretName, RootPasswordKey),
		},
		VolumeMounts: mysqlMounts,
	}
	if site.Resources != nil {
		mysqld.Resources = *site.Resources
	}

	containers := []corev1.Container{mysqld, sidecarContainer(g, i, cfg)}
	containers = append(containers, spec.ExtraContainers...)

	var initContainers []corev1.Container
	initContainers = append(initContainers, spec.ExtraInitContainers...)

	operatorLabels := SiteLabels(g, site.Name)
	operatorAnnotations := map[string]string{AnnotationConfigHash: cnfHash}

	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      mergeUnder(withoutKey(withoutKey(spec.PodLabels, LabelActive), LabelReadPool), operatorLabels),
			Annotations: mergeUnder(spec.PodAnnotations, operatorAnnotations),
		},
		Spec: corev1.PodSpec{
			InitContainers: initContainers,
			Containers:     containers,
			// The sidecar stops mysqld's process when a fence cannot take
			// effect in time (docs/sidecar.md, "The fencing sequence").
			ShareProcessNamespace:         ptr.To(true),
			Volumes:                       volumes,
			TerminationGracePeriodSeconds: ptr.To(grace),
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
						Key: ZoneLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{site.Zone},
					}}}},
				},
			}},
			// The site's own nodes carry the group's db-readonly taint while
			// the site is not active; its MySQL pod must still run there.
			Tolerations: []corev1.Toleration{{
				Key:      TaintKey(g.Namespace, g.Name),
				Operator: corev1.TolerationOpExists,
			}},
		},
	}
}

// withoutKey returns m without key. The active label is the operator's even
// though it is not in the template: a podLabels entry setting it would put
// every new pod into the primary Service until the operator relabels it.
func withoutKey(m map[string]string, key string) map[string]string {
	if _, has := m[key]; !has {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

func secretEnv(name, secret, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key,
	}}}
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}}
}

func sidecarContainer(g *v1alpha1.MysqlFailoverGroup, i int, cfg Config) corev1.Container {
	site := g.Spec.Sites[i]
	sc := g.Spec.Sidecar
	env := []corev1.EnvVar{
		fieldEnv(protocol.EnvNamespace, "metadata.namespace"),
		fieldEnv(protocol.EnvPodName, "metadata.name"),
		fieldEnv(protocol.EnvPodUID, "metadata.uid"),
		{Name: protocol.EnvGroup, Value: g.Name},
		{Name: protocol.EnvSite, Value: site.Name},
		{Name: protocol.EnvListenAddr, Value: fmt.Sprintf(":%d", protocol.SidecarPort)},
		{Name: protocol.EnvPeerSites, Value: strings.Join(peerSites(g, site.Name), ",")},
	}
	// Without an endpoint the sidecar refuses to start (it could never
	// confirm its site), which shows on the pod; the operator sets a default
	// whenever it runs in a pod.
	if ep := operatorEndpoint(g, cfg); ep != "" {
		env = append(env, corev1.EnvVar{Name: protocol.EnvOperatorEndpoint, Value: ep})
	}
	if sc != nil {
		if sc.LeaseTimeout != nil {
			env = append(env, corev1.EnvVar{Name: protocol.EnvLeaseTimeout, Value: sc.LeaseTimeout.Duration.String()})
		}
		if sc.PeerCheckInterval != nil {
			env = append(env, corev1.EnvVar{Name: protocol.EnvPeerCheckInterval, Value: sc.PeerCheckInterval.Duration.String()})
		}
	}
	env = append(env,
		secretEnv(protocol.EnvMySQLUser, g.Spec.Credentials.OperatorSecretName, "username"),
		secretEnv(protocol.EnvMySQLPassword, g.Spec.Credentials.OperatorSecretName, "password"),
		corev1.EnvVar{Name: protocol.EnvMySQLAdminAddr, Value: fmt.Sprintf("127.0.0.1:%d", protocol.MySQLAdminPort)},
		corev1.EnvVar{Name: protocol.EnvMySQLPIDFile, Value: MySQLPIDFile},
	)
	// The operator password the servers accept, re-read for every new
	// connection (the environment's stays until the first rotation).
	env = append(env, corev1.EnvVar{Name: protocol.EnvMySQLPasswordDir, Value: SidecarPasswordDir})
	mounts := []corev1.VolumeMount{{Name: DataVolumeName, MountPath: DataDir, ReadOnly: true},
		{Name: SidecarPasswordVolumeName, MountPath: SidecarPasswordDir, ReadOnly: true}}
	if g.Spec.TLS != nil { // the sidecar verifies mysqld and reloads its TLS (docs/tls.md)
		env = append(env, corev1.EnvVar{Name: protocol.EnvMySQLTLSDir, Value: TLSDir})
		mounts = append(mounts, corev1.VolumeMount{Name: TLSVolumeName, MountPath: TLSDir, ReadOnly: true})
	}
	c := corev1.Container{
		Name:  ContainerSidecar,
		Image: cfg.sidecarImage(g),
		Ports: []corev1.ContainerPort{{Name: protocol.SidecarPortName, ContainerPort: protocol.SidecarPort, Protocol: corev1.ProtocolTCP}},
		Env:   env,
		// The sidecar reads binary logs for archival and mysqld's pid file;
		// it never writes the datadir.
		VolumeMounts: mounts,
		// mysqld's user: it may read the datadir and send mysqld a signal
		// (kill(2) needs the same user or CAP_KILL), and nothing more.
		SecurityContext: &corev1.SecurityContext{
			RunAsUser: ptr.To(int64(MySQLUID)), RunAsGroup: ptr.To(int64(MySQLUID)), RunAsNonRoot: ptr.To(true),
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
		// Liveness must not depend on MySQL, or a slow mysqld would get its
		// fencing sidecar restarted; readiness is the site's health.
		LivenessProbe:  httpProbe(protocol.PathPeerPing, 10, 3),
		ReadinessProbe: httpProbe(protocol.PathHealth, 5, 3),
	}
	if sc != nil && sc.Resources != nil {
		c.Resources = *sc.Resources
	}
	return c
}

func httpProbe(path string, period, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: path, Port: intstr.FromString(protocol.SidecarPortName), Scheme: corev1.URISchemeHTTP,
		}},
		PeriodSeconds:    period,
		TimeoutSeconds:   2,
		SuccessThreshold: 1,
		FailureThreshold: failures,
	}
}

// siteIndex returns the index of the named site, or -1.
func siteIndex(g *v1alpha1.MysqlFailoverGroup, name string) int {
	for i, s := range g.Spec.Sites {
		if s.Name == name {
			return i
		}
	}
	return -1
}

// joinKeys renders a sorted key list for an annotation.
func joinKeys(keys []string) string { return strings.Join(keys, ",") }

// operatorEndpoint is where the sidecar asks which site is active: the
// group's own setting, else the operator's default.
func operatorEndpoint(g *v1alpha1.MysqlFailoverGroup, cfg Config) string {
	if g.Spec.Sidecar != nil && g.Spec.Sidecar.OperatorEndpoint != "" {
		return g.Spec.Sidecar.OperatorEndpoint
	}
	return cfg.OperatorEndpoint
}

// peerSites are the group's other sites, in spec order: the peers a
// sidecar asks to confirm its site when the operator is unreachable.
func peerSites(g *v1alpha1.MysqlFailoverGroup, self string) []string {
	var peers []string
	for _, s := range g.Spec.Sites {
		if s.Name != self {
			peers = append(peers, s.Name)
		}
	}
	return peers
}
