package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/gateway"
	"github.com/capkit/capkit/host"
	"github.com/capkit/capkit/host/config"
)

// reviewReport is what `capkit upstream review --json` prints for one
// upstream.
type reviewReport struct {
	Upstream string       `json:"upstream"`
	Error    string       `json:"error,omitempty"`
	Tools    []toolReport `json:"tools"`
}

type toolReport struct {
	Name    string   `json:"name"`
	Public  string   `json:"public,omitempty"`
	State   string   `json:"state"`
	Changes []string `json:"changes,omitempty"`
	Diff    string   `json:"diff,omitempty"`
	Problem string   `json:"problem,omitempty"`
}

func newUpstreamCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "upstream",
		Short: "Review and approve other MCP servers' tools ([upstream.NAME])",
		Long: `Tools of the MCP servers a configuration names ([upstream.NAME] tables) are
offered as NAME__TOOL only as a person approved them: the lock file
([upstream] lock, default ` + config.DefaultLockName + ` beside the configuration) holds each
approved definition (name, title, description, input and output schemas,
annotations) with its SHA-256. A tool an upstream lists differently is not
offered, and calling it fails with integrity (9) until it is reviewed and
approved again; serve reads the lock when it starts.`,
	}
	cmd.AddCommand(newUpstreamReviewCmd(env), newUpstreamApproveCmd(env))
	return cmd
}

func newUpstreamReviewCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "review",
		Short: "Start each upstream, list its tools, and show what is new or changed against the lock",
		Long: `review starts each upstream as serve would (contained, with its secrets),
lists its tools, stops it, and shows each tool's state against the lock:
approved, new, changed (a diff of each part that changed), missing (approved
but no longer listed: removed or renamed), not allowed (left out by the
upstream's tools = [...]) or unusable (a name or definition capkit cannot
offer). It exits 0 when everything listed is approved, and 9 (integrity)
when something is new, changed, missing or unusable, or an upstream could
not be listed.

Example:
  capkit upstream review --config capkit.toml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, reviews, _, err := reviewUpstreams(cmd.Context(), env)
			if err != nil {
				return err
			}
			if err := env.Print(reviewReports(reviews), reviewText(reviews)); err != nil {
				return err
			}
			if gateway.Pending(reviews) {
				return fault.New(fault.Integrity, "some upstream tools are not approved as listed; approve them with capkit upstream approve --config %s [NAME | NAME__TOOL]...", cfg.File())
			}
			return nil
		},
	}
}

func newUpstreamApproveCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "approve [NAME | NAME__TOOL]...",
		Short: "Record the listed definitions of upstreams or tools in the lock",
		Long: `approve reviews the upstreams as review does and records in the lock what
they list now: for each NAME given, every new or changed tool of that
upstream, and its missing ones removed; for each NAME__TOOL, that tool
alone; given none, every upstream. It fails, changing nothing, when a NAME
or NAME__TOOL names nothing listed, or when an upstream it would approve
could not be listed. Restart serve to offer what it approved.

Examples:
  capkit upstream approve --config capkit.toml memory
  capkit upstream approve --config capkit.toml memory__create_entities`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, reviews, lock, err := reviewUpstreams(cmd.Context(), env)
			if err != nil {
				return err
			}
			done, err := gateway.Approve(lock, reviews, args)
			if err != nil {
				return err
			}
			if len(done) == 0 {
				return env.Print(done, "nothing to approve: the lock holds what the upstreams list")
			}
			if err := lock.Save(cmd.Context(), cfg.LockFile()); err != nil {
				return err
			}
			return env.Print(done, strings.Join(done, "\n")+"\nwritten to "+cfg.LockFile()+"; restart capkit serve to offer them")
		},
	}
}

// reviewUpstreams reads the configuration and the lock, and reviews every
// upstream.
func reviewUpstreams(ctx context.Context, env *Env) (*config.Config, []gateway.Review, *gateway.Lock, error) {
	if env.Config == "" {
		return nil, nil, nil, fault.New(fault.InvalidInput, "give --config: the configuration whose [upstream.NAME] servers to review")
	}
	cfg, err := config.Load(env.Config)
	if err != nil {
		return nil, nil, nil, setupFault(err)
	}
	if len(cfg.Upstream) == 0 {
		return nil, nil, nil, fault.New(fault.NotFound, "%s configures no upstream ([upstream.NAME])", cfg.File())
	}
	lock, err := gateway.LoadLock(cfg.LockFile())
	if err != nil {
		return nil, nil, nil, err
	}
	ups, err := host.Upstreams(ctx, cfg, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	opts, err := host.GatewayOptions(cfg, nil, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	reviews, err := gateway.ReviewUpstreams(ctx, ups, lock, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	return cfg, reviews, lock, nil
}

func reviewReports(reviews []gateway.Review) []reviewReport {
	out := []reviewReport{}
	for _, r := range reviews {
		rr := reviewReport{Upstream: r.Upstream, Tools: []toolReport{}}
		if r.Err != nil {
			rr.Error = r.Err.Error()
		}
		for _, t := range r.Tools {
			rr.Tools = append(rr.Tools, toolReport{Name: t.Name, Public: t.Public, State: string(t.State), Changes: t.Changes, Diff: t.Diff, Problem: t.Problem})
		}
		out = append(out, rr)
	}
	return out
}

// reviewText shows the review for a person: each tool's state, and the
// diff of what is new or changed, indented.
func reviewText(reviews []gateway.Review) string {
	var b strings.Builder
	for _, r := range reviews {
		if r.Err != nil {
			fmt.Fprintf(&b, "upstream %s: cannot be listed: %v\n", r.Upstream, r.Err)
			continue
		}
		fmt.Fprintf(&b, "upstream %s: %d tools\n", r.Upstream, len(r.Tools))
		for _, t := range r.Tools {
			name := t.Public
			if name == "" {
				name = fmt.Sprintf("%q", t.Name)
			}
			line := fmt.Sprintf("  %-11s %s", t.State, name)
			switch t.State {
			case gateway.StateChanged:
				line += " (" + strings.Join(t.Changes, ", ") + ")"
			case gateway.StateMissing:
				line += " (approved, no longer listed: removed or renamed)"
			case gateway.StateNotAllowed:
				line += " (left out by its tools = [...])"
			case gateway.StateUnusable:
				line += ": " + t.Problem
			}
			b.WriteString(line + "\n")
			for _, l := range strings.Split(strings.TrimSuffix(t.Diff, "\n"), "\n") {
				if l != "" {
					b.WriteString("      " + l + "\n")
				}
			}
		}
	}
	return b.String()
}
