package budget

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/capkit/capkit/limits"
)

// Status is a root's accounting as an operator sees it.
type Status struct {
	Group string `json:"group"`
	// State is active, sealed (a quota snapshot was taken) or transferred.
	State         string `json:"state"`
	TransferredTo string `json:"transferred_to,omitempty"`
	// Snapshot is the quota snapshot that sealed this root or that it was
	// created from.
	Snapshot string `json:"snapshot,omitempty"`
	Policy   Policy `json:"policy"`

	WindowSeq            int64     `json:"window_seq"`
	WindowStart          time.Time `json:"window_start"`
	WindowRemainingSecs  float64   `json:"window_remaining_seconds"`
	WindowRequests       int64     `json:"window_requests"`
	WindowBytes          int64     `json:"window_bytes"`
	NextAdmissionSecs    float64   `json:"next_admission_seconds"`
	CooldownRemainingSec float64   `json:"cooldown_remaining_seconds"`
	// CooldownOperator is a cooldown only an operator can end.
	CooldownOperator bool   `json:"cooldown_operator"`
	CooldownReason   string `json:"cooldown_reason,omitempty"`
	TotalRequests    int64  `json:"total_requests"`
	TotalBytes       int64  `json:"total_bytes"`
	// Leases are slices of the window set aside for hosts (PostgreSQL):
	// LeasedRequests and LeasedBytes are their unused parts in this
	// window, charged to the group until returned and not counted in
	// WindowRequests and WindowBytes.
	Leases         int64 `json:"leases"`
	LeasedRequests int64 `json:"leased_requests"`
	LeasedBytes    int64 `json:"leased_bytes"`

	// Tasks are the tasks with a charge in the current window, at most
	// limits.BudgetStatusMaxTasks; MoreTasks counts the rest.
	Tasks     []TaskState `json:"tasks"`
	MoreTasks int64       `json:"more_tasks"`
	// Open are reservations never settled: their bytes stay charged.
	Open     []OpenReservation `json:"open_reservations"`
	MoreOpen int64             `json:"more_open_reservations"`
}

// OpenReservation is a reservation whose outcome is not yet known.
type OpenReservation struct {
	ID      string    `json:"id"`
	Task    string    `json:"task"`
	Bytes   int64     `json:"bytes"`
	Created time.Time `json:"created"`
}

// Status reads the root's accounting in one transaction.
func (b *Budget) Status(ctx context.Context) (*Status, error) {
	var st *Status
	err := b.s.locked(ctx, "", func(ctx context.Context, bs *batchState) error {
		if err := bs.flush(ctx); err != nil {
			return err
		}
		g, t := bs.g, bs.t
		now := b.clock()
		st = &Status{
			Group: b.policy.Group, State: g.State, TransferredTo: g.TransferredTo, Snapshot: g.SnapshotID, Policy: b.policy,
			WindowSeq: g.WindowSeq, WindowStart: time.Unix(0, g.WindowStart).UTC(),
			WindowRemainingSecs: g.WindowEnd.remaining(now).Seconds(),
			WindowRequests:      g.WindowRequests, WindowBytes: g.WindowBytes,
			NextAdmissionSecs:    g.Next.remaining(now).Seconds(),
			CooldownRemainingSec: g.Cooldown.remaining(now).Seconds(),
			CooldownOperator:     g.CooldownOperator, CooldownReason: g.CooldownReason,
			TotalRequests: g.TotalRequests, TotalBytes: g.TotalBytes,
		}
		u, err := b.s.unusedLeases(ctx, t, g.WindowSeq)
		if err != nil {
			return err
		}
		st.Leases, st.LeasedRequests, st.LeasedBytes = u.leases, u.windowRequests, u.windowBytes
		st.WindowRequests -= u.windowRequests
		st.WindowBytes -= u.windowBytes
		st.TotalRequests -= u.requests
		st.TotalBytes -= u.bytes
		if g.WindowEnd.remaining(now) == 0 {
			st.WindowRequests, st.WindowBytes, st.LeasedRequests, st.LeasedBytes = 0, 0, 0, 0
		}
		if st.Tasks, st.MoreTasks, err = b.s.tasks(ctx, t, g.WindowSeq, limits.BudgetStatusMaxTasks); err != nil {
			return err
		}
		st.Open, st.MoreOpen, err = b.s.openReservations(ctx, t, limits.BudgetStatusMaxTasks)
		return err
	})
	return st, err
}

// tasks lists up to max tasks charged in window seq (every task when seq
// is 0), and how many more there are.
func (s *store) tasks(ctx context.Context, t *sql.Tx, seq int64, max int) ([]TaskState, int64, error) {
	where := ""
	args := []any{}
	if seq != 0 {
		where, args = ` WHERE win_seq = ?`, append(args, seq)
	}
	rows, err := t.QueryContext(ctx, s.d.rebind(`SELECT task, win_seq, win_requests, win_bytes, total_requests, total_bytes FROM budget_task`+where+` ORDER BY task LIMIT ?`), append(args, max+1)...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out := []TaskState{}
	for rows.Next() {
		var ts TaskState
		if err := rows.Scan(&ts.Task, &ts.WindowSeq, &ts.WindowRequests, &ts.WindowBytes, &ts.TotalRequests, &ts.TotalBytes); err != nil {
			return nil, 0, err
		}
		out = append(out, ts)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	if len(out) <= max {
		return out, 0, nil
	}
	var n int64
	err = s.queryRow(ctx, t, `SELECT COUNT(*) FROM budget_task`+where, args...).Scan(&n)
	return out[:max], n - int64(max), err
}

func (s *store) openReservations(ctx context.Context, t *sql.Tx, max int) ([]OpenReservation, int64, error) {
	rows, err := t.QueryContext(ctx, s.d.rebind(`SELECT id, task, bytes, created FROM budget_reservation WHERE used IS NULL ORDER BY created, id LIMIT ?`), max+1)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out := []OpenReservation{}
	for rows.Next() {
		var r OpenReservation
		var created int64
		if err := rows.Scan(&r.ID, &r.Task, &r.Bytes, &created); err != nil {
			return nil, 0, err
		}
		r.Created = time.Unix(0, created).UTC()
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	if len(out) <= max {
		return out, 0, nil
	}
	var n int64
	err = s.queryRow(ctx, t, `SELECT COUNT(*) FROM budget_reservation WHERE used IS NULL`).Scan(&n)
	return out[:max], n - int64(max), err
}

// Text renders a status for a person.
func (st *Status) Text() string {
	var b strings.Builder
	p := st.Policy
	fmt.Fprintf(&b, "group %s (%s)", st.Group, st.State)
	if st.TransferredTo != "" {
		fmt.Fprintf(&b, ", transferred to %s", st.TransferredTo)
	}
	fmt.Fprintf(&b, "\nwindow %d: %d/%d requests, %d/%d bytes, %.0fs left of %ds\n",
		st.WindowSeq, st.WindowRequests, p.WindowRequests, st.WindowBytes, p.WindowBytes, st.WindowRemainingSecs, p.WindowSeconds)
	if st.NextAdmissionSecs > 0 {
		fmt.Fprintf(&b, "next admission in %.0fs (min interval %ds)\n", st.NextAdmissionSecs, p.MinIntervalSeconds)
	}
	switch {
	case st.CooldownOperator:
		fmt.Fprintf(&b, "BLOCKED until an operator clears the cooldown: %s\n", st.CooldownReason)
	case st.CooldownRemainingSec > 0:
		fmt.Fprintf(&b, "cooling down for %.0fs: %s\n", st.CooldownRemainingSec, st.CooldownReason)
	}
	if st.Leases > 0 {
		fmt.Fprintf(&b, "%d leases outstanding: %d requests, %d bytes set aside, unused\n", st.Leases, st.LeasedRequests, st.LeasedBytes)
	}
	fmt.Fprintf(&b, "total: %d requests, %d bytes\n", st.TotalRequests, st.TotalBytes)
	for _, r := range st.Open {
		fmt.Fprintf(&b, "open reservation %s: task %s, %d bytes charged since %s\n", r.ID, r.Task, r.Bytes, r.Created.Format(time.RFC3339))
	}
	if st.MoreOpen > 0 {
		fmt.Fprintf(&b, "... and %d more open reservations\n", st.MoreOpen)
	}
	return strings.TrimRight(b.String(), "\n")
}
