package host

import (
	"context"
	"time"

	"github.com/capkit/capkit/audit/exporter"
)

// Budget is one budget's use in its current window, as an operator sees
// it (the dashboard, telemetry).
type Budget struct {
	// Group names the budget ([net]'s budget group).
	Group string `json:"group"`
	// Unit is what is counted: "requests" or "bytes".
	Unit  string `json:"unit"`
	Used  int64  `json:"used"`
	Limit int64  `json:"limit"`
	// WindowStart and WindowSeconds are the current window's start and
	// length; Remaining is the time left in it.
	WindowStart   time.Time `json:"window_start"`
	WindowSeconds int64     `json:"window_seconds"`
	Remaining     float64   `json:"window_remaining_seconds"`
	// State is the group's: active, sealed or transferred.
	State string `json:"state"`
}

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

// budgetUse is Budgets as the exporter's gauges take them.
func (h *Host) budgetUse(ctx context.Context) []exporter.Budget {
	var out []exporter.Budget
	for _, b := range h.Budgets(ctx) {
		out = append(out, exporter.Budget{Group: b.Group, Unit: b.Unit, Used: b.Used, Limit: b.Limit})
	}
	return out
}
