// Package playground runs a whole local Bloodraven installation from real
// parts: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
// kwok fake nodes (one per site zone), the operator as its own process with
// the deploy API on self-signed TLS, and per site a simulated mysqld and a
// real sidecar that a development node agent starts for the site's pod.
// Every process is a tracked child: Stop (or the death of this process)
// ends exactly them.
package playground

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	"github.com/shipstream/bloodraven/e2e/framework"
	"github.com/shipstream/bloodraven/generated/clientset/versioned"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/testbed/s3server"
	"github.com/shipstream/bloodraven/pkg/testbed/testca"
)

// Defaults of the playground.
const (
	DefaultNamespace = "playground"
	// ClientNamespace and ClientServiceAccount are the sample MysqlDatabase's
	// deployment client.
	ClientNamespace      = "application"
	ClientServiceAccount = "application-deploy"
	Audience             = framework.Audience
)

// Config configures a playground.
type Config struct {
	// Namespace of the group (default DefaultNamespace).
	Namespace string
	// SamplesDir holds secrets.yaml, mysqlfailovergroup.yaml and
	// mysqldatabase.yaml (default <repo>/deploy/samples).
	SamplesDir string
	// GroupPatch, if set, is a JSON merge patch applied to the group before
	// it is created (e.g. {"spec":{"pollInterval":"1s"}}).
	GroupPatch string
	// FaultProxies puts a fault-injecting TCP proxy on every link between
	// the operator and the sites and between sidecars (see Link).
	FaultProxies bool
	// OperatorArgs are extra operator flags.
	OperatorArgs []string
	// OperatorEnv are extra operator environment variables (e.g. the
	// development-only BLOODRAVEN_DEV_ROTATION_OVERLAP).
	OperatorEnv []string
	Logger      *slog.Logger
}

// Playground is a running playground.
type Playground struct {
	CP         *framework.ControlPlane
	Ship       versioned.Interface
	dyn        dynamic.Interface
	Namespace  string
	Group      string
	Database   string
	Sites      []SitePlan
	Dir        string // logs, certificates, the address map
	DeployURL  string // https://127.0.0.1:<port>/deploy/v1
	CAFile     string
	AuxAddr    string // the operator's auxiliary listener
	MetricsURL string
	// ControlURL is the playground's link fault API, once ServeControl ran.
	ControlURL string
	// MySQLCAFile is the CA of the group's spec.tls Secret (certs.go);
	// empty without spec.tls.
	MySQLCAFile string

	cfg          Config
	log          *slog.Logger
	mapPath      string
	links        *links
	operatorPort []int
	operatorArgs []string
	operator     *framework.Process
	agent        *NodeAgent
	stopAgent    context.CancelFunc
	agentDone    chan struct{}
	mysqlCA      []byte // MySQLCAFile's content (certs.go)
	mysqlHost    string // the name applications verify: spec.dns.hostname
	mysqlIssuer  *testca.CA
	mysqlNames   []string         // of the certificate
	mysqlSecret  string           // spec.tls.secretName
	s3           *s3server.Server // the backup store (backupstore.go)
}

// Start brings a playground up and applies the sample group and database.
// It does not wait for the group to become Ready (see WaitGroupReady). On
// error everything started is stopped.
func Start(ctx context.Context, cfg Config) (_ *Playground, err error) {
	if cfg.Namespace == "" {
		cfg.Namespace = DefaultNamespace
	}
	if cfg.SamplesDir == "" {
		cfg.SamplesDir = filepath.Join(framework.RepoRoot(), "deploy", "samples")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	for _, b := range []string{"bloodraven", "bloodraven-mysqlsim", "bloodraven-sidecar", "bloodraven-mysqlsh", "kube-scheduler", "kwok", "versitygw"} {
		if _, err := os.Stat(filepath.Join(framework.BinDir(), b)); err != nil {
			return nil, fmt.Errorf("%s is missing in %s: run `make build tools` first", b, framework.BinDir())
		}
	}
	g, err := loadGroup(filepath.Join(cfg.SamplesDir, "mysqlfailovergroup.yaml"))
	if err != nil {
		return nil, err
	}
	p := &Playground{cfg: cfg, log: cfg.Logger, Namespace: cfg.Namespace, Group: g.Name}
	defer func() {
		if err != nil {
			p.Stop()
		}
	}()
	if p.Sites, err = planSites(cfg.Namespace, g); err != nil {
		return nil, err
	}
	step := func(what string, f func() error) error {
		start := time.Now()
		if err := f(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		p.log.Info("playground: "+what, "took", time.Since(start).Round(time.Millisecond).String())
		return nil
	}
	if err := step("control plane", func() error {
		p.CP, err = framework.Start(ctx, framework.Options{ControllerManager: true, CRDDir: "deploy/crds"})
		if err != nil {
			return err
		}
		p.Dir = p.CP.Dir
		if err := p.CP.InstallCRDs(ctx, filepath.Join(framework.RepoRoot(), "deploy", "crds-external")); err != nil {
			return err
		}
		if err := p.CP.StartScheduler(ctx); err != nil {
			return err
		}
		return p.CP.StartKwok(ctx)
	}); err != nil {
		return nil, err
	}
	if p.Ship, err = versioned.NewForConfig(p.CP.Config); err != nil {
		return nil, err
	}
	if p.dyn, err = dynamic.NewForConfig(p.CP.Config); err != nil {
		return nil, err
	}
	steps := []struct {
		what string
		f    func() error
	}{
		{"fake nodes", func() error { return p.createNodes(ctx) }},
		{"namespaces and storage class", func() error { return p.createNamespaces(ctx, g) }},
		{"secrets", func() error { return p.applySamples(ctx, "secrets.yaml") }},
		{"backup store", func() error { return p.startBackupStore(ctx, g) }},
		{"MySQL TLS certificate", func() error { return p.createMySQLTLS(ctx, g) }},
		{"address map and accounts", func() error { return p.writeFiles(ctx) }},
		{"fault proxies", p.startLinks},
		{"operator", func() error { return p.startOperator(ctx) }},
		{"node agent", func() error { p.startAgent(); return nil }},
		{"sample group and database", func() error { return p.applyGroupAndDatabase(ctx) }},
	}
	for _, s := range steps {
		if err := step(s.what, s.f); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Stop stops everything the playground started, in reverse order. It is
// safe to call more than once and on a partly started playground.
func (p *Playground) Stop() {
	if p.stopAgent != nil {
		p.stopAgent()
		<-p.agentDone
		p.stopAgent = nil
	}
	if p.operator != nil {
		_ = p.operator.Stop(25 * time.Second)
		p.operator = nil
	}
	if p.links != nil {
		p.links.close()
		p.links = nil
	}
	if p.s3 != nil {
		_ = p.s3.Stop()
		p.s3 = nil
	}
	if p.CP != nil {
		p.CP.Stop()
	}
}

func (p *Playground) createNodes(ctx context.Context) error {
	kube := p.CP.Client()
	for _, s := range p.Sites {
		name := "kwok-" + s.Name
		labels := map[string]string{"kubernetes.io/hostname": name, "type": "kwok"}
		for k, v := range s.NodeLabels {
			labels[k] = v
		}
		capacity := corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"),
			corev1.ResourcePods: resource.MustParse("110"),
		}
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels,
				Annotations: map[string]string{framework.KwokNodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"}},
			Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
		}
		if _, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return err
		}
		// kwok initializes the node's status at the same time.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			n.Status.Capacity, n.Status.Allocatable = capacity, capacity
			_, err = kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (p *Playground) createNamespaces(ctx context.Context, g *v1alpha1.MysqlFailoverGroup) error {
	kube := p.CP.Client()
	for _, ns := range []string{p.Namespace, ClientNamespace} {
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: ClientServiceAccount}}
	if _, err := kube.CoreV1().ServiceAccounts(ClientNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	// The sample's storage classes, bound at once (the agent provides the
	// volumes).
	classes := map[string]bool{}
	for _, s := range g.Spec.Sites {
		if s.Storage.StorageClassName != "" {
			classes[s.Storage.StorageClassName] = true
		}
	}
	for name := range classes {
		sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "playground.bloodraven.shipstream.io/none"}
		if _, err := kube.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

func (p *Playground) applySamples(ctx context.Context, files ...string) error {
	for _, f := range files {
		out, errOut, err := p.CP.Kubectl(ctx, "apply", "-n", p.Namespace, "-f", filepath.Join(p.cfg.SamplesDir, f))
		if err != nil {
			return fmt.Errorf("kubectl apply %s: %v\n%s%s", f, err, out, errOut)
		}
	}
	return nil
}

// writeFiles writes the site-address map and the operator's TLS
// certificate. The simulators' accounts come from the pods: the root
// password and the operator's init script Secret (render.InitDBSecret)
// create them at each site's first boot.
func (p *Playground) writeFiles(ctx context.Context) error {
	m, err := addressMap(p.Namespace, p.Group, p.Sites)
	if err != nil {
		return err
	}
	p.mapPath = filepath.Join(p.Dir, "dev-site-addresses")
	if err := m.WriteFile(p.mapPath); err != nil {
		return err
	}
	p.CAFile = filepath.Join(p.Dir, "operator-tls.crt")
	return writeSelfSignedCert(p.CAFile, filepath.Join(p.Dir, "operator-tls.key"))
}

// startLinks fixes the operator's ports (the sidecars' proxies forward to
// its auxiliary listener) and, if asked, starts the fault proxies.
func (p *Playground) startLinks() error {
	p.operatorPort = make([]int, 4)
	for i := range p.operatorPort {
		port, err := framework.FreePort()
		if err != nil {
			return err
		}
		p.operatorPort[i] = port
	}
	p.AuxAddr = fmt.Sprintf("127.0.0.1:%d", p.operatorPort[2])
	if !p.cfg.FaultProxies {
		return nil
	}
	l, err := newLinks(p.Dir, p.Namespace, p.Group, p.Sites, p.AuxAddr)
	if err != nil {
		return err
	}
	p.links = l
	return nil
}

// startOperator starts bin/bloodraven with the admin kubeconfig, the
// address map and the deploy API on the self-signed certificate.
func (p *Playground) startOperator(ctx context.Context) error {
	ports := p.operatorPort
	addr := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", ports[i]) }
	mapPath := p.mapPath
	if p.links != nil {
		mapPath = p.links.operatorMap
	}
	p.AuxAddr = addr(2)
	p.MetricsURL = "http://" + addr(0) + "/metrics"
	p.DeployURL = "https://" + addr(3) + "/deploy/v1"
	p.operatorArgs = append([]string{
		"--kubeconfig=" + p.CP.KubeconfigPath,
		"--leader-elect-namespace=" + p.Namespace,
		"--leader-elect-lease-duration=8s", "--leader-elect-renew-deadline=5s", "--leader-elect-retry-period=1s",
		"--sidecar-image=ghcr.io/shipstream/bloodraven-sidecar:dev",
		"--metrics-addr=" + addr(0), "--probe-addr=" + addr(1), "--auxiliary-addr=" + addr(2),
		"--escrow-tls-addr=" + addr(3),
		"--tls-cert-file=" + p.CAFile, "--tls-key-file=" + filepath.Join(p.Dir, "operator-tls.key"),
		"--deploy-api-enabled",
		"--dev-site-addresses=" + mapPath,
		"--shutdown-grace-period=10s",
	}, p.cfg.OperatorArgs...)
	return p.StartOperator(ctx)
}

// StartOperator starts the operator process (again, after StopOperator or
// KillOperator) and waits for its probe listener.
func (p *Playground) StartOperator(ctx context.Context) error {
	if p.operator != nil {
		if done, _ := p.operator.Exited(); !done {
			return errors.New("the operator is running")
		}
	}
	op, err := framework.StartProcess("bloodraven", "bloodraven", p.operatorArgs, append([]string{"BLOODRAVEN_AUTOMATIC_FAILOVER=true", "BLOODRAVEN_BACKUP_UPLOAD_IMAGE=" + BackupUploadImage}, p.cfg.OperatorEnv...), filepath.Join(p.Dir, "operator.log"))
	if err != nil {
		return err
	}
	p.operator = op
	return waitHTTP(p.MetricsURL, 30*time.Second, op)
}

// Operator is the running operator process (nil when stopped).
func (p *Playground) Operator() *framework.Process { return p.operator }

// StopOperator stops the operator (SIGTERM) and waits for it to exit.
func (p *Playground) StopOperator() error { return p.operator.Stop(25 * time.Second) }

// KillOperator SIGKILLs the operator and waits for it to exit.
func (p *Playground) KillOperator() error {
	if err := p.operator.Signal(os.Kill); err != nil {
		return err
	}
	<-p.operator.Done()
	return nil
}

func (p *Playground) startAgent() {
	p.agent = NewNodeAgent(AgentConfig{
		Kube: p.CP.Client(), Namespace: p.Namespace, Group: p.Group, Sites: p.Sites, Dir: p.Dir,
		AddressMapPath: p.mapPath, OperatorAuxiliaryAddr: p.AuxAddr, Logger: p.log,
	})
	if p.links != nil {
		p.agent.sidecarMaps, p.agent.sidecarOperator = p.links.sidecarMaps, p.links.sidecarOperator
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.stopAgent, p.agentDone = cancel, make(chan struct{})
	go func() {
		defer close(p.agentDone)
		p.agent.Run(ctx)
	}()
}

// Agent is the node agent.
func (p *Playground) Agent() *NodeAgent { return p.agent }

func (p *Playground) applyGroupAndDatabase(ctx context.Context) error {
	if err := p.applySamples(ctx, "mysqlfailovergroup.yaml"); err != nil {
		return err
	}
	if err := p.pointProfilesAtStore(ctx); err != nil { // backupstore.go
		return fmt.Errorf("point the backup profiles at the playground's store: %w", err)
	}
	if p.cfg.GroupPatch != "" {
		if out, errOut, err := p.CP.Kubectl(ctx, "patch", "-n", p.Namespace, "mfg", p.Group, "--type=merge", "-p", p.cfg.GroupPatch); err != nil {
			return fmt.Errorf("patch group: %v\n%s%s", err, out, errOut)
		}
	}
	if err := p.applySamples(ctx, "mysqldatabase.yaml"); err != nil {
		return err
	}
	dbs, err := p.Ship.ShipstreamV1alpha1().MysqlDatabases(p.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	if len(dbs.Items) > 0 {
		p.Database = dbs.Items[0].Name
	}
	return nil
}

// WaitGroupReady waits until the group's Ready condition is True; the
// error says what the condition said last.
func (p *Playground) WaitGroupReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := "no Ready condition yet"
	for {
		g, err := p.Ship.ShipstreamV1alpha1().MysqlFailoverGroups(p.Namespace).Get(ctx, p.Group, metav1.GetOptions{})
		if err == nil {
			if c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady); c != nil {
				if c.Status == metav1.ConditionTrue {
					return nil
				}
				last = fmt.Sprintf("Ready=%s/%s: %s", c.Status, c.Reason, c.Message)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("group %s/%s not Ready after %s (%s); logs in %s", p.Namespace, p.Group, timeout, last, p.Dir)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// MintToken mints a deployment-client token for the deploy API.
func (p *Playground) MintToken(ctx context.Context) (string, error) {
	return p.CP.MintToken(ctx, ClientNamespace, ClientServiceAccount, Audience)
}

// PIDs lists every process the playground runs, by name.
func (p *Playground) PIDs() map[string]int {
	out := map[string]int{}
	if p.CP != nil {
		for k, v := range p.CP.PIDs() {
			out[k] = v
		}
	}
	if p.operator != nil {
		if done, _ := p.operator.Exited(); !done {
			out["bloodraven"] = p.operator.PID()
		}
	}
	if p.agent != nil {
		for k, v := range p.agent.PIDs() {
			out[k] = v
		}
	}
	return out
}

// Site returns the plan of a site by name.
func (p *Playground) Site(name string) (SitePlan, bool) {
	for _, s := range p.Sites {
		if s.Name == name {
			return s, true
		}
	}
	return SitePlan{}, false
}
