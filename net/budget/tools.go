package budget

import (
	"context"
	"fmt"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// ToolOptions configure RegisterTools.
type ToolOptions struct {
	// Budget is the allowance budget_status reports on; without one the
	// tool is not registered.
	Budget *Budget
}

// StatusArgs are budget_status's arguments (none).
type StatusArgs struct{}

// ToolText renders the status for the model.
func (st Status) ToolText() string { return st.Text() }

var statusDescription = fmt.Sprintf(`Show the network budget that net_fetch is charged to: requests and bytes used in the current window and the allowance, when the window ends, when the next request may be admitted (minimum spacing), any cooldown after an upstream refusal (429, 503 with Retry-After) and whether it waits for an operator, and reservations still open. Lists at most %d tasks and open reservations. Read-only.
Example: {}`, limits.BudgetStatusMaxTasks)

// RegisterTools registers budget_status (effect budget_read, deferred)
// when opts carries a budget.
func RegisterTools(b *kernel.Builder, opts *ToolOptions) error {
	if opts == nil || opts.Budget == nil {
		return nil
	}
	bud := opts.Budget
	return kernel.AddTool(b,
		kernel.Policy{Name: "budget_status", MaxInputBytes: limits.KiB},
		kernel.Meta{Effect: capability.BudgetRead, Title: "Network budget status", Summary: "Show the network budget's use, window, spacing and cooldown.", Description: statusDescription},
		func(ctx context.Context, _ *kernel.Call, _ StatusArgs) (Status, error) {
			st, err := bud.Status(ctx)
			if err != nil {
				return Status{}, err
			}
			return *st, nil
		})
}
