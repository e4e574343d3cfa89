package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"syscall"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/limits"
)

// LockFormat is the format of the lock files this package writes.
const LockFormat = 1

// Lock is the approved definitions of upstream tools: for each upstream
// by name, each tool by its upstream name. It is what serve offers and
// nothing more; `capkit upstream approve` writes it.
//
// The file is JSON, each entry the definition whole beside its digest,
// so that a review can show what changed and a definition edited by hand
// is caught (its digest no longer matches: the lock is refused).
type Lock struct {
	Format    int                             `json:"format"`
	Upstreams map[string]map[string]LockEntry `json:"upstreams"`
}

// LockEntry is one approved definition.
type LockEntry struct {
	SHA256     string      `json:"sha256"`
	Definition *Definition `json:"definition"`
}

// ErrLock marks a lock file that cannot be used: unreadable, malformed,
// or a digest that does not match its definition.
var ErrLock = fault.NewMark("gateway: the lock file cannot be used")

// LoadLock reads the lock file at path. A missing file is an empty lock
// (nothing approved yet); anything else that is not a lock this package
// wrote is an error, so that serve fails closed.
func LoadLock(path string) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, os.ErrNotExist) {
		return &Lock{Format: LockFormat}, nil
	}
	if err != nil {
		return nil, fault.Wrap(fault.CodeOf(err), ErrLock.With(err), "the upstream lock file %s cannot be opened", path)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fault.New(fault.InvalidInput, "the upstream lock file %s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, limits.UpstreamMaxLockBytes+1))
	if err != nil {
		return nil, fault.Wrap(fault.IO, ErrLock.With(err), "the upstream lock file %s cannot be read", path)
	}
	if len(data) > limits.UpstreamMaxLockBytes {
		return nil, fault.LimitExceeded("the upstream lock file "+path+" bytes", limits.UpstreamMaxLockBytes, int64(len(data)))
	}
	return ParseLock(path, data)
}

// ParseLock decodes a lock strictly (unknown members and duplicate names
// refused) and checks every digest; name is how errors name it.
func ParseLock(name string, data []byte) (*Lock, error) {
	var l Lock
	if err := jsonv2.Unmarshal(data, &l, jsonv2.RejectUnknownMembers(true)); err != nil {
		return nil, fault.Wrap(fault.Integrity, ErrLock.With(err), "the upstream lock file %s is not a lock capkit wrote (rewrite it with capkit upstream approve)", name)
	}
	if l.Format != LockFormat {
		return nil, fault.New(fault.Integrity, "the upstream lock file %s has format %d; this capkit reads format %d", name, l.Format, LockFormat)
	}
	for up, tools := range l.Upstreams {
		if !capability.ValidUpstreamName(up) {
			return nil, fault.New(fault.Integrity, "the upstream lock file %s names upstream %q, which is not a valid upstream name", name, up)
		}
		for tool, e := range tools {
			if e.Definition == nil || e.Definition.Name != tool || checkDefinition(e.Definition) != nil {
				return nil, fault.New(fault.Integrity, "the upstream lock file %s: entry %s of upstream %s is not a definition of that tool", name, tool, up)
			}
			if e.Definition.Digest() != e.SHA256 {
				return nil, fault.New(fault.Integrity, "the upstream lock file %s: the definition of %s of upstream %s does not match its digest (edited by hand?); review and approve it again: capkit upstream review", name, tool, up)
			}
		}
	}
	return &l, nil
}

// Approved is the approved definition of tool of upstream, if any.
func (l *Lock) Approved(upstream, tool string) (*Definition, bool) {
	e, ok := l.Upstreams[upstream][tool]
	return e.Definition, ok
}

// Set approves d as tool d.Name of upstream.
func (l *Lock) Set(upstream string, d *Definition) {
	if l.Upstreams == nil {
		l.Upstreams = map[string]map[string]LockEntry{}
	}
	if l.Upstreams[upstream] == nil {
		l.Upstreams[upstream] = map[string]LockEntry{}
	}
	l.Upstreams[upstream][d.Name] = LockEntry{SHA256: d.Digest(), Definition: d}
}

// Remove withdraws the approval of tool of upstream.
func (l *Lock) Remove(upstream, tool string) {
	delete(l.Upstreams[upstream], tool)
	if len(l.Upstreams[upstream]) == 0 {
		delete(l.Upstreams, upstream)
	}
}

// Tools lists the approved tools of upstream, in name order.
func (l *Lock) Tools(upstream string) []string {
	var out []string
	for t := range l.Upstreams[upstream] {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// Save writes the lock to path atomically (a staging file beside it,
// synced, renamed over it: scope.Host's Replace); a new file is readable
// by its owner and group. Anything at path but a regular file is refused.
func (l *Lock) Save(ctx context.Context, path string) error {
	l.Format = LockFormat
	data, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return fault.Wrap(fault.Internal, err, "encoding the upstream lock failed")
	}
	t, err := scope.Host(path)
	if err != nil {
		return err
	}
	defer t.Close()
	return t.Replace(ctx, func(f *os.File) error {
		_, err := f.Write(append(data, '\n'))
		return err
	}, &scope.ReplaceOptions{Role: "the upstream lock file", Mode: 0o640})
}
