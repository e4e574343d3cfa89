package host

import (
	"cmp"
	"context"
	"log/slog"
	"os"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/host/config"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/net/budget"
	"github.com/capkit/capkit/net/egress"
	"github.com/capkit/capkit/net/fetch"
	"github.com/capkit/capkit/run"
	"github.com/capkit/capkit/run/sandbox"
)

// registerRun registers run_shell, and run_test and run_build for the
// commands [test] and [build] declare, with capkit itself as the sandbox
// helper, the next command's container built ahead (killed when the host
// closes), the [run] network's proxy (its budget closed with the host),
// and the audit log told how each command was contained and of each
// request its proxy answered.
func registerRun(b *kernel.Builder, h *Host) error {
	helper, err := SandboxHelper()
	if err != nil {
		return err
	}
	rc := h.Config.RunOptions()
	proxy, closeNetwork, err := RunNetwork(context.Background(), h.Config, h.audit, h.Log)
	if err != nil {
		return err
	}
	h.OnClose(closeNetwork)
	rc.Network = proxy
	warm := sandbox.NewWarm()
	h.OnClose(func() error { warm.Close(); return nil })
	return run.RegisterTools(b, &run.ToolOptions{Config: rc, Helper: helper, Audit: h.audit, Warm: warm})
}

// RunNetwork is the proxy of [run] network: its HTTP policy (which must
// list its hosts), its budget opened, charged to network_task or, where
// a session does not say (capkit run, capkit test), to "cli"; nil with
// no network. Close releases the budget. audit receives one event per
// proxied request; log what the budget cannot return.
func RunNetwork(ctx context.Context, cfg *config.Config, audit, log *slog.Logger) (_ *egress.Proxy, close func() error, _ error) {
	n := cfg.RunNetwork()
	close = func() error { return nil }
	if n.Policy == "" {
		return nil, close, nil
	}
	p, err := fetch.LoadPolicy(ctx, n.Policy)
	if err != nil {
		return nil, close, err
	}
	if len(p.Hosts) == 0 {
		return nil, close, fault.New(fault.InvalidInput, "[run] network: the policy %s lists no \"hosts\"; a network policy for contained commands names the hosts they may reach", n.Policy)
	}
	opts := &egress.Options{Task: cmp.Or(n.Task, "cli"), Audit: audit}
	if n.BudgetPolicy != "" {
		bp, err := budget.LoadPolicy(ctx, n.BudgetPolicy)
		if err != nil {
			return nil, close, err
		}
		if opts.Budget, err = budget.Open(ctx, n.BudgetLocator, bp, &budget.Options{Log: log}); err != nil {
			return nil, close, err
		}
		close = opts.Budget.Close
	}
	proxy, err := egress.New(p, opts)
	if err != nil {
		close()
		return nil, func() error { return nil }, err
	}
	return proxy, close, nil
}

// SandboxHelper is the command that starts capkit as the sandbox helper
// (capkit with sandbox.HelperArg, which run/sandbox serves from its
// package init).
func SandboxHelper() ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fault.Wrap(fault.Unavailable, err, "cannot locate the capkit executable for the sandbox helper")
	}
	return []string{exe, sandbox.HelperArg}, nil
}
