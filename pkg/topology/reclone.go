package topology

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/gtid"
)

// AnnotationRecloneSite asks the operator to replace a site's data with a
// clone of the active site. Its value is an interlock against fat fingers
// (v1.7.0 format): "<site>:confirm=<group name>:uid=<group uid>", plus
// ":gtidPrefix=<source UUID prefix>" naming a source of the site's divergent
// transactions when it holds any.
const AnnotationRecloneSite = "bloodraven.shipstream.io/reclone-site"

// MinGTIDPrefix is the shortest gtidPrefix accepted: long enough that it
// was copied from the divergent set, not typed at random.
const MinGTIDPrefix = 8

// RecloneRequest is a parsed reclone-site annotation value.
type RecloneRequest struct {
	Site       string
	Confirm    string
	UID        string
	GTIDPrefix string
}

// ParseRecloneValue parses "<site>:confirm=<group>:uid=<uid>[:gtidPrefix=<p>]".
// Every error names the part that is wrong.
func ParseRecloneValue(v string) (RecloneRequest, error) {
	var r RecloneRequest
	site, kv, err := parseSiteParts(v, "<site>:confirm=<group>:uid=<group uid>[:gtidPrefix=<prefix>]", "confirm", "uid", "gtidPrefix")
	r.Site = site
	if err != nil {
		return r, err
	}
	r.Confirm, r.UID, r.GTIDPrefix = kv["confirm"], kv["uid"], strings.ToLower(kv["gtidPrefix"])
	if r.Confirm == "" {
		return r, fmt.Errorf("confirm=<group name> is missing")
	}
	if r.UID == "" {
		return r, fmt.Errorf("uid=<group uid> is missing")
	}
	return r, nil
}

// RecloneInput is the annotation as the decision sees it.
type RecloneInput struct {
	// Value is the annotation's value.
	Value string
	// GroupUID is metadata.uid of the group.
	GroupUID string
}

// reclone validates a reclone request against the group's current state.
// It returns the site being recloned (its follower logic is skipped in this
// decision) or "". Any request leads to clearing the annotation: accepted
// ones after the record is stored and the clone dispatched, rejected ones at
// once with a RecloneRejected Warning.
func (d *decider) reclone(active string, av *Observed) string {
	rq := d.in.Reclone
	if rq == nil {
		return ""
	}
	d.out.ClearRecloneAnnotation = true
	site, discard, detector, err := d.validateReclone(rq, active, av)
	if err != nil {
		d.event(true, v1alpha1.EventRecloneRejected, "annotation %s=%q refused and cleared: %v", AnnotationRecloneSite, rq.Value, err)
		return ""
	}
	now := metav1.NewTime(d.in.Now)
	rec := v1alpha1.RecloneRecord{Site: site, Donor: active, RequestTime: now,
		DiscardedGTID: discard.OneLine(), DiscardedTransactionCount: int64(discard.Count()), DivergenceDetectedBy: detector}
	h := append(append([]v1alpha1.RecloneRecord(nil), d.out.Status.RecloneHistory...), rec)
	if len(h) > 10 {
		h = h[len(h)-10:]
	}
	d.out.Status.RecloneHistory = h
	// The record must be stored before the clone may destroy anything.
	d.out.WriteFirst = true
	if discard.IsEmpty() {
		d.event(false, v1alpha1.EventRecloneRequested, "site %s is recloned from the active site %s (it holds nothing site %s lacks)", site, active, active)
	} else {
		d.event(true, v1alpha1.EventRecloneRequested, "site %s is recloned from the active site %s: the clone discards its %d transactions site %s lacks: %s",
			site, active, discard.Count(), active, GTIDPhrase(discard.OneLine()))
	}
	d.act(Action{Kind: Clone, Site: site, Donor: active, SourceHost: SourceHost(d.in.Namespace, d.in.Group, active), SourcePort: SourcePort,
		Discard: discard, Why: fmt.Sprintf("reclone requested through the %s annotation", AnnotationRecloneSite)})
	st := d.sites[site]
	st.Message = fmt.Sprintf("reclone from site %s requested", active)
	return site
}

// validateReclone checks the request and returns the site, the set the
// clone would discard (what the site holds that the active site lacks,
// on current observations) and who detected it.
func (d *decider) validateReclone(rq *RecloneInput, active string, av *Observed) (string, gtid.Set, v1alpha1.DivergenceDetector, error) {
	r, err := ParseRecloneValue(rq.Value)
	if err != nil {
		return "", gtid.Set{}, "", err
	}
	switch {
	case r.Confirm != d.in.Group:
		return "", gtid.Set{}, "", fmt.Errorf("confirm=%s does not name this group (%s)", r.Confirm, d.in.Group)
	case r.UID != rq.GroupUID:
		return "", gtid.Set{}, "", fmt.Errorf("uid=%s is not this group's uid (%s): the value was built for another incarnation of the group", r.UID, rq.GroupUID)
	case !d.inSpec(r.Site):
		return "", gtid.Set{}, "", fmt.Errorf("site %q is not in spec.sites", r.Site)
	case d.in.Status.Transition != nil:
		return "", gtid.Set{}, "", fmt.Errorf("a %s transition is in flight; request the reclone again once it finished", d.in.Status.Transition.Kind)
	case active == "":
		return "", gtid.Set{}, "", fmt.Errorf("the group has no active site to clone from yet")
	case r.Site == active:
		return "", gtid.Set{}, "", fmt.Errorf("site %s is the active site (the donor); it cannot be recloned", r.Site)
	case av == nil || !av.Writable:
		return "", gtid.Set{}, "", fmt.Errorf("the active site %s is not observed writable right now; request the reclone again once it is", active)
	}
	o := d.view(r.Site)
	if o == nil {
		return "", gtid.Set{}, "", fmt.Errorf("site %s is not reachable right now; request the reclone again once it is", r.Site)
	}
	if d.in.Observed[r.Site].Clone.Running {
		return "", gtid.Set{}, "", fmt.Errorf("a clone into site %s is already running", r.Site)
	}
	if o.Writable {
		return "", gtid.Set{}, "", fmt.Errorf("site %s is writable; it is fenced first, request the reclone again once it is", r.Site)
	}
	extra := d.divergentFrom(o, av, active)
	var detector v1alpha1.DivergenceDetector
	if p := d.prevSite(r.Site); p != nil {
		detector = p.DivergenceDetectedBy
	}
	if extra.IsEmpty() {
		if r.GTIDPrefix != "" {
			return "", gtid.Set{}, "", fmt.Errorf("gtidPrefix=%s given but site %s holds no transactions site %s lacks; omit gtidPrefix", r.GTIDPrefix, r.Site, active)
		}
		return r.Site, extra, "", nil
	}
	var uuids []string
	for _, sid := range extra.SIDs() {
		uuids = append(uuids, sid.UUID)
	}
	switch {
	case r.GTIDPrefix == "":
		return "", gtid.Set{}, "", fmt.Errorf("site %s holds %d transactions site %s lacks (%s): the clone destroys them, so the value must add :gtidPrefix=<at least %d characters of one of their source UUIDs: %s>",
			r.Site, extra.Count(), active, GTIDPhrase(extra.OneLine()), MinGTIDPrefix, strings.Join(uuids, ", "))
	case len(r.GTIDPrefix) < MinGTIDPrefix:
		return "", gtid.Set{}, "", fmt.Errorf("gtidPrefix=%s is shorter than %d characters", r.GTIDPrefix, MinGTIDPrefix)
	}
	for _, u := range uuids {
		if strings.HasPrefix(strings.ToLower(u), r.GTIDPrefix) {
			if detector == "" {
				detector = v1alpha1.DivergenceByReplicaAudit
			}
			return r.Site, extra, detector, nil
		}
	}
	return "", gtid.Set{}, "", fmt.Errorf("gtidPrefix=%s matches no source UUID of site %s's divergent transactions (%s)", r.GTIDPrefix, r.Site, strings.Join(uuids, ", "))
}
