package budget

import (
	"context"
	"time"
	"unicode/utf8"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/net/internal/policyjson"
)

// Policy is a reviewed BudgetPolicy: one upstream allowance (a group)
// shared by every task that names it, counted in fixed windows.
type Policy struct {
	// Format must be 1.
	Format int `json:"format"`
	// Group names the allowance; a root holds exactly one group.
	Group string `json:"group"`
	// WindowSeconds is the length of a counting window.
	WindowSeconds int64 `json:"window_seconds"`
	// WindowRequests and WindowBytes are the group's allowance per window.
	WindowRequests int64 `json:"window_requests"`
	WindowBytes    int64 `json:"window_bytes"`
	// TaskRequests and TaskBytes bound one task's share of a window; zero
	// means the group's allowance.
	TaskRequests int64 `json:"task_requests,omitzero"`
	TaskBytes    int64 `json:"task_bytes,omitzero"`
	// MinIntervalSeconds is the least time between two admissions of the
	// group.
	MinIntervalSeconds int64 `json:"min_interval_seconds,omitzero"`
}

// ParsePolicy reads a budget policy document strictly (unknown fields,
// duplicate keys and wrong types are refused with line and column).
func ParsePolicy(ctx context.Context, data []byte) (*Policy, error) {
	var p Policy
	if err := policyjson.Decode(ctx, "budget policy", data, &p, &p.Format); err != nil {
		return nil, err
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	return &p, nil
}

// LoadPolicy reads the budget policy file at path.
func LoadPolicy(ctx context.Context, path string) (*Policy, error) {
	var p Policy
	if err := policyjson.Load(ctx, "budget policy", path, &p, &p.Format); err != nil {
		return nil, err
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	return &p, nil
}

func between(what string, v, lo, hi int64) error {
	if v < lo || v > hi {
		return fault.New(fault.InvalidInput, "budget policy: %q must be between %d and %d (got %d)", what, lo, hi, v)
	}
	return nil
}

func (p *Policy) check() error {
	if err := checkName("budget policy: group", p.Group); err != nil {
		return err
	}
	if p.TaskRequests == 0 {
		p.TaskRequests = p.WindowRequests
	}
	if p.TaskBytes == 0 {
		p.TaskBytes = p.WindowBytes
	}
	for _, err := range []error{
		between("window_seconds", p.WindowSeconds, 1, int64(limits.BudgetMaxWindow/time.Second)),
		between("window_requests", p.WindowRequests, 1, limits.BudgetMaxWindowRequests),
		between("window_bytes", p.WindowBytes, 1, limits.BudgetMaxWindowBytes),
		between("task_requests", p.TaskRequests, 1, p.WindowRequests),
		between("task_bytes", p.TaskBytes, 1, p.WindowBytes),
		between("min_interval_seconds", p.MinIntervalSeconds, 0, int64(limits.BudgetMaxMinInterval/time.Second)),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// checkName refuses an empty, over-long or non-UTF-8 identity.
func checkName(what, s string) error {
	if s == "" || len(s) > limits.BudgetMaxNameBytes || !utf8.ValidString(s) {
		return fault.New(fault.InvalidInput, "%s must be 1 to %d bytes of UTF-8", what, limits.BudgetMaxNameBytes)
	}
	return nil
}

func (p *Policy) window() time.Duration { return time.Duration(p.WindowSeconds) * time.Second }
func (p *Policy) interval() time.Duration {
	return time.Duration(p.MinIntervalSeconds) * time.Second
}
