package pluginview

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/render"
	"github.com/shipstream/bloodraven/pkg/siteaddr"
)

// Exit codes of `gtid-audit`, for scripts that gate an upgrade on it. 2 is
// every command's usage error (cmd/kubectl-bloodraven/cli.go).
const (
	AuditExitClean = 0
	// AuditExitExtra: a follower holds transactions the primary lacks.
	AuditExitExtra = 1
	// AuditExitError: a site, the API or the credentials could not be read.
	AuditExitError = 3
	// AuditExitPrimaryChanged: the active site or the primary's server UUID
	// changed while the audit read; its result means nothing, run it again.
	AuditExitPrimaryChanged = 4
)

// Audit verdicts.
const (
	AuditClean          = "Clean"
	AuditExtra          = "ExtraTransactions"
	AuditPrimaryChanged = "PrimaryChanged"
)

// FollowerRead is what the command read for one follower: its
// gtid_executed, read before the primary's, and what the primary computed
// it holds beyond the primary's gtid_executed.
type FollowerRead struct {
	Site     string
	Executed gtid.Set
	Extra    gtid.Set
}

// AuditReads is everything the command read, in the order it read it.
type AuditReads struct {
	Namespace, Group string
	// ActiveSiteBefore/After are status.activeSite before the first and
	// after the last MySQL read; PrimaryUUIDBefore/After the active site's
	// @@server_uuid at the same moments.
	ActiveSiteBefore, ActiveSiteAfter   string
	PrimaryUUIDBefore, PrimaryUUIDAfter string
	Followers                           []FollowerRead
}

// FollowerAudit is one follower's line of the report.
type FollowerAudit struct {
	Site         string `json:"site"`
	GTIDExecuted string `json:"gtidExecuted"`
	// Extra is what the follower executed that the primary has not: empty
	// means it holds nothing the primary lacks. It says nothing about rows
	// or about lag (docs/topology.md).
	Extra             string `json:"extra"`
	ExtraTransactions uint64 `json:"extraTransactions"`
	Clean             bool   `json:"clean"`
}

// GTIDAudit is the report of `gtid-audit`, printed as a table or as -o
// json|yaml.
type GTIDAudit struct {
	Namespace   string          `json:"namespace"`
	Group       string          `json:"group"`
	ActiveSite  string          `json:"activeSite"`
	PrimaryUUID string          `json:"primaryServerUUID"`
	Verdict     string          `json:"verdict"`
	Followers   []FollowerAudit `json:"followers"`
	// PrimaryChanged says what changed between the first and the last read,
	// when something did.
	PrimaryChanged string `json:"primaryChanged,omitempty"`
}

// AuditFollowers are the sites to audit: every site of the spec but the
// active one, in spec order.
func AuditFollowers(g *v1alpha1.MysqlFailoverGroup) ([]string, error) {
	active := g.Status.ActiveSite
	if active == "" {
		return nil, fmt.Errorf("group %s/%s has no status.activeSite yet: there is no primary to compare the followers with", g.Namespace, g.Name)
	}
	var out []string
	found := false
	for _, s := range g.Spec.Sites {
		if s.Name == active {
			found = true
			continue
		}
		out = append(out, s.Name)
	}
	if !found {
		return nil, fmt.Errorf("group %s/%s: status.activeSite %q is not a site of the spec", g.Namespace, g.Name, active)
	}
	return out, nil
}

// PortForwardTarget is the pod and container port `gtid-audit` forwards to
// for a site when it has no development site-address map: the site's
// StatefulSet pod (pkg/render/names.go) and mysqld's port
// (pkg/render/statefulset.go).
func PortForwardTarget(group, site string) (pod string, port int) {
	return render.PodName(group, site), siteaddr.MySQLPort
}

// BuildGTIDAudit turns the reads into the report.
func BuildGTIDAudit(r AuditReads) GTIDAudit {
	a := GTIDAudit{Namespace: r.Namespace, Group: r.Group, ActiveSite: r.ActiveSiteBefore, PrimaryUUID: r.PrimaryUUIDBefore,
		Verdict: AuditClean, Followers: []FollowerAudit{}}
	for _, f := range r.Followers {
		fa := FollowerAudit{Site: f.Site, GTIDExecuted: f.Executed.OneLine(), Extra: f.Extra.OneLine(),
			ExtraTransactions: f.Extra.Count(), Clean: f.Extra.IsEmpty()}
		if !fa.Clean {
			a.Verdict = AuditExtra
		}
		a.Followers = append(a.Followers, fa)
	}
	switch {
	case r.ActiveSiteBefore != r.ActiveSiteAfter:
		a.PrimaryChanged = fmt.Sprintf("status.activeSite changed from %q to %q during the audit", r.ActiveSiteBefore, r.ActiveSiteAfter)
	case r.PrimaryUUIDBefore != r.PrimaryUUIDAfter:
		a.PrimaryChanged = fmt.Sprintf("the server UUID of active site %s changed from %s to %s during the audit", r.ActiveSiteBefore, r.PrimaryUUIDBefore, r.PrimaryUUIDAfter)
	}
	if a.PrimaryChanged != "" {
		a.Verdict = AuditPrimaryChanged
	}
	return a
}

// ExitCode is the process's exit status for the report.
func (a GTIDAudit) ExitCode() int {
	switch a.Verdict {
	case AuditClean:
		return AuditExitClean
	case AuditExtra:
		return AuditExitExtra
	}
	return AuditExitPrimaryChanged
}

// WriteGTIDAuditText prints the report as a table and what it means.
func WriteGTIDAuditText(w io.Writer, a GTIDAudit) error {
	fmt.Fprintf(w, "Group:       %s/%s\nActive site: %s (server UUID %s)\n\n", a.Namespace, a.Group, a.ActiveSite, a.PrimaryUUID)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FOLLOWER\tEXTRA TXNS\tEXTRA (not on "+a.ActiveSite+")")
	for _, f := range a.Followers {
		extra := f.Extra
		if f.Clean {
			extra = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", f.Site, f.ExtraTransactions, extra)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	switch a.Verdict {
	case AuditPrimaryChanged:
		_, err := fmt.Fprintf(w, "INCONCLUSIVE: %s. The sets above were compared with a primary that is no longer the one serving; run gtid-audit again.\n", a.PrimaryChanged)
		return err
	case AuditExtra:
		fmt.Fprintf(w, "Some followers hold transactions %s lacks: they did not come from it. Apply them to %s to keep them, "+
			"or discard them with a reclone (kubectl bloodraven reclone; docs/runbooks/reclone.md).\n", a.ActiveSite, a.ActiveSite)
	default:
		fmt.Fprintf(w, "Every follower is clean: it holds no transaction %s lacks. This says nothing about row contents or about lag.\n", a.ActiveSite)
	}
	return nil
}
