package budget

import (
	"context"
	"database/sql"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// Outcome is what became of an admitted request, for cooldowns.
type Outcome struct {
	// Status is the HTTP status received, 0 if none.
	Status int
	// RetryAfter is the response's Retry-After header, as sent.
	RetryAfter string
}

// Settle records that reservation id used used bytes (at most what it
// reserved): the difference is returned to the window it was charged in,
// if that window is still current. A 429, or a 503 with Retry-After, starts
// a cooldown: timed when Retry-After gives at most limits.BudgetMaxCooldown,
// otherwise (429 without a readable Retry-After) until an operator clears
// it. A cooldown is only ever lengthened.
func (b *Budget) Settle(ctx context.Context, id string, used int64, out Outcome) error {
	return b.s.tx(ctx, func(t *sql.Tx) error {
		var task string
		var reserved, seq int64
		err := b.s.queryRow(ctx, t, `SELECT task, bytes, win_seq FROM budget_reservation WHERE id = ?`, id).Scan(&task, &reserved, &seq)
		if err == sql.ErrNoRows {
			return fault.Wrap(fault.NotFound, ErrSettled, "budget: reservation %s is not open (unknown or already settled)", id)
		}
		if err != nil {
			return err
		}
		if used < 0 || used > reserved {
			return fault.New(fault.InvalidInput, "budget: settlement of %d bytes for reservation %s outside 0..%d reserved; the charge stays", used, id, reserved)
		}
		g, err := b.s.loadGroup(ctx, t)
		if err != nil {
			return err
		}
		ts, err := b.s.loadTask(ctx, t, task)
		if err != nil {
			return err
		}
		refund := reserved - used
		g.TotalBytes -= refund
		ts.TotalBytes -= refund
		if seq == g.WindowSeq {
			g.WindowBytes -= refund
		}
		if seq == ts.WindowSeq {
			ts.WindowBytes -= refund
		}
		b.cooldown(g, out, b.clock())
		if err := b.s.saveGroup(ctx, t, g); err != nil {
			return err
		}
		if err := b.s.saveTask(ctx, t, ts); err != nil {
			return err
		}
		return b.s.exec(ctx, t, `DELETE FROM budget_reservation WHERE id = ?`, id)
	})
}

// cooldown applies an upstream refusal to g.
func (b *Budget) cooldown(g *GroupState, out Outcome, now Instant) {
	if out.Status != http.StatusTooManyRequests && out.Status != http.StatusServiceUnavailable {
		return
	}
	d, ok := parseRetryAfter(out.RetryAfter, now.Wall)
	reason := "HTTP " + strconv.Itoa(out.Status)
	switch {
	case ok && d <= limits.BudgetMaxCooldown:
		g.Cooldown = later(now, g.Cooldown, after(now, d))
		g.CooldownReason = reason + " with Retry-After " + strings.TrimSpace(out.RetryAfter)
	case out.Status == http.StatusTooManyRequests || ok:
		g.CooldownOperator = true
		g.CooldownReason = reason + " without a Retry-After of at most " + limits.BudgetMaxCooldown.String()
	}
}

// parseRetryAfter reads delta-seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if strings.Trim(v, "0123456789") == "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n > int64(limits.BudgetMaxCooldown/time.Second) {
			return limits.BudgetMaxCooldown + time.Second, true // longer than any timed cooldown
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// ClearCooldown ends the group's cooldown, timed or operator-held: the
// operator's decision that the upstream accepts requests again.
func (b *Budget) ClearCooldown(ctx context.Context) error {
	return b.s.tx(ctx, func(t *sql.Tx) error {
		g, err := b.s.loadGroup(ctx, t)
		if err != nil {
			return err
		}
		g.Cooldown, g.CooldownOperator, g.CooldownReason = deadline{}, false, ""
		return b.s.saveGroup(ctx, t, g)
	})
}
