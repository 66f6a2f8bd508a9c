package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/leasestore"
	"github.com/shipstream/bloodraven/pkg/pluginview"
)

func statusCommand() *command {
	return &command{
		name: "status", usage: "status [group]", args: [2]int{0, 1}, complete: []argKind{argGroup},
		short: "Show a group at a glance (every group of the namespace without a name)",
		long: `Shows the active site, the topology generation, each site's state, role,
replication, lag and GTID set compared to the active site, divergence
records, a transition or planned failover in flight, the automatic-failover
hold, the group's deployment leases and holds, the conditions that are not
fine, and action annotations the operator has not handled yet. It changes
nothing. -o json and -o yaml print the same summary for scripts; without a
group they print {"items": [...]}.`,
		examples: `  kubectl bloodraven status orders -n databases
  kubectl bloodraven status -n databases
  kubectl bloodraven status orders -o json | jq '.sites[] | select(.divergence)'`,
		setup: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
			k := bindKubeFlags(fs)
			output := fs.String("output", "", "output format: json or yaml (default: text)")
			fs.StringVar(output, "o", "", "output format: json or yaml")
			return func(ctx context.Context, a *app, args []string) error {
				if *output != "" && *output != "json" && *output != "yaml" {
					return usageError{fmt.Sprintf("-o %s: unknown output format; use json or yaml", *output)}
				}
				c, err := k.clients()
				if err != nil {
					return err
				}
				return a.status(ctx, c, args, *output)
			}
		},
	}
}

func (a *app) status(ctx context.Context, c *clients, args []string, output string) error {
	groups, err := c.groups(ctx, args)
	if err != nil {
		return err
	}
	var sums []pluginview.Summary
	for i := range groups {
		sums = append(sums, c.summarize(ctx, &groups[i], a.now()))
	}
	if output != "" {
		var v any = map[string]any{"items": sums}
		if len(args) == 1 {
			v = sums[0]
		}
		return writeStructured(a.out, v, output)
	}
	if len(sums) == 0 {
		fmt.Fprintf(a.out, "No MysqlFailoverGroup in namespace %s (pass -n <namespace>; kubectl get mfg -A lists every group).\n", c.ns)
	}
	for i, s := range sums {
		if i > 0 {
			fmt.Fprintln(a.out)
		}
		if err := pluginview.WriteText(a.out, s, a.now()); err != nil {
			return err
		}
	}
	return nil
}

// groups reads the named group, or every group of the namespace.
func (c *clients) groups(ctx context.Context, args []string) ([]v1alpha1.MysqlFailoverGroup, error) {
	if len(args) == 1 {
		g, err := c.getGroup(ctx, args[0])
		if err != nil {
			return nil, err
		}
		return []v1alpha1.MysqlFailoverGroup{*g}, nil
	}
	list, err := c.ship.ShipstreamV1alpha1().MysqlFailoverGroups(c.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, c.explain(err, "list", "*")
	}
	return list.Items, nil
}

// summarize reads the group's deployment leases (best effort: a user
// without RBAC on Leases still gets the rest) and builds the summary.
func (c *clients) summarize(ctx context.Context, g *v1alpha1.MysqlFailoverGroup, now time.Time) pluginview.Summary {
	recs, err := leasestore.New(c.kube, leasestore.Options{}).List(ctx, g.Namespace, g.Name)
	if err == nil && recs == nil {
		recs = []leasestore.Record{}
	}
	return pluginview.Summarize(g, recs, err, now)
}

func writeStructured(w io.Writer, v any, format string) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if format == "yaml" {
		if b, err = yaml.JSONToYAML(b); err != nil {
			return err
		}
	} else {
		b = append(b, '\n')
	}
	_, err = w.Write(b)
	return err
}
