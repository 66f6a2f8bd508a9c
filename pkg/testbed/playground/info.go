package playground

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/e2e/framework"
)

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TokenCommand prints a fresh deployment-client token.
func (p *Playground) TokenCommand() string {
	return fmt.Sprintf("%s --kubeconfig=%s create token %s -n %s --audience=%s",
		filepath.Join(framework.BinDir(), "kubectl"), p.CP.KubeconfigPath, ClientServiceAccount, ClientNamespace, Audience)
}

// EnvFile is the detached playground's environment, for `set -a; . file`.
func (p *Playground) EnvFile() string {
	vars := [][2]string{
		{"KUBECONFIG", p.CP.KubeconfigPath},
		{"BLOODRAVEN_PLAYGROUND_DIR", p.Dir},
		{"BLOODRAVEN_PLAYGROUND_NAMESPACE", p.Namespace},
		{"BLOODRAVEN_PLAYGROUND_GROUP", p.Group},
		{"BLOODRAVEN_DEPLOY_API_URL", p.DeployURL},
		{"BLOODRAVEN_DEPLOY_API_CA_FILE", p.CAFile},
		{"BLOODRAVEN_DEPLOY_TOKEN_COMMAND", p.TokenCommand()},
		{"BLOODRAVEN_OPERATOR_METRICS_URL", p.MetricsURL},
		{"BLOODRAVEN_OPERATOR_AUXILIARY_ADDR", p.AuxAddr},
		{"BLOODRAVEN_DEV_SITE_ADDRESSES", p.mapPath},
	}
	if p.ControlURL != "" {
		vars = append(vars, [2]string{"BLOODRAVEN_PLAYGROUND_CONTROL_URL", p.ControlURL})
	}
	if p.MySQLCAFile != "" {
		vars = append(vars, [2]string{"BLOODRAVEN_MYSQL_CA_FILE", p.MySQLCAFile})
	}
	for _, s := range p.Sites {
		up := strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_"))
		vars = append(vars,
			[2]string{"BLOODRAVEN_SIM_" + up + "_CONTROL_URL", s.ControlURL()},
			[2]string{"BLOODRAVEN_SIM_" + up + "_MYSQL_ADDR", s.MySQLAddr},
			[2]string{"BLOODRAVEN_SIDECAR_" + up + "_ADDR", s.SidecarAddr},
		)
	}
	var b strings.Builder
	for _, v := range vars {
		fmt.Fprintf(&b, "%s=%s\n", v[0], shellQuote(v[1]))
	}
	return b.String()
}

// Banner is what `make playground` prints once the group is Ready.
func (p *Playground) Banner(token string) string {
	kubectl := filepath.Join(framework.BinDir(), "kubectl")
	var b strings.Builder
	fmt.Fprintf(&b, "\nBloodraven playground is up (group %s/%s).\n\n", p.Namespace, p.Group)
	fmt.Fprintf(&b, "Kubeconfig:\n  export KUBECONFIG=%s\n\n", p.CP.KubeconfigPath)
	fmt.Fprintf(&b, "Try:\n  %s get mfg,mdb,sts,pods,nodes -n %s -o wide\n  %s get mfg %s -n %s -o yaml\n\n", kubectl, p.Namespace, kubectl, p.Group, p.Namespace)
	fmt.Fprintf(&b, "Deploy API (token for %s/%s, audience %s, valid 1h):\n", ClientNamespace, ClientServiceAccount, Audience)
	fmt.Fprintf(&b, "  curl --cacert %s -H 'Authorization: Bearer %s' %s/groups/%s\n", p.CAFile, token, p.DeployURL, p.Group)
	fmt.Fprintf(&b, "  (a fresh token: %s)\n\n", p.TokenCommand())
	if app, err := p.appTLSForBanner(); err == nil {
		fmt.Fprintf(&b, "Connect as the application over TLS (mysqld refuses clients without it; the certificate is verified against the playground's CA):\n")
		fmt.Fprintf(&b, "  %s\n  (MariaDB's client: %s)\n\n", app.Command(kubectl), app.MariaDBCommand(kubectl))
	}
	fmt.Fprintf(&b, "Sites (simulated mysqld / sidecar / fault API):\n")
	for _, s := range p.Sites {
		fmt.Fprintf(&b, "  %-8s mysql %s  sidecar %s  faults %s\n", s.Name, s.MySQLAddr, s.SidecarAddr, s.ControlURL())
	}
	first := p.Sites[0]
	fmt.Fprintf(&b, "\nBreak a site (see docs/playground.md for more):\n")
	fmt.Fprintf(&b, "  crash mysqld:       curl -X POST %s/crash     (and /restart to bring it back)\n", first.ControlURL())
	fmt.Fprintf(&b, "  partition the site: curl -X POST '%s/partition?client=bloodraven-operator&client=bloodraven-sidecar", first.ControlURL())
	for _, o := range p.Sites[1:] {
		fmt.Fprintf(&b, "&client=mysqlsim:%s", o.Name)
	}
	fmt.Fprintf(&b, "'  (and /heal)\n")
	if p.ControlURL != "" {
		fmt.Fprintf(&b, "  isolate the site:   curl -X POST '%s/isolate/%s?mode=blackhole'   (its sidecar from operator and peers, the operator from its mysqld; mode=open heals)\n", p.ControlURL, first.Name)
		fmt.Fprintf(&b, "  one link:           curl %s/links   then   curl -X POST '%s/links/<name>?mode=blackhole'\n", p.ControlURL, p.ControlURL)
	}
	fmt.Fprintf(&b, "  delete its pod:     %s delete pod -n %s %s-%s-0\n", kubectl, p.Namespace, p.Group, first.Name)
	fmt.Fprintf(&b, "\nLogs: %s\nProcesses:", p.Dir)
	pids := p.PIDs()
	names := make([]string, 0, len(pids))
	for n := range pids {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, " %s=%d", n, pids[n])
	}
	fmt.Fprintf(&b, "\n\nCtrl-C stops everything the playground started.\n")
	return b.String()
}

// KeepLogs copies the processes' logs out of the playground's directory
// (which Stop removes) into a new temporary directory, with the group's
// namespace's Events as events.log (a decision's reason, such as why a
// failover waited, is told in an Event, not in the operator's log), and
// returns it.
func (p *Playground) KeepLogs() (string, error) {
	dst, err := os.MkdirTemp("", "bloodraven-playground-logs-")
	if err != nil {
		return "", err
	}
	logs, _ := filepath.Glob(filepath.Join(p.Dir, "*.log"))
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(dst, filepath.Base(l)), b, 0o644); err != nil {
			return dst, err
		}
	}
	return dst, p.keepEvents(filepath.Join(dst, "events.log"))
}

// keepEvents writes the namespace's Events to path, one JSON object per
// line, oldest first.
func (p *Playground) keepEvents(path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := p.CP.Client().CoreV1().Events(p.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing events: %w", err)
	}
	evs := list.Items
	sort.SliceStable(evs, func(i, j int) bool { return eventTime(evs[i]).Before(eventTime(evs[j])) })
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, e := range evs {
		_ = enc.Encode(map[string]any{
			"time": eventTime(e).UTC().Format(time.RFC3339Nano), "type": e.Type, "reason": e.Reason, "count": e.Count,
			"object": e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name, "message": e.Message,
		})
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// eventTime is when an Event last happened, whichever API wrote it.
func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

// appTLSForBanner is AppTLS within a short bound (the banner has no
// context of its own).
func (p *Playground) appTLSForBanner() (AppTLS, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return p.AppTLS(ctx)
}
