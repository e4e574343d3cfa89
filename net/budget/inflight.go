package budget

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/capkit/capkit/limits"
)

// A request refused for bytes of its window may be refused only because
// reservations in flight hold them: a fetch reserves the most its
// response may bring before the response is known, and settles to what
// it used seconds later. Such a refusal says so and gives, as the time to
// retry, when enough of those reservations are due to be settled (their
// requests' deadlines, earliest first) instead of the window's end. It is
// a hint like every retry time: a reservation settled in full, or never,
// gives nothing back, and the retry is refused again (then for the
// window's end, once its deadline has passed).

// flight is an open reservation of the current window: its bytes and its
// request's deadline.
type flight struct {
	bytes int64
	due   deadline
}

// bytesDeferred is the deferral of a request need bytes short of the
// allowance (the task's, when task is set; the group's otherwise):
// until the reservations in flight that hold need bytes are due, if they
// are due before the window ends (wait), else until then.
func (bs *batchState) bytesDeferred(ctx context.Context, task string, need int64, wait time.Duration, now Instant, format string, args ...any) error {
	fl, err := bs.inFlight(ctx, task)
	if err != nil {
		return err
	}
	msg := fmt.Sprintf(format, args...)
	due, n, held, ok := refill(fl, need, now)
	if !ok || due >= wait {
		return deferred(wait, "%s", msg)
	}
	return deferred(due, "%s; %d bytes are reserved by requests in flight (%d), which give back what they do not use when they are settled, by their deadlines", msg, held, n)
}

// refill is how long until the reservations in flight that hold need
// bytes are due (those whose deadline is nearest), how many they are and
// what they hold; false when those with a deadline yet to come hold less.
func refill(fl []flight, need int64, now Instant) (time.Duration, int, int64, bool) {
	fl = slices.DeleteFunc(fl, func(f flight) bool { return f.due.remaining(now) == 0 })
	slices.SortFunc(fl, func(a, b flight) int { return cmp.Compare(a.due.remaining(now), b.due.remaining(now)) })
	var held int64
	for i, f := range fl {
		held += f.bytes
		if held >= need {
			return f.due.remaining(now), i + 1, held, true
		}
	}
	return 0, 0, 0, false
}

// inFlight reads the open reservations of the current window with a
// deadline (of task, when set), nearest deadline first and at most
// limits.BudgetMaxInFlightScan of them, with those this batch admitted
// and has not written yet.
func (bs *batchState) inFlight(ctx context.Context, task string) ([]flight, error) {
	q := `SELECT bytes, due_wall, due_boot_id, due_boot FROM budget_reservation WHERE used IS NULL AND win_seq = ? AND due_wall > 0`
	args := []any{bs.g.WindowSeq}
	if task != "" {
		q += ` AND task = ?`
		args = append(args, task)
	}
	args = append(args, limits.BudgetMaxInFlightScan)
	rows, err := bs.t.QueryContext(ctx, bs.s.d.rebind(q+` ORDER BY due_wall, id LIMIT ?`), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []flight
	for rows.Next() {
		var f flight
		if err := rows.Scan(&f.bytes, &f.due.Wall, &f.due.BootID, &f.due.Boot); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	for _, r := range bs.inserts {
		if r.seq == bs.g.WindowSeq && r.due.set() && (task == "" || r.task == task) {
			out = append(out, flight{bytes: r.bytes, due: r.due})
		}
	}
	return out, rows.Err()
}
