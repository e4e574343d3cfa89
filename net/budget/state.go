package budget

import (
	"context"
	"database/sql"
	"strings"
)

// GroupState is a group's durable accounting: the current window, its
// counters, the spacing and cooldown deadlines and the totals since the
// root was created.
type GroupState struct {
	WindowSeq      int64    `json:"window_seq"`
	WindowStart    int64    `json:"window_start_unix_nano"`
	WindowEnd      deadline `json:"window_end"`
	WindowRequests int64    `json:"window_requests"`
	WindowBytes    int64    `json:"window_bytes"`
	Next           deadline `json:"next_admission"`
	Cooldown       deadline `json:"cooldown"`
	// CooldownOperator marks a cooldown of unknown length: it holds until
	// an operator clears it.
	CooldownOperator bool   `json:"cooldown_operator,omitzero"`
	CooldownReason   string `json:"cooldown_reason,omitempty"`
	TotalRequests    int64  `json:"total_requests"`
	TotalBytes       int64  `json:"total_bytes"`
	// State is active, sealed (a snapshot was taken) or transferred.
	State         string `json:"-"`
	SnapshotID    string `json:"-"`
	TransferredTo string `json:"-"`
}

// The states of a root.
const (
	stateActive      = "active"
	stateSealed      = "sealed"
	stateTransferred = "transferred"
)

// TaskState is one task's share of the current window and its totals.
type TaskState struct {
	Task           string `json:"task"`
	WindowSeq      int64  `json:"window_seq"`
	WindowRequests int64  `json:"window_requests"`
	WindowBytes    int64  `json:"window_bytes"`
	TotalRequests  int64  `json:"total_requests"`
	TotalBytes     int64  `json:"total_bytes"`
}

const groupCols = `win_seq, win_start, win_end_wall, win_end_boot_id, win_end_boot, win_requests, win_bytes,
	next_wall, next_boot_id, next_boot, cool_wall, cool_boot_id, cool_boot, cool_operator, cool_reason,
	total_requests, total_bytes, state, snapshot_id, transferred_to`

func (g *GroupState) fields() []any {
	return []any{&g.WindowSeq, &g.WindowStart, &g.WindowEnd.Wall, &g.WindowEnd.BootID, &g.WindowEnd.Boot,
		&g.WindowRequests, &g.WindowBytes, &g.Next.Wall, &g.Next.BootID, &g.Next.Boot,
		&g.Cooldown.Wall, &g.Cooldown.BootID, &g.Cooldown.Boot, &g.CooldownOperator, &g.CooldownReason,
		&g.TotalRequests, &g.TotalBytes, &g.State, &g.SnapshotID, &g.TransferredTo}
}

func (g *GroupState) values() []any {
	f := g.fields()
	out := make([]any, len(f))
	for i, p := range f {
		switch v := p.(type) {
		case *int64:
			out[i] = *v
		case *string:
			out[i] = *v
		case *bool:
			out[i] = boolInt(*v)
		}
	}
	return out
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// loadGroup reads the group row, locked for the transaction on PostgreSQL.
func (s *store) loadGroup(ctx context.Context, t *sql.Tx) (*GroupState, error) {
	var g GroupState
	var op int64
	f := g.fields()
	f[13] = &op
	if err := s.queryRow(ctx, t, `SELECT `+groupCols+` FROM budget_group WHERE id = 1`+s.d.forUpdate).Scan(f...); err != nil {
		return nil, err
	}
	g.CooldownOperator = op != 0
	return &g, nil
}

const groupSet = `win_seq=?, win_start=?, win_end_wall=?, win_end_boot_id=?, win_end_boot=?, win_requests=?, win_bytes=?,
	next_wall=?, next_boot_id=?, next_boot=?, cool_wall=?, cool_boot_id=?, cool_boot=?, cool_operator=?, cool_reason=?,
	total_requests=?, total_bytes=?, state=?, snapshot_id=?, transferred_to=?`

func (s *store) saveGroup(ctx context.Context, t *sql.Tx, g *GroupState) error {
	return s.exec(ctx, t, `UPDATE budget_group SET `+groupSet+` WHERE id = 1`, g.values()...)
}

func (s *store) insertGroup(ctx context.Context, t *sql.Tx, g *GroupState) error {
	return s.exec(ctx, t, `INSERT INTO budget_group (id, `+groupCols+`) VALUES (1`+repeatArgs(len(g.fields()))+`)`, g.values()...)
}

func repeatArgs(n int) string {
	b := make([]byte, 0, 2*n)
	for range n {
		b = append(b, ",?"...)
	}
	return string(b)
}

// loadTasks reads the rows of the named tasks; a task never seen has zero
// counters.
func (s *store) loadTasks(ctx context.Context, t *sql.Tx, names []string) (map[string]*TaskState, error) {
	out := make(map[string]*TaskState, len(names))
	if len(names) == 0 {
		return out, nil
	}
	args := make([]any, len(names))
	for i, n := range names {
		args[i] = n
		out[n] = &TaskState{Task: n}
	}
	rows, err := t.QueryContext(ctx, s.d.rebind(`SELECT task, win_seq, win_requests, win_bytes, total_requests, total_bytes FROM budget_task WHERE task IN (?`+repeatArgs(len(names)-1)+`)`), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var ts TaskState
		if err := rows.Scan(&ts.Task, &ts.WindowSeq, &ts.WindowRequests, &ts.WindowBytes, &ts.TotalRequests, &ts.TotalBytes); err != nil {
			return nil, err
		}
		out[ts.Task] = &ts
	}
	return out, rows.Err()
}

// saveTasks writes task rows in one statement.
func (s *store) saveTasks(ctx context.Context, t *sql.Tx, tasks []*TaskState) error {
	if len(tasks) == 0 {
		return nil
	}
	var b strings.Builder
	args := make([]any, 0, 6*len(tasks))
	b.WriteString(`INSERT INTO budget_task (task, win_seq, win_requests, win_bytes, total_requests, total_bytes) VALUES `)
	for i, ts := range tasks {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?, ?, ?)")
		args = append(args, ts.Task, ts.WindowSeq, ts.WindowRequests, ts.WindowBytes, ts.TotalRequests, ts.TotalBytes)
	}
	b.WriteString(` ON CONFLICT (task) DO UPDATE SET win_seq = excluded.win_seq,
		win_requests = excluded.win_requests, win_bytes = excluded.win_bytes,
		total_requests = excluded.total_requests, total_bytes = excluded.total_bytes`)
	return s.exec(ctx, t, b.String(), args...)
}

// newReservation is a reservation row to insert.
type newReservation struct {
	id, task            string
	bytes, seq, created int64
	due                 deadline
}

// insertReservations writes reservation rows in one statement.
func (s *store) insertReservations(ctx context.Context, t *sql.Tx, rs []newReservation) error {
	if len(rs) == 0 {
		return nil
	}
	var b strings.Builder
	args := make([]any, 0, 8*len(rs))
	b.WriteString(`INSERT INTO budget_reservation (id, task, bytes, win_seq, created, due_wall, due_boot_id, due_boot) VALUES `)
	for i, r := range rs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?, ?, ?, ?, ?)")
		args = append(args, r.id, r.task, r.bytes, r.seq, r.created, r.due.Wall, r.due.BootID, r.due.Boot)
	}
	return s.exec(ctx, t, b.String(), args...)
}
