package host

import (
	"context"

	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/net/budget"
	"github.com/capkit/capkit/net/fetch"
)

// registerNet registers net_fetch when [net] names an HTTP policy, and
// budget_status when it names a budget too (opened now, closed with the
// host).
func registerNet(b *kernel.Builder, h *Host) error {
	n := h.Config.Net
	if n.HTTPPolicy == "" {
		return nil
	}
	ctx := context.Background()
	p, err := fetch.LoadPolicy(ctx, n.HTTPPolicy)
	if err != nil {
		return err
	}
	opts := &fetch.Options{Task: n.Task}
	if n.BudgetPolicy != "" {
		bp, err := budget.LoadPolicy(ctx, n.BudgetPolicy)
		if err != nil {
			return err
		}
		bud, err := budget.Open(ctx, n.BudgetLocator(), bp, &budget.Options{Log: h.Log})
		if err != nil {
			return err
		}
		h.OnClose(bud.Close)
		h.netBudget.Store(bud)
		opts.Budget = bud
		if err := budget.RegisterTools(b, &budget.ToolOptions{Budget: bud}); err != nil {
			return err
		}
	}
	return fetch.RegisterTools(b, &fetch.ToolOptions{Policy: p, Fetch: opts})
}
