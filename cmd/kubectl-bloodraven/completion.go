package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// completeCommand is the hidden subcommand the completion scripts call with
// the words typed so far, the last being the one to complete. It answers in
// the form kubectl's plugin completion reads from kubectl_complete-<plugin>
// (docs/kubectl-plugin.md): one candidate a line, then ":4", the directive
// for "no file completion".
const completeCommand = "__complete"

const bashScript = `# bash completion for kubectl-bloodraven
_kubectl_bloodraven() {
    local IFS=$'\n'
    COMPREPLY=( $(kubectl-bloodraven __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null | grep -v '^:') )
}
complete -F _kubectl_bloodraven kubectl-bloodraven
`

const kubectlScript = `#!/bin/sh
# kubectl_complete-bloodraven: kubectl runs it to complete "kubectl bloodraven ...".
exec kubectl-bloodraven __complete "$@"
`

func completionCommand() *command {
	return &command{
		name: "completion", usage: "completion bash|zsh|kubectl", args: [2]int{1, 1}, complete: []argKind{argShell},
		short: "Print a shell completion script",
		long: `bash and zsh print a script that completes kubectl-bloodraven itself;
source it from your shell's startup file. kubectl prints the script kubectl
runs to complete "kubectl bloodraven ...": save it as an executable named
kubectl_complete-bloodraven on your PATH. Completion offers commands, flags,
groups of the namespace and their sites.`,
		examples: `  source <(kubectl-bloodraven completion bash)
  kubectl-bloodraven completion zsh > "${fpath[1]}/_kubectl-bloodraven"
  kubectl-bloodraven completion kubectl > ~/bin/kubectl_complete-bloodraven && chmod +x ~/bin/kubectl_complete-bloodraven`,
		setup: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
			return func(_ context.Context, a *app, args []string) error {
				switch args[0] {
				case "bash":
					fmt.Fprint(a.out, bashScript)
				case "zsh":
					fmt.Fprint(a.out, "#compdef kubectl-bloodraven\nautoload -U +X bashcompinit && bashcompinit\n"+bashScript)
				case "kubectl":
					fmt.Fprint(a.out, kubectlScript)
				default:
					return usageError{fmt.Sprintf("unknown shell %q: use bash, zsh or kubectl", args[0])}
				}
				return nil
			}
		},
	}
}

func (a *app) completeArgs(words []string) int {
	for _, c := range a.candidates(words) {
		fmt.Fprintln(a.out, c)
	}
	fmt.Fprintln(a.out, ":4")
	return 0
}

func (a *app) candidates(words []string) []string {
	if len(words) == 0 {
		words = []string{""}
	}
	partial := words[len(words)-1]
	if len(words) == 1 {
		var names []string
		for _, c := range commands() {
			names = append(names, c.name)
		}
		return withPrefix(names, partial)
	}
	c := lookup(words[0])
	if c == nil {
		return nil
	}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.setup(fs)
	if strings.HasPrefix(partial, "-") {
		return withPrefix(flagNames(fs), partial)
	}
	prior := words[1 : len(words)-1]
	if n := len(prior); n > 0 && (prior[n-1] == "-o" || prior[n-1] == "--output") {
		return withPrefix([]string{"json", "yaml"}, partial)
	}
	pos, _ := parseInterspersed(fs, prior)
	if len(pos) >= len(c.complete) {
		return nil
	}
	return withPrefix(a.argCandidates(c.complete[len(pos)], fs, pos), partial)
}

func (a *app) argCandidates(kind argKind, fs *flag.FlagSet, pos []string) []string {
	if kind == argShell {
		return []string{"bash", "zsh", "kubectl"}
	}
	k := &kubeFlags{}
	for name, dst := range map[string]*string{"kubeconfig": &k.kubeconfig, "context": &k.context, "cluster": &k.cluster, "user": &k.user, "namespace": &k.namespace} {
		if f := fs.Lookup(name); f != nil {
			*dst = f.Value.String()
		}
	}
	c, err := k.clients()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if kind == argGroup {
		return groupNames(ctx, c)
	}
	g, err := c.getGroup(ctx, pos[0])
	if err != nil {
		return nil
	}
	return siteNames(g, kind == argCandidate)
}

func groupNames(ctx context.Context, c *clients) []string {
	list, err := c.ship.ShipstreamV1alpha1().MysqlFailoverGroups(c.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var out []string
	for _, g := range list.Items {
		out = append(out, g.Name)
	}
	return out
}

// siteNames lists the sites that are not active, only the PrimaryCandidate
// ones when candidates: the only sites the commands accept.
func siteNames(g *v1alpha1.MysqlFailoverGroup, candidates bool) []string {
	var out []string
	for _, s := range g.Spec.Sites {
		if s.Name == g.Status.ActiveSite || candidates && s.Role != v1alpha1.SiteRolePrimaryCandidate {
			continue
		}
		out = append(out, s.Name)
	}
	return out
}

func flagNames(fs *flag.FlagSet) []string {
	var out []string
	fs.VisitAll(func(f *flag.Flag) {
		if len(f.Name) == 1 {
			out = append(out, "-"+f.Name)
		} else {
			out = append(out, "--"+f.Name)
		}
	})
	return out
}

func withPrefix(all []string, prefix string) []string {
	var out []string
	for _, s := range all {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}
