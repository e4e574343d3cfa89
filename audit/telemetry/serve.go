package telemetry

import (
	"bufio"
	"context"
	"io"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/capkit/capkit/audit"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/store/journal"
)

// The exporter process (cmd/capkit-otel) reads what audit/exporter
// writes to its standard input, one line each:
//
//	e{...}    an audit event, in canonical JSON
//	b[...]    the budgets' use now: [{"group":..,"unit":..,"used":..,"limit":..}]
//	s{...}    the host's counts: {"dropped":N}, the calls it dropped before
//	          they reached the exporter since it started
//
// until the input ends, then exports what is pending and returns.

// budgetLine is one budget of a "b" line.
type budgetLine struct {
	Group string `json:"group"`
	Unit  string `json:"unit"`
	Used  int64  `json:"used"`
	Limit int64  `json:"limit"`
}

// stats is an "s" line.
type stats struct {
	Dropped int64 `json:"dropped"`
}

// Serve exports the events read from r until it ends or ctx does, then
// flushes within limits.TelemetryExportTimeout. A line it cannot read
// is skipped.
func Serve(ctx context.Context, r io.Reader, opts Options) error {
	var budgets struct {
		ch   chan []BudgetUse
		last []BudgetUse
	}
	budgets.ch = make(chan []BudgetUse, 1)
	opts.Budgets = func(context.Context) []BudgetUse {
		select {
		case b := <-budgets.ch:
			budgets.last = b
		default:
		}
		return budgets.last
	}
	s, err := New(opts)
	if err != nil {
		return err
	}
	br := bufio.NewReaderSize(r, journal.MaxLine(limits.AuditMaxEventBytes))
	for ctx.Err() == nil {
		line, err := br.ReadSlice('\n')
		if len(line) > 1 && line[len(line)-1] == '\n' {
			switch line[0] {
			case 'e':
				if e, derr := audit.Decode(line[1 : len(line)-1]); derr == nil {
					s.Write(e)
				}
			case 'b':
				var bl []budgetLine
				if jsonv2.Unmarshal(line[1:len(line)-1], &bl) == nil {
					use := make([]BudgetUse, len(bl))
					for i, b := range bl {
						use[i] = BudgetUse(b)
					}
					select {
					case <-budgets.ch:
					default:
					}
					budgets.ch <- use
				}
			case 's':
				var st stats
				if jsonv2.Unmarshal(line[1:len(line)-1], &st) == nil {
					s.SetEventsDropped(st.Dropped)
				}
			}
		}
		if err == bufio.ErrBufferFull {
			for err == bufio.ErrBufferFull { // a line past any event: skipped whole
				_, err = br.ReadSlice('\n')
			}
			continue
		}
		if err != nil {
			break
		}
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), limits.TelemetryExportTimeout)
	defer cancel()
	if err := s.Close(cctx); err != nil {
		return fault.Wrap(fault.Unavailable, err, "telemetry")
	}
	return nil
}
