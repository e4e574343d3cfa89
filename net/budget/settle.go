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
//
// What returns before it is durable: the settlement of a reservation this
// Budget admitted (and remembers: at most limits.BudgetMaxTracked
// unsettled ones, past which Options.Log is told), without an upstream
// refusal, is checked (once, and at most what was reserved), queued and
// written by this Budget's next transaction, within Options.SettleDelay,
// or by Flush or Close. Until it
// is written other processes see the reservation open and its bytes
// charged; if this process dies first, they stay charged in full. A
// settlement that starts a cooldown, and one of a reservation this Budget
// does not know (another process's, an operator's), is durable when
// Settle returns.
func (b *Budget) Settle(ctx context.Context, id string, used int64, out Outcome) error {
	if used < 0 {
		return fault.New(fault.InvalidInput, "budget: settlement of %d bytes: the count cannot be negative; the charge stays", used)
	}
	record := func(ctx context.Context, bs *batchState) error {
		res, err := bs.q.ExecContext(ctx, bs.s.d.rebind(`UPDATE budget_reservation SET used = ? WHERE id = ? AND used IS NULL AND bytes >= ?`), used, id, used)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		return b.settleRefusal(ctx, bs, id, used)
	}
	if !refusal(out.Status) {
		if ok, err := b.s.q.queue(id, used); ok {
			return err
		}
		return b.s.unlocked(ctx, record)
	}
	if err := b.s.q.check(id); err != nil {
		return err
	}
	err := b.s.locked(ctx, "", func(ctx context.Context, bs *batchState) error {
		if err := record(ctx, bs); err != nil {
			return err
		}
		b.cooldown(bs.g, out, b.clock())
		return nil
	})
	if err == nil {
		b.s.q.forget(id)
	}
	return err
}

// settleRefusal explains a settlement that matched no open reservation.
func (b *Budget) settleRefusal(ctx context.Context, bs *batchState, id string, used int64) error {
	var reserved int64
	var recorded sql.NullInt64
	err := bs.q.QueryRowContext(ctx, bs.s.d.rebind(`SELECT bytes, used FROM budget_reservation WHERE id = ?`), id).Scan(&reserved, &recorded)
	switch {
	case err == sql.ErrNoRows || err == nil && recorded.Valid:
		return fault.Wrap(fault.NotFound, ErrSettled, "budget: reservation %s is not open (unknown or already settled)", id)
	case err != nil:
		return err
	}
	return fault.New(fault.InvalidInput, "budget: settlement of %d bytes for reservation %s is more than the %d reserved; the charge stays", used, id, reserved)
}

// refusal reports whether an upstream status may start a cooldown.
func refusal(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
}

// cooldown applies an upstream refusal to g.
func (b *Budget) cooldown(g *GroupState, out Outcome, now Instant) {
	if !refusal(out.Status) {
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
	return b.s.locked(ctx, "", func(_ context.Context, bs *batchState) error {
		bs.g.Cooldown, bs.g.CooldownOperator, bs.g.CooldownReason = deadline{}, false, ""
		return nil
	})
}
