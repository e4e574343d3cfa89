package journal

import (
	"context"
	"fmt"
	"reflect"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/kernel/toolkit"
	"github.com/capkit/capkit/limits"
)

// ToolOptions configure the model-facing tools. A nil *ToolOptions is valid.
type ToolOptions struct {
	// Options bound the journals the tools use (Progress is ignored).
	Options Options
	// Timeout bounds one call; zero means the kernel's default.
	Timeout time.Duration
	// Protected are the paths no journal tool may create or append to
	// (the zero value: .git and capkit.toml in every root); the host
	// passes its set. Reading tools are checked too: every tool creates
	// the journal's lock file.
	Protected capability.Protected
}

// AppendArgs are journal_append's arguments.
type AppendArgs struct {
	Dir   string         `json:"dir,omitempty" jsonschema:"private directory holding the journal, inside a root granted journal_write; default: the first such root"`
	Name  string         `json:"name" jsonschema:"journal name: lower-case letters, digits, '.', '_' and '-'"`
	Event jsontext.Value `json:"event" jsonschema:"the event: any JSON value"`
}

// VerifyArgs are journal_verify's arguments.
type VerifyArgs struct {
	Dir  string `json:"dir,omitempty" jsonschema:"private directory holding the journal, inside a root granted journal_read; default: the first such root"`
	Name string `json:"name" jsonschema:"journal name"`
}

// ReadArgs are journal_read's arguments.
type ReadArgs struct {
	Dir   string `json:"dir,omitempty" jsonschema:"private directory holding the journal, inside a root granted journal_read; default: the first such root"`
	Name  string `json:"name" jsonschema:"journal name"`
	From  uint64 `json:"from,omitempty" jsonschema:"first record number to return; default 1"`
	Limit int    `json:"limit,omitempty" jsonschema:"most records to return (the description states the default and maximum)"`
}

// AppendResult is journal_append's result.
type AppendResult struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
}

// ReadResult is journal_read's result.
type ReadResult struct {
	Records []Record `json:"records"`
	// NextFrom, when set, is the record number the next window starts at:
	// the records read did not all fit the output bound.
	NextFrom uint64 `json:"next_from,omitzero"`
}

// ToolText is the result's JSON and, for a window, where it goes on.
func (r ReadResult) ToolText() string {
	data, err := jsonv2.Marshal(r, jsonv2.Deterministic(true))
	if err != nil {
		return err.Error()
	}
	if r.NextFrom == 0 || len(r.Records) == 0 {
		return string(data)
	}
	return fmt.Sprintf("%s\nrecords %d..%d shown: the next window is journal_read with from=%d", data, r.Records[0].Seq, r.NextFrom-1, r.NextFrom)
}

const maxReadRecords = limits.JournalMaxReadRecords

// RegisterTools registers journal_append (effect journal_write) and
// journal_verify and journal_read (effect journal_read), all deferred. The
// directory is resolved in the scope of the roots the session's
// capabilities grant the effect on (internal/scope), and neither of the
// journal's files may be a protected path. opts may be nil.
func RegisterTools(b *kernel.Builder, opts *ToolOptions) error {
	var o ToolOptions
	if opts != nil {
		o = *opts
	}
	o.Options.Progress = nil
	bounds := fmt.Sprintf("events of at most %s in canonical form, journals of at most %s", limits.Bytes(limits.JournalMaxEventBytes), limits.Bytes(limits.JournalMaxJournalBytes))
	for _, register := range []func(*kernel.Builder, ToolOptions, string) error{registerAppend, registerVerify, registerRead} {
		if err := register(b, o, bounds); err != nil {
			return err
		}
	}
	return nil
}

func registerAppend(b *kernel.Builder, o ToolOptions, bounds string) error {
	in, err := jsonschema.For[AppendArgs](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[jsontext.Value](): {Description: "any JSON value"},
	}})
	if err != nil {
		return err
	}
	out, err := jsonschema.For[AppendResult](nil)
	if err != nil {
		return err
	}
	return b.Register(kernel.Policy{Name: "journal_append", Timeout: o.Timeout, MaxInputBytes: limits.JournalMaxInputBytes + 4*limits.KiB},
		kernel.Meta{
			Effect:  capability.JournalWrite,
			Title:   "Append to journal",
			Summary: "Append one JSON event durably to a hash-chained journal",
			Description: `Appends one JSON event to the named journal as its next record and returns the record's number and hash once it is on disk. The journal is created by its first append. Records are hash-chained, so any later change is detected by journal_verify.
Refused: duplicate object keys, numbers that are not finite or more precise than a float64 (send those as strings), events nested deeper than ` + fmt.Sprint(limits.JournalMaxDepth) + ` levels. A journal whose last record is incomplete or corrupt refuses appends ("integrity") until an operator repairs it.
Bounds: ` + bounds + `.
Example: {"name": "deployments", "event": {"service": "api", "version": "1.4.2", "ok": true}}`,
		}, in, out, func(ctx context.Context, call *kernel.Call) (*kernel.Result, error) {
			var a AppendArgs
			if err := jsonv2.Unmarshal(call.Args, &a, jsonv2.RejectUnknownMembers(true)); err != nil {
				return nil, fault.New(fault.InvalidInput, "journal_append: %s", err.Error())
			}
			j, err := openTool(call, capability.JournalWrite, a.Dir, a.Name, o)
			if err != nil {
				return nil, err
			}
			defer j.Close()
			r, err := j.Append(ctx, a.Event)
			if err != nil {
				return nil, err
			}
			return kernel.Encode(AppendResult{Seq: r.Seq, Hash: r.Hash})
		})
}

func registerVerify(b *kernel.Builder, o ToolOptions, bounds string) error {
	return kernel.AddTool(b, kernel.Policy{Name: "journal_verify", Timeout: o.Timeout},
		kernel.Meta{
			Effect:  capability.JournalRead,
			Title:   "Verify journal",
			Summary: "Verify a journal's hash chain and report its first bad record",
			Description: `Checks every record of the named journal: framing, canonical events, numbering and hash chain. Returns the record count, the verified bytes and the last record's hash; a bad record or an incomplete last record fails with "integrity", naming the record number, line and byte offset.
Bounds: ` + bounds + `.
Example: {"name": "deployments"}`,
		}, func(ctx context.Context, call *kernel.Call, a VerifyArgs) (Report, error) {
			j, err := openTool(call, capability.JournalRead, a.Dir, a.Name, o)
			if err != nil {
				return Report{}, err
			}
			defer j.Close()
			rep, err := j.Verify(ctx)
			if err != nil {
				return Report{}, err
			}
			return *rep, nil
		})
}

func registerRead(b *kernel.Builder, o ToolOptions, _ string) error {
	return kernel.AddTool(b, kernel.Policy{Name: "journal_read", Timeout: o.Timeout, MaxOutputBytes: limits.JournalReadOutputBytes},
		kernel.Meta{
			Effect:  capability.JournalRead,
			Title:   "Read journal",
			Summary: "Read verified records of a journal",
			Description: fmt.Sprintf(`Returns up to limit records (default and maximum %s) of the named journal starting at record from (default 1), each with its number, hashes and event. Every record up to the last returned is verified first; a bad record fails with "integrity".
Records that do not all fit the output bound (%s unless the host sets another: room for one record of the largest event) come as a window of whole records with next_from, the from of the next call; a record too large alone fails with limit.
Example: {"name": "deployments", "from": 20, "limit": 10}`, limits.Count(maxReadRecords), limits.Bytes(limits.JournalReadOutputBytes)),
		}, func(ctx context.Context, call *kernel.Call, a ReadArgs) (ReadResult, error) {
			limit := a.Limit
			if limit == 0 {
				limit = maxReadRecords
			}
			if limit < 0 || limit > maxReadRecords {
				return ReadResult{}, fault.New(fault.InvalidInput, "limit must be 1..%d", maxReadRecords)
			}
			j, err := openTool(call, capability.JournalRead, a.Dir, a.Name, o)
			if err != nil {
				return ReadResult{}, err
			}
			defer j.Close()
			recs, _, err := j.ReadUpTo(ctx, a.From, limit, call.MaxOutputBytes)
			if err != nil {
				return ReadResult{}, err
			}
			return readWindow(call, recs)
		})
}

// readWindow is the result of the records read: all of them when they
// fit the call's output bound, else the first ones that do and where to
// go on.
func readWindow(call *kernel.Call, recs []Record) (ReadResult, error) {
	if recs == nil {
		recs = []Record{}
	}
	n, err := toolkit.FitPrefix(call.MaxOutputBytes, len(recs), func(n int) any {
		r := ReadResult{Records: recs[:n]}
		if n < len(recs) {
			r.NextFrom = recs[len(recs)-1].Seq
		}
		return r
	})
	switch {
	case err != nil:
		return ReadResult{}, err
	case n == 0 && len(recs) > 0:
		return ReadResult{}, toolkit.UnitTooLarge(call, fmt.Sprintf("record %d", recs[0].Seq), 0, "a record is never shown in part")
	case n < len(recs):
		return ReadResult{Records: recs[:n], NextFrom: recs[n].Seq}, nil
	}
	return ReadResult{Records: recs}, nil
}

// openTool opens the journal name in dir, confined to the roots the
// session is granted effect on; neither of its files (the records and
// the lock) may be protected.
func openTool(call *kernel.Call, effect capability.Effect, dir, name string, o ToolOptions) (*Journal, error) {
	if dir == "" {
		dir = "."
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	t, err := scope.New(call.Session.Capabilities(), effect, o.Protected).Resolve(dir)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	c, err := t.OpenForChanges(fileNames(name)...)
	if err != nil {
		return nil, err
	}
	j, err := openIn(c, name, &o.Options)
	if err != nil {
		c.Close()
		return nil, err
	}
	return j, nil
}
