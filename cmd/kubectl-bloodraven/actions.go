package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/shipstream/bloodraven/pkg/leasestore"
	"github.com/shipstream/bloodraven/pkg/pluginview"
	"github.com/shipstream/bloodraven/pkg/topology"
)

func plannedFailoverCommand() *command {
	return &command{
		name: "planned-failover", usage: "planned-failover <group> <site>", args: [2]int{2, 2}, complete: []argKind{argGroup, argCandidate},
		short: "Move the primary role to another PrimaryCandidate site without losing a transaction",
		long: `Sets the bloodraven.shipstream.io/planned-failover annotation to
<site>[:maxLagWait=<duration>]. The operator turns it into a claim in
status.plannedFailover and removes it; the run then goes through admission,
catch-up, fence, promotion and publication (docs/planned-failover.md).
Refused here, before anything is written: a site not in spec.sites, not a
PrimaryCandidate, already active, or a run or request already in flight.`,
		examples: `  kubectl bloodraven planned-failover orders pdx -n databases
  kubectl bloodraven planned-failover orders pdx -n databases --max-lag-wait 5m`,
		setup: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
			k := bindKubeFlags(fs)
			wait := fs.Duration("max-lag-wait", 0, "how long the target may take to catch up before anything is fenced, 1s to 1h (default: spec.plannedFailover.maxLagWait)")
			return func(ctx context.Context, a *app, args []string) error {
				c, err := k.clients()
				if err != nil {
					return err
				}
				return a.plannedFailover(ctx, c, args[0], args[1], *wait)
			}
		},
	}
}

func (a *app) plannedFailover(ctx context.Context, c *clients, group, site string, wait time.Duration) error {
	g, err := c.getGroup(ctx, group)
	if err != nil {
		return err
	}
	v, err := pluginview.PlannedFailoverValue(g, site, wait)
	if err != nil {
		return fmt.Errorf("not requesting the planned failover: %w", err)
	}
	if err := c.annotate(ctx, group, topology.AnnotationPlannedFailover, v); err != nil {
		return err
	}
	fmt.Fprintf(a.out, "Requested a planned failover of %s/%s from %s to %s (%s=%s).\nFollow it with: kubectl bloodraven status %s -n %s\n",
		c.ns, group, g.Status.ActiveSite, site, topology.AnnotationPlannedFailover, v, group, c.ns)
	return nil
}

func revokeLeasesCommand() *command {
	return &command{
		name: "revoke-leases", usage: "revoke-leases <group>", args: [2]int{1, 1}, complete: []argKind{argGroup},
		short: "Revoke every deployment lease and failover hold of a group",
		long: `Sets the bloodraven.shipstream.io/revoke-deployment-leases annotation
(to --reason, default the current time). The deploy-lease controller revokes every live
migration lease and failover hold of the group (reason OperatorRevoked,
Event DeploymentLeaseRevoked) and removes the annotation. Deploy jobs holding
them get 409 on their next renewal and must stop (docs/deploy-api.md).`,
		examples: `  kubectl bloodraven revoke-leases orders -n databases
  kubectl bloodraven revoke-leases orders -n databases --reason incident-42`,
		setup: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
			k := bindKubeFlags(fs)
			reason := fs.String("reason", "", "the annotation's value, for the record (default: the current time)")
			return func(ctx context.Context, a *app, args []string) error {
				c, err := k.clients()
				if err != nil {
					return err
				}
				return a.revokeLeases(ctx, c, args[0], *reason)
			}
		},
	}
}

func (a *app) revokeLeases(ctx context.Context, c *clients, group, reason string) error {
	g, err := c.getGroup(ctx, group)
	if err != nil {
		return err
	}
	recs, lerr := leasestore.New(c.kube, leasestore.Options{}).List(ctx, c.ns, group)
	now := a.now()
	switch {
	case lerr != nil:
		fmt.Fprintf(a.out, "Cannot list the group's leases (%v); revoking whatever is live.\n", lerr)
	default:
		live := 0
		for _, r := range recs {
			if r.Live(now) {
				live++
				fmt.Fprintf(a.out, "Revoking %s %s (instance %s, holder %s, expires %s).\n", r.Kind, r.OperationID, r.Instance, r.Holder, r.ExpiresAt.UTC().Format(time.RFC3339))
			}
		}
		if live == 0 {
			fmt.Fprintln(a.out, "No live lease right now; the request still revokes any granted before the controller handles it.")
		}
	}
	if reason == "" {
		reason = now.UTC().Format(time.RFC3339)
	}
	if err := c.annotate(ctx, g.Name, leasestore.RevokeAnnotation, reason); err != nil {
		return err
	}
	fmt.Fprintf(a.out, "Requested. Events DeploymentLeaseRevoked follow; check with: kubectl bloodraven status %s -n %s\n", group, c.ns)
	return nil
}

func clearHoldCommand() *command {
	return &command{
		name: "clear-automatic-failover-hold", usage: "clear-automatic-failover-hold <group>", args: [2]int{1, 1}, complete: []argKind{argGroup},
		short: "Let automatic failover act again after a planned failover placed a hold",
		long: `Sets bloodraven.shipstream.io/clear-automatic-failover-hold=<group>. The
operator clears status.automaticFailoverHold (Event
AutomaticFailoverHoldCleared) and removes the annotation. Refused here when
the group has no hold. Clear a hold only after the checks in
docs/runbooks/planned-failover.md.`,
		examples: `  kubectl bloodraven clear-automatic-failover-hold orders -n databases`,
		setup: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
			k := bindKubeFlags(fs)
			return func(ctx context.Context, a *app, args []string) error {
				c, err := k.clients()
				if err != nil {
					return err
				}
				return a.clearHold(ctx, c, args[0])
			}
		},
	}
}

func (a *app) clearHold(ctx context.Context, c *clients, group string) error {
	g, err := c.getGroup(ctx, group)
	if err != nil {
		return err
	}
	v, err := pluginview.ClearHoldValue(g)
	if err != nil {
		return err
	}
	fmt.Fprint(a.out, pluginview.HoldWarning(g.Status.AutomaticFailoverHold))
	if err := c.annotate(ctx, group, topology.AnnotationClearAutomaticFailoverHold, v); err != nil {
		return err
	}
	fmt.Fprintf(a.out, "Requested (%s=%s).\n", topology.AnnotationClearAutomaticFailoverHold, v)
	return nil
}
