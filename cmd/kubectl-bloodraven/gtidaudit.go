package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/devsitemap"
	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/pluginview"
	"github.com/shipstream/bloodraven/pkg/siteaddr"
)

// Keys of the operator Secret, as the operator reads them
// (pkg/controllers/topologymanager/manager_credentials.go). Not imported:
// that package is the whole controller.
const (
	secretKeyUsername = "username"
	secretKeyPassword = "password"
)

// auditProgram is the program_name connection attribute, so a DBA looking at
// performance_schema.session_connect_attrs sees who is connected.
const auditProgram = "kubectl-bloodraven"

// exitError ends a command with a given exit status; msg, when set, is
// printed on stderr as is (cli.go runCommand).
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

// afterFollowerReads runs between the followers' reads and the primary's.
// Only the tests set it, to change the primary in that window.
var afterFollowerReads = func() {}

func gtidAuditCommand() *command {
	return &command{
		name: "gtid-audit", usage: "gtid-audit <group>", args: [2]int{1, 1}, complete: []argKind{argGroup},
		short: "Check that no follower holds transactions the active site lacks",
		long: `For every follower (every site but status.activeSite) reads the follower's
gtid_executed, then asks the active site's mysqld what of it the active site
has not executed (GTID_SUBTRACT against its gtid_executed, read after the
follower's). A follower whose extra set is empty holds nothing the primary
lacks; that says nothing about row contents or about lag. A follower with
extra transactions is divergent (docs/runbooks/reclone.md).

status.activeSite and the active site's @@server_uuid are read before and
after: if either changed, the comparison was made with a primary that no
longer serves, and the command says so.

Sites are reached through --dev-site-addresses (the development map,
default $BLOODRAVEN_DEV_SITE_ADDRESSES), else through a port-forward to each
site's pod, port 3306, via the API server. It logs in with the operator
Secret of the group (spec.credentials.operatorSecretName), read through the
API; it never prints it. It only reads.

Exit status: 0 every follower is clean; 1 a follower holds extra
transactions; 2 usage error; 3 any other error; 4 the primary changed during
the audit (run it again).`,
		examples: `  kubectl bloodraven gtid-audit orders -n databases
  kubectl bloodraven gtid-audit orders -o json | jq '.followers[] | select(.clean | not)'
  kubectl bloodraven gtid-audit orders && echo "no follower holds errant transactions"`,
		setup: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
			k := bindKubeFlags(fs)
			output := fs.String("output", "", "output format: json or yaml (default: text)")
			fs.StringVar(output, "o", "", "output format: json or yaml")
			devMap := fs.String("dev-site-addresses", os.Getenv(devsitemap.EnvVar), "development site-address map to dial mysqld with instead of a port-forward (default $"+devsitemap.EnvVar+")")
			timeout := fs.Duration("timeout", 30*time.Second, "how long the whole audit may take")
			return func(ctx context.Context, a *app, args []string) error {
				if *output != "" && *output != "json" && *output != "yaml" {
					return usageError{fmt.Sprintf("-o %s: unknown output format; use json or yaml", *output)}
				}
				ctx, cancel := context.WithTimeout(ctx, *timeout)
				defer cancel()
				err := a.gtidAudit(ctx, k, args[0], *devMap, *output)
				var ee exitError
				var ue usageError
				if err != nil && !errors.As(err, &ee) && !errors.As(err, &ue) {
					return exitError{code: pluginview.AuditExitError, msg: "error: " + err.Error()}
				}
				return err
			}
		},
	}
}

func (a *app) gtidAudit(ctx context.Context, k *kubeFlags, group, devMap, output string) error {
	c, err := k.clients()
	if err != nil {
		return err
	}
	g, err := c.getGroup(ctx, group)
	if err != nil {
		return err
	}
	followers, err := pluginview.AuditFollowers(g)
	if err != nil {
		return err
	}
	user, pass, err := c.operatorCredentials(ctx, g)
	if err != nil {
		return err
	}
	d := &siteDialer{c: c, group: g.Name}
	if devMap != "" {
		if d.devMap, err = devsitemap.Load(devMap); err != nil {
			return err
		}
	}
	defer d.close()
	open := func(site string) (*mysql.Client, error) {
		addr, err := d.addr(ctx, site)
		if err != nil {
			return nil, err
		}
		tlsCfg, err := c.siteTLS(ctx, g, site) // gtidaudit_tls.go
		if err != nil {
			return nil, err
		}
		cl, err := mysql.Open(mysql.Options{Addr: addr, User: user, Password: pass, Program: auditProgram, TLS: tlsCfg})
		if err != nil {
			return nil, fmt.Errorf("site %s: %w", site, err)
		}
		d.clients = append(d.clients, cl)
		return cl, nil
	}

	r := pluginview.AuditReads{Namespace: g.Namespace, Group: g.Name, ActiveSiteBefore: g.Status.ActiveSite}
	primary, err := open(r.ActiveSiteBefore)
	if err != nil {
		return err
	}
	before, err := primary.Observe(ctx)
	if err != nil {
		return fmt.Errorf("active site %s: %w", r.ActiveSiteBefore, err)
	}
	r.PrimaryUUIDBefore = before.ServerUUID

	// Every follower first, the primary after: a transaction a follower
	// replicated was on the primary before the follower read it, so a
	// primary read later contains it, and what remains of the subtraction
	// is only what the follower did not get from the primary
	// (docs/topology.md). The other order would report the follower's
	// newest replicated transactions as extra.
	sets := make([]gtid.Set, len(followers))
	for i, site := range followers {
		cl, err := open(site)
		if err != nil {
			return err
		}
		o, err := cl.Observe(ctx)
		if err != nil {
			return fmt.Errorf("follower %s: %w", site, err)
		}
		sets[i] = o.GTIDExecuted
	}
	afterFollowerReads()
	// The primary's gtid_executed, read after every follower's, and the
	// subtraction done by its mysqld, with the two catalog statements the
	// operator's own errant check uses (pkg/mysql/client.go ErrantGTIDs).
	mid, err := primary.Observe(ctx)
	if err != nil {
		return fmt.Errorf("active site %s: %w", r.ActiveSiteBefore, err)
	}
	for i, site := range followers {
		extra, err := primary.GTIDSubtract(ctx, sets[i], mid.GTIDExecuted)
		if err != nil {
			return fmt.Errorf("active site %s: comparing with %s: %w", r.ActiveSiteBefore, site, err)
		}
		r.Followers = append(r.Followers, pluginview.FollowerRead{Site: site, Executed: sets[i], Extra: extra})
	}
	after, err := primary.Observe(ctx)
	if err != nil {
		return fmt.Errorf("active site %s: %w", r.ActiveSiteBefore, err)
	}
	r.PrimaryUUIDAfter = after.ServerUUID
	if mid.ServerUUID != before.ServerUUID {
		r.PrimaryUUIDAfter = mid.ServerUUID
	}
	g2, err := c.getGroup(ctx, group)
	if err != nil {
		return err
	}
	r.ActiveSiteAfter = g2.Status.ActiveSite

	rep := pluginview.BuildGTIDAudit(r)
	if output != "" {
		err = writeStructured(a.out, rep, output)
	} else {
		err = pluginview.WriteGTIDAuditText(a.out, rep)
	}
	if err != nil {
		return err
	}
	switch code := rep.ExitCode(); code {
	case pluginview.AuditExitClean:
		return nil
	case pluginview.AuditExitExtra:
		return exitError{code: code}
	default:
		return exitError{code: code, msg: "error: " + rep.PrimaryChanged + "; run gtid-audit again"}
	}
}

// operatorCredentials reads the login the operator uses, from the Secret
// the group names, in the group's namespace.
func (c *clients) operatorCredentials(ctx context.Context, g *v1alpha1.MysqlFailoverGroup) (user, pass string, err error) {
	name := g.Spec.Credentials.OperatorSecretName
	if name == "" {
		return "", "", fmt.Errorf("group %s/%s has no spec.credentials.operatorSecretName", g.Namespace, g.Name)
	}
	s, err := c.kube.CoreV1().Secrets(g.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", "", fmt.Errorf("the operator Secret %s/%s does not exist", g.Namespace, name)
	case apierrors.IsForbidden(err):
		return "", "", fmt.Errorf("not allowed to read the operator Secret %s/%s (gtid-audit logs in as the operator: ask for RBAC get on that Secret): %v", g.Namespace, name, err)
	case err != nil:
		return "", "", fmt.Errorf("read the operator Secret %s/%s: %w", g.Namespace, name, err)
	}
	user, pass = string(s.Data[secretKeyUsername]), string(s.Data[secretKeyPassword])
	if user == "" {
		return "", "", fmt.Errorf("the operator Secret %s/%s has no %q key", g.Namespace, name, secretKeyUsername)
	}
	return user, pass, nil
}

// siteDialer finds where a site's mysqld listens: in the development map,
// or at the local end of a port-forward it starts to the site's pod.
type siteDialer struct {
	c       *clients
	group   string
	devMap  *devsitemap.Map
	stops   []chan struct{}
	clients []*mysql.Client
}

func (d *siteDialer) addr(ctx context.Context, site string) (string, error) {
	if d.devMap != nil {
		return d.devMap.MySQLAddr(siteaddr.SiteKey{Namespace: d.c.ns, Group: d.group, Site: site})
	}
	pod, port := pluginview.PortForwardTarget(d.group, site)
	return d.portForward(ctx, pod, port)
}

// portForward does what `kubectl port-forward pod/<pod> :<port>` does: a
// SPDY stream through the API server's pods/portforward subresource, on a
// free local port of 127.0.0.1.
func (d *siteDialer) portForward(ctx context.Context, pod string, port int) (string, error) {
	transport, upgrader, err := spdy.RoundTripperFor(d.c.cfg)
	if err != nil {
		return "", err
	}
	u := d.c.kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(d.c.ns).Name(pod).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	stop, ready := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:" + strconv.Itoa(port)}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		return "", fmt.Errorf("port-forward to pod %s/%s: %w", d.c.ns, pod, err)
	}
	d.stops = append(d.stops, stop)
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-done:
		return "", fmt.Errorf("port-forward to pod %s/%s port %d (needs RBAC create on pods/portforward): %v", d.c.ns, pod, port, err)
	case <-ctx.Done():
		return "", fmt.Errorf("port-forward to pod %s/%s port %d: %w", d.c.ns, pod, port, ctx.Err())
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		return "", fmt.Errorf("port-forward to pod %s/%s: no local port (%v)", d.c.ns, pod, err)
	}
	return "127.0.0.1:" + strconv.Itoa(int(ports[0].Local)), nil
}

func (d *siteDialer) close() {
	for _, cl := range d.clients {
		_ = cl.Close()
	}
	for _, s := range d.stops {
		close(s)
	}
}
