package topology

import (
	"fmt"
	"slices"
	"strings"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/siteaddr"
)

// ErrnoSourcePurged is Last_IO_Errno when the receiver stopped on the
// source's fatal read error 1236. It is also what a source that lost its own
// tail answers a replica holding more (Replica.ReadError tells them apart;
// only "purged" leads to a clone).
const ErrnoSourcePurged = 13114

// Divergent returns the transactions a follower executed that the active
// site's executed set lacks. GTIDs of the active site's own server UUID are
// never divergent: only the active site creates them, and a follower polled
// a moment after the active site may already hold some the active site's
// (earlier) poll did not show yet.
func Divergent(follower, active gtid.Set, activeUUID string) gtid.Set {
	extra := follower.Subtract(active)
	if extra.IsEmpty() || activeUUID == "" {
		return extra
	}
	var parts []string
	for _, sid := range extra.SIDs() {
		if sid.UUID != activeUUID {
			continue
		}
		prefix := sid.UUID
		if sid.Tag != "" {
			prefix += ":" + sid.Tag
		}
		for _, iv := range extra.Intervals(sid) {
			parts = append(parts, fmt.Sprintf("%s:%d-%d", prefix, iv.Start, iv.End))
		}
	}
	own, err := gtid.Parse(strings.Join(parts, ","))
	if err != nil {
		return extra // cannot happen: the parts come from a valid set; keep the conservative answer
	}
	return extra.Subtract(own)
}

// divergentFrom is what a follower executed that the active site lacks
// (Divergent), less what it received over a channel from the active site
// itself: the active site had those, and only a poll of it taken a moment
// before the follower's does not show them yet. (GTIDs under the active's
// own UUID are covered by Divergent; this covers transactions the active
// site applied under other UUIDs, such as its own replicated history or a
// client that sets gtid_next.) A relay log restarts when the source
// changes, so Retrieved_Gtid_Set of a channel to the active site holds
// nothing from elsewhere.
func (d *decider) divergentFrom(o, av *Observed, active string) gtid.Set {
	return divergentFrom(d.in.Namespace, d.in.Group, o, av, active)
}

func divergentFrom(namespace, group string, o, av *Observed, active string) gtid.Set {
	extra := Divergent(o.Executed, av.Executed, av.ServerUUID)
	if r := o.Replica; r != nil && !extra.IsEmpty() && r.SourcePort == SourcePort && SameHost(r.SourceHost, SourceHost(namespace, group, active)) {
		extra = extra.Subtract(r.Retrieved)
	}
	return extra
}

// NeedsClone reports whether a follower can no longer catch up from the
// source's binary logs: some transaction it neither executed nor received
// is already purged on the source.
func NeedsClone(followerExecuted, followerRetrieved, sourceExecuted, sourcePurged gtid.Set) bool {
	missing := sourceExecuted.Subtract(followerExecuted.Union(followerRetrieved))
	return !missing.Intersect(sourcePurged).IsEmpty()
}

// CloneEligible reports whether a site may be overwritten by a clone of the
// donor: only if it holds nothing the donor lacks (its set is empty or a
// subset of the donor's). extra is what it holds that the donor lacks.
func CloneEligible(site, donor gtid.Set) (ok bool, extra gtid.Set) {
	extra = site.Subtract(donor)
	return extra.IsEmpty(), extra
}

// Candidate is a site considered for the first active site.
type Candidate struct {
	Name string
	Role v1alpha1.SiteRole
	// Executed is the site's GTID set.
	Executed gtid.Set
	// Reachable: Executed is a current observation. Otherwise it is the last
	// one known (from status) and the site cannot be chosen, but its set
	// still has to be contained by the choice.
	Reachable bool
}

// BootstrapVerdict is the outcome of ChooseBootstrapSite.
type BootstrapVerdict struct {
	// Site is the chosen first active site; empty when refused.
	Site string
	// Reason is empty when chosen, else a Degraded reason.
	Reason string
	// Message explains the choice or the refusal.
	Message string
}

// ChooseBootstrapSite picks the first active site of a group: the first
// reachable PrimaryCandidate (in spec order) whose GTID set contains every
// other site's, reachable or not. When every known set is empty (a new
// group) that is simply the first reachable PrimaryCandidate. When some sets
// are incomparable nothing is chosen (IncomparableGTIDSets); when the sets
// are comparable but no reachable PrimaryCandidate holds all of them
// (a DisasterRecovery or reader site, or an unreachable site, is ahead)
// nothing is chosen either (NoEligibleCandidate).
func ChooseBootstrapSite(cands []Candidate) BootstrapVerdict {
	var all gtid.Set
	for _, c := range cands {
		all = all.Union(c.Executed)
	}
	for _, c := range cands {
		if c.Role == v1alpha1.SiteRolePrimaryCandidate && c.Reachable && all.IsSubsetOf(c.Executed) {
			msg := fmt.Sprintf("site %s holds every transaction of every site (%d)", c.Name, all.Count())
			if all.IsEmpty() {
				msg = fmt.Sprintf("every site is empty: site %s is the first reachable PrimaryCandidate", c.Name)
			}
			return BootstrapVerdict{Site: c.Name, Message: msg}
		}
	}
	if a, b, ok := incomparablePair(cands); ok {
		return BootstrapVerdict{Reason: v1alpha1.ReasonIncomparableGTIDSets, Message: fmt.Sprintf(
			"sites %s and %s each hold transactions the other lacks (%s has %s that %s lacks; %s has %s that %s lacks): no site is made writable until a human decides which data to keep",
			a.Name, b.Name, a.Name, GTIDPhrase(a.Executed.Subtract(b.Executed).OneLine()), b.Name, b.Name, GTIDPhrase(b.Executed.Subtract(a.Executed).OneLine()), a.Name)}
	}
	var ahead []string
	for _, c := range cands {
		if all.IsSubsetOf(c.Executed) {
			state := "reachable"
			if !c.Reachable {
				state = "unreachable"
			}
			ahead = append(ahead, fmt.Sprintf("%s (%s, %s)", c.Name, c.Role, state))
		}
	}
	return BootstrapVerdict{Reason: v1alpha1.ReasonNoEligibleCandidate, Message: fmt.Sprintf(
		"no reachable PrimaryCandidate holds every transaction; only %s does: no site is made writable", strings.Join(ahead, ", "))}
}

func incomparablePair(cands []Candidate) (Candidate, Candidate, bool) {
	for i := range cands {
		for j := i + 1; j < len(cands); j++ {
			if cands[i].Executed.Compare(cands[j].Executed) == gtid.Incomparable {
				return cands[i], cands[j], true
			}
		}
	}
	return Candidate{}, Candidate{}, false
}

// SourceHost is the replication source every follower must use: the active
// site's internal Service.
func SourceHost(namespace, group, active string) string {
	return siteaddr.SiteKey{Namespace: namespace, Group: group, Site: active}.InternalServiceFQDN()
}

// SourcePort is mysqld's port behind an internal Service.
const SourcePort = siteaddr.MySQLPort

// SameHost compares host names as a resolver would: any case, an optional
// trailing dot, and the cluster domain suffix.
func SameHost(a, b string) bool {
	norm := func(h string) string {
		h = strings.TrimSuffix(strings.ToLower(h), ".")
		return strings.TrimSuffix(h, ".cluster.local")
	}
	return a != "" && norm(a) == norm(b)
}

// ReplicationState maps a replication channel to the status enum.
func ReplicationState(r *Replica) v1alpha1.ReplicationState {
	switch {
	case r == nil:
		return v1alpha1.ReplicationNotReplicating
	case r.IORunning == "Yes" && r.SQLRunning:
		return v1alpha1.ReplicationRunning
	case !r.SQLRunning && r.LastSQLErrno != 0, r.IORunning == "No" && r.LastIOErrno != 0:
		return v1alpha1.ReplicationError
	case r.IORunning == "Connecting" && r.SQLRunning:
		return v1alpha1.ReplicationConnecting
	default:
		return v1alpha1.ReplicationStopped
	}
}

// parseSiteParts reads an action annotation's value of the form
// "<site>[:key=value]...", the grammar the planned-failover and reclone-site
// annotations share: the site first, then key=value parts, each key at most
// once and one of known. want describes the whole form for the error on a
// missing site. Every error names the part that is wrong.
func parseSiteParts(v, want string, known ...string) (string, map[string]string, error) {
	parts := strings.Split(v, ":")
	site := parts[0]
	if site == "" {
		return "", nil, fmt.Errorf("the value must start with the site name: want %s", want)
	}
	out := map[string]string{}
	for _, p := range parts[1:] {
		k, val, ok := strings.Cut(p, "=")
		if !ok || val == "" {
			return site, nil, fmt.Errorf("part %q is not key=value", p)
		}
		if _, dup := out[k]; dup {
			return site, nil, fmt.Errorf("part %s appears twice", k)
		}
		if !slices.Contains(known, k) {
			return site, nil, fmt.Errorf("unknown part %q (known: %s)", k, strings.Join(known, ", "))
		}
		out[k] = val
	}
	return site, out, nil
}
