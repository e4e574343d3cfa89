package budget

import (
	"context"
	"database/sql"
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

// loadTask reads a task's row; a task never seen has zero counters.
func (s *store) loadTask(ctx context.Context, t *sql.Tx, task string) (*TaskState, error) {
	ts := TaskState{Task: task}
	err := s.queryRow(ctx, t, `SELECT win_seq, win_requests, win_bytes, total_requests, total_bytes FROM budget_task WHERE task = ?`, task).
		Scan(&ts.WindowSeq, &ts.WindowRequests, &ts.WindowBytes, &ts.TotalRequests, &ts.TotalBytes)
	if err == sql.ErrNoRows {
		return &ts, nil
	}
	return &ts, err
}

func (s *store) saveTask(ctx context.Context, t *sql.Tx, ts *TaskState) error {
	return s.exec(ctx, t, `INSERT INTO budget_task (task, win_seq, win_requests, win_bytes, total_requests, total_bytes)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (task) DO UPDATE SET win_seq = excluded.win_seq,
		win_requests = excluded.win_requests, win_bytes = excluded.win_bytes,
		total_requests = excluded.total_requests, total_bytes = excluded.total_bytes`,
		ts.Task, ts.WindowSeq, ts.WindowRequests, ts.WindowBytes, ts.TotalRequests, ts.TotalBytes)
}
