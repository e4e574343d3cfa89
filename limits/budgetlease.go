package limits

import "time"

// Leases and deferred settlements of net/budget.
const (
	// BudgetLeaseMaxRequests bounds the requests one lease sets aside for
	// its host; a lease takes at most half of what the window has left.
	BudgetLeaseMaxRequests = 16384
	// BudgetLeaseTTL is how long a lease serves its host before it is
	// returned and another taken; an expired lease of a host that died is
	// taken back by the next transaction that holds the group row.
	BudgetLeaseTTL = 10 * time.Second
	// BudgetSettleDelay is how long a deferred settlement waits for a
	// transaction of its process to ride on before it is written alone.
	BudgetSettleDelay = 50 * time.Millisecond
	// BudgetMaxTracked bounds the reservations one open budget remembers
	// for deferred settlement; beyond it a settlement is written before
	// Settle returns.
	BudgetMaxTracked = 1 << 16
)

// BudgetMaxConns bounds the PostgreSQL connections one open budget uses.
const BudgetMaxConns = 16
