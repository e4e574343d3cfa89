package host

import (
	"context"

	"github.com/capkit/capkit/audit/exporter"
	"github.com/capkit/capkit/gateway"
	"github.com/capkit/capkit/serve/dashboard"
)

// Budget is one budget's use in its current window, as an operator sees
// it (the dashboard, telemetry).
type Budget = dashboard.Budget

// Budgets are the host's budgets and their use now: [net]'s, when it has
// one. A budget that cannot be read is left out.
func (h *Host) Budgets(ctx context.Context) []Budget {
	bud := h.netBudget.Load()
	if bud == nil {
		return nil
	}
	st, err := bud.Status(ctx)
	if err != nil {
		return nil
	}
	p := st.Policy
	row := func(unit string, used, limit int64) Budget {
		return Budget{Group: st.Group, Unit: unit, Used: used, Limit: limit, WindowStart: st.WindowStart,
			WindowSeconds: p.WindowSeconds, Remaining: st.WindowRemainingSecs, State: st.State}
	}
	return []Budget{row("requests", st.WindowRequests+st.LeasedRequests, p.WindowRequests), row("bytes", st.WindowBytes+st.LeasedBytes, p.WindowBytes)}
}

// UpstreamStatus lists the upstream tools awaiting review or withdrawn
// (gateway.Gateway.Status); none without upstreams.
func (h *Host) UpstreamStatus() []gateway.ToolStatus {
	if g := h.gateway.Load(); g != nil {
		return g.Status()
	}
	return nil
}

// budgetUse is Budgets as the exporter's gauges take them.
func (h *Host) budgetUse(ctx context.Context) []exporter.Budget {
	var out []exporter.Budget
	for _, b := range h.Budgets(ctx) {
		out = append(out, exporter.Budget{Group: b.Group, Unit: b.Unit, Used: b.Used, Limit: b.Limit})
	}
	return out
}
