package cli

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/net/budget"
	"github.com/capkit/capkit/net/fetch"
	"github.com/capkit/capkit/net/quota"
	"github.com/capkit/capkit/parse/sniff"
	"github.com/capkit/capkit/store/state"
)

// budgetFlags select a budget: a policy and one store.
type budgetFlags struct {
	policy, root, store string
}

func (f *budgetFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.policy, "budget", "", "budget policy JSON file (format 1)")
	cmd.Flags().StringVar(&f.root, "budget-root", "", "budget root directory (SQLite), shared by every process charging this allowance")
	cmd.Flags().StringVar(&f.store, "budget-store", "", "PostgreSQL URL (postgres://...) of a budget shared by many hosts")
}

// open opens the selected budget, or returns nil when none is selected.
func (f *budgetFlags) open(ctx context.Context) (*budget.Budget, error) {
	if f.policy == "" {
		if f.root != "" || f.store != "" {
			return nil, fault.New(fault.InvalidInput, "--budget-root and --budget-store need --budget POLICY.json")
		}
		return nil, nil
	}
	if (f.root == "") == (f.store == "") {
		return nil, fault.New(fault.InvalidInput, "--budget needs exactly one of --budget-root DIR or --budget-store postgres://...")
	}
	loc := f.root
	if f.store != "" {
		if !budget.IsPostgres(f.store) {
			return nil, fault.New(fault.InvalidInput, "--budget-store must be a postgres:// URL")
		}
		loc = f.store
	}
	p, err := budget.LoadPolicy(ctx, f.policy)
	if err != nil {
		return nil, err
	}
	return budget.Open(ctx, loc, p, nil)
}

func newFetchCmd(env *Env) *cobra.Command {
	var policy, task, out, expect string
	var bf budgetFlags
	cmd := &cobra.Command{
		Use:   "fetch URL --policy P.json --task T [--budget B.json (--budget-root DIR | --budget-store postgres://...)] [-o FILE]",
		Short: "Fetch a public https URL under a reviewed network policy and budget",
		Long: fmt.Sprintf(`Fetch URL (GET, https only) under the HTTP policy P.json and print the body
(to FILE with -o: a regular file is replaced atomically, a character
device such as /dev/null or a FIFO is written to; - or no -o is standard
output) and a receipt (to standard error, or as JSON on standard output
with --json, which needs -o FILE). The destination is checked before the
request is sent or charged.

The destination is checked on every address dialled, for every redirect:
loopback, private, link-local (cloud metadata), CGNAT, multicast,
documentation and every other special-purpose IPv4/IPv6 range, IPv4-mapped,
NAT64, 6to4 and Teredo forms, user:password@ URLs, numeric host names in
disguise (2130706433, 0x7f.1) and ports other than 443 are refused (exit 5)
unless the policy reviews them in ("private_destinations", "ports"); with
"hosts", only the host names it lists are reached (no IP literal).
No proxies (HTTP_PROXY is ignored), cookies, credentials or retries.

Bounds (the policy may narrow them): %s on the wire and %s
expanded, %d requests, %d redirects, %d s in all (exit 6). HTTP 4xx/5xx
exit 11, TLS failures exit 12. With --budget, each request is admitted
durably first; a spent or cooling-down budget exits 8 with the wait.`,
			limits.Bytes(limits.FetchMaxResponseBytes), limits.Bytes(limits.FetchMaxExpandedBytes),
			limits.FetchMaxRequests, limits.FetchMaxRedirects, int(limits.FetchMaxDeadline.Seconds())),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			dest, err := openFetchOutput(env, out)
			if err != nil {
				return err
			}
			defer dest.close()
			p, err := fetch.LoadPolicy(ctx, policy)
			if err != nil {
				return err
			}
			b, err := bf.open(ctx)
			if err != nil {
				return err
			}
			if b != nil {
				defer b.Close()
			}
			o := &fetch.Options{Budget: b, Task: task}
			if expect != "" {
				if o.Expect, err = sniff.ParseFormat(expect); err != nil {
					return err
				}
			}
			f, err := fetch.New(p, o)
			if err != nil {
				return err
			}
			defer f.Close()
			res, err := f.Fetch(ctx, args[0])
			if err != nil {
				return err
			}
			if err := dest.write(ctx, res.Body); err != nil {
				return err
			}
			if env.JSON {
				return env.writeJSON(env.Stdout, res.Receipt)
			}
			_, err = fmt.Fprintln(env.Stderr, res.Receipt.Text())
			return err
		},
	}
	cmd.Flags().StringVar(&policy, "policy", "", "HTTP policy JSON file (format 1) (required)")
	cmd.Flags().StringVar(&task, "task", "", "stable task identity budget charges go to (required)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the body to FILE (a regular file is replaced atomically; a device or FIFO is written to; - is standard output)")
	cmd.Flags().StringVar(&expect, "expect", "", "check the body is json, feed, html, pdf or csv (exit 9 otherwise)")
	bf.add(cmd)
	cmd.MarkFlagRequired("policy")
	cmd.MarkFlagRequired("task")
	return cmd
}

func newBudgetCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "budget",
		Short: "Inspect and operate durable network budgets (SQLite roots or PostgreSQL stores)",
		Long: `A budget root (a directory, SQLite) or store (a postgres:// URL) holds one
allowance shared by every process and host that opens it. Reservations are
durable before any request is sent; an unsettled reservation stays charged.`,
	}
	cmd.AddCommand(newBudgetStatusCmd(env), newBudgetReserveCmd(env), newBudgetSettleCmd(env),
		newBudgetClearCmd(env), newBudgetSnapshotCmd(env), newBudgetTransferCmd(env))
	return cmd
}

func newBudgetStatusCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "status ROOT|URL",
		Short: "Show a budget's window, spacing, cooldown, totals and open reservations",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := budget.OpenExisting(cmd.Context(), args[0], nil)
			if err != nil {
				return err
			}
			defer b.Close()
			st, err := b.Status(cmd.Context())
			if err != nil {
				return err
			}
			return env.Print(st, st.Text())
		},
	}
}

func newBudgetReserveCmd(env *Env) *cobra.Command {
	var policy, task string
	var bytes int64
	cmd := &cobra.Command{
		Use:   "reserve ROOT|URL --budget B.json --task T --bytes N",
		Short: "Reserve one request of at most N bytes (exit 8 with the wait when not admitted)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := budget.LoadPolicy(cmd.Context(), policy)
			if err != nil {
				return err
			}
			b, err := budget.Open(cmd.Context(), args[0], p, nil)
			if err != nil {
				return err
			}
			defer b.Close()
			r, err := b.Reserve(cmd.Context(), task, bytes)
			if err != nil {
				return err
			}
			return env.Print(r, "reserved "+r.ID)
		},
	}
	cmd.Flags().StringVar(&policy, "budget", "", "budget policy JSON file (required)")
	cmd.Flags().StringVar(&task, "task", "", "task identity (required)")
	cmd.Flags().Int64Var(&bytes, "bytes", 0, "bytes to reserve")
	cmd.MarkFlagRequired("budget")
	cmd.MarkFlagRequired("task")
	return cmd
}

func newBudgetSettleCmd(env *Env) *cobra.Command {
	var used int64
	var status int
	var retryAfter string
	cmd := &cobra.Command{
		Use:   "settle ROOT|URL ID --bytes N [--status CODE [--retry-after V]]",
		Short: "Settle reservation ID at N bytes used (at most what it reserved)",
		Long: `Settle reservation ID: the bytes beyond N go back to the window it was charged
in. --status 429 (or 503 with --retry-after) starts a cooldown; a 429 without
a usable Retry-After blocks the group until "capkit budget clear-cooldown".
To settle a reservation whose outcome is unknown, keep its full charge.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := budget.OpenExisting(cmd.Context(), args[0], nil)
			if err != nil {
				return err
			}
			defer b.Close()
			if err := b.Settle(cmd.Context(), args[1], used, budget.Outcome{Status: status, RetryAfter: retryAfter}); err != nil {
				return err
			}
			return env.Print(map[string]any{"id": args[1], "bytes": used}, "settled "+args[1]+" at "+strconv.FormatInt(used, 10)+" bytes")
		},
	}
	cmd.Flags().Int64Var(&used, "bytes", 0, "bytes really used")
	cmd.Flags().IntVar(&status, "status", 0, "HTTP status received, for cooldowns")
	cmd.Flags().StringVar(&retryAfter, "retry-after", "", "the Retry-After header received")
	cmd.MarkFlagRequired("bytes")
	return cmd
}

func newBudgetClearCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "clear-cooldown ROOT|URL",
		Short: "End a budget's cooldown: an operator's decision that the upstream accepts requests again",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := budget.OpenExisting(cmd.Context(), args[0], nil)
			if err != nil {
				return err
			}
			defer b.Close()
			if err := b.ClearCooldown(cmd.Context()); err != nil {
				return err
			}
			return env.Print(map[string]any{"cleared": true}, "cooldown cleared")
		},
	}
}

func newBudgetSnapshotCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "snapshot ROOT|URL OUT",
		Short: "Seal a quiesced budget and write its snapshot to OUT, for one transfer",
		Long: `Seal the budget (it admits nothing from now on) and write its complete
accounting to OUT (which must not exist). A budget with open reservations is
not quiesced and is refused (exit 4): stop its users and settle them first.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := absPath(args[1])
			if err != nil {
				return err
			}
			if _, err := os.Lstat(out); err == nil {
				return fault.New(fault.Conflict, "%s exists; a snapshot is written to a new file", args[1])
			}
			snap, err := quota.Take(cmd.Context(), args[0], nil)
			if err != nil {
				return err
			}
			data, err := snap.Encode()
			if err != nil {
				return err
			}
			if err := state.Replace(cmd.Context(), out, data); err != nil {
				// The root is sealed: do not lose the snapshot.
				env.Stderr.Write(data)
				return err
			}
			return env.Print(map[string]any{"id": snap.ID, "source": snap.Source, "snapshot": out},
				fmt.Sprintf("sealed %s; snapshot %s written to %s", snap.Source, snap.ID, args[1]))
		},
	}
}

func newBudgetTransferCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "transfer SNAPSHOT NEWROOT|URL",
		Short: "Create a new budget from a snapshot and retire the sealed source",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readDocArg(env, args[0], limits.QuotaSnapshotMaxBytes)
			if err != nil {
				return err
			}
			snap, err := quota.Parse(cmd.Context(), data)
			if err != nil {
				return err
			}
			if err := quota.Transfer(cmd.Context(), snap, args[1], nil); err != nil {
				return err
			}
			return env.Print(map[string]any{"id": snap.ID, "source": snap.Source, "destination": args[1]},
				fmt.Sprintf("transferred %s to %s", snap.Source, args[1]))
		},
	}
}
