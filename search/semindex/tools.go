package semindex

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/kernel/toolkit"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/search/semindex/bert"
)

// ToolOptions configure the model-facing tools. A nil *ToolOptions is
// valid: the tools then report the model as unavailable.
type ToolOptions struct {
	// ModelDir is the host's model directory, loaded on first use with
	// Pin (empty: bert.PublishedDigest). A failed load is retried on the
	// next call, so installing the files later needs no restart.
	ModelDir string
	Pin      string
	// Model, when set, is used instead of loading ModelDir.
	Model *bert.Model
	// Timeout bounds one call; zero means limits.HardMaxTimeout for the
	// tools that embed whole sources (add, audit) and the kernel's default
	// for the others.
	Timeout time.Duration
	// Protected are the paths no index may be at (the zero value: .git
	// and capkit.toml in every root); the host passes its set.
	Protected capability.Protected
	// Files reads the sources semindex_add is given by path, confined to
	// the session's read_file roots; nil refuses paths (denied).
	Files toolkit.FileReader
}

type modelLoader struct {
	mu  sync.Mutex
	o   ToolOptions
	got *bert.Model
	// held are the indexes the tools keep open between calls.
	held *heldIndexes
}

func (l *modelLoader) model(ctx context.Context) (*bert.Model, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.got != nil {
		return l.got, nil
	}
	if l.o.Model != nil {
		l.got = l.o.Model
		return l.got, nil
	}
	if l.o.ModelDir == "" {
		return nil, fault.New(fault.Unavailable, "no semantic model is configured for this host; lexical search keeps working; %s", bert.HowToGet(l.o.Pin))
	}
	m, err := bert.Load(ctx, l.o.ModelDir, &bert.Options{Pin: l.o.Pin})
	if err != nil {
		return nil, err
	}
	l.got = m
	return m, nil
}

// IndexArg names the database.
type IndexArg struct {
	Index string `json:"index" jsonschema:"semantic index database file, inside a root granted the tool's effect"`
}

// AddArgs are semindex_add's arguments.
type AddArgs struct {
	IndexArg
	Ref          string `json:"ref" jsonschema:"opaque reference of the source, chosen by the caller"`
	Text         string `json:"text,omitempty" jsonschema:"the complete source text; give text or path"`
	Path         string `json:"path,omitempty" jsonschema:"a file whose whole content is the source (instead of text), in a root granted read_file"`
	Digest       string `json:"digest,omitempty" jsonschema:"the caller's current digest of the source; default the SHA-256 of text"`
	ExpectDigest string `json:"expect_digest,omitempty" jsonschema:"replace only if the ref is indexed at this digest now"`
}

// ToolText is what the model reads.
func (r AddResult) ToolText() string {
	return fmt.Sprintf("indexed %q at digest %s: %d chunks, %d word pieces, %d characters", r.Ref, r.Digest, r.Chunks, r.Pieces, r.Chars)
}

// RemoveArgs are semindex_remove's arguments.
type RemoveArgs struct {
	IndexArg
	Ref          string `json:"ref"`
	ExpectDigest string `json:"expect_digest,omitempty" jsonschema:"remove only if the ref is indexed at this digest now"`
}

// RemoveResult is semindex_remove's result.
type RemoveResult struct {
	Removed string `json:"removed"`
}

// ToolText is what the model reads.
func (r RemoveResult) ToolText() string { return fmt.Sprintf("removed %q", r.Removed) }

// ScopeArgs are semindex_scope's arguments.
type ScopeArgs struct {
	IndexArg
	Name string   `json:"name" jsonschema:"scope name"`
	Refs []string `json:"refs" jsonschema:"the scope's refs, replacing its previous members"`
}

// ScopeResult is semindex_scope's result.
type ScopeResult struct {
	Name string `json:"name"`
	Refs int    `json:"refs"`
}

// ToolText is what the model reads.
func (r ScopeResult) ToolText() string { return fmt.Sprintf("scope %q holds %d refs", r.Name, r.Refs) }

// SearchArgs are semindex_search's arguments.
type SearchArgs struct {
	IndexArg
	Query    string `json:"query" jsonschema:"what to look for, in words; embedded with the index's model"`
	Scope    string `json:"scope,omitempty" jsonschema:"only hits from this named scope's refs"`
	Limit    int    `json:"limit,omitempty"`
	WithText bool   `json:"with_text,omitempty" jsonschema:"include each hit's chunk text"`
	Offset   int    `json:"offset,omitempty" jsonschema:"hits to skip first, in rank order: the previous answer's next_offset; default 0"`
}

// Page is where a tool's list was cut to fit the output bound: Offset
// is its first item shown (0-based), NextOffset the offset of the next
// window (0: none follows).
type Page struct {
	Offset     int `json:"offset,omitzero"`
	NextOffset int `json:"next_offset,omitzero"`
}

// footer is the line that says where the next window starts.
func (w Page) footer(tool string, shown int) string {
	if w.Offset == 0 && w.NextOffset == 0 {
		return ""
	}
	s := fmt.Sprintf("items %d..%d shown", w.Offset+1, w.Offset+shown)
	if w.NextOffset > 0 {
		s += fmt.Sprintf(": the next window is %s with offset=%d", tool, w.NextOffset)
	}
	return s + "\n"
}

// SearchWindow is semindex_search's result.
type SearchWindow struct {
	SearchResult
	Page
}

// ToolText is what the model reads.
func (r SearchWindow) ToolText() string {
	return r.SearchResult.ToolText() + r.footer("semindex_search", len(r.Hits))
}

// StatusWindow is semindex_status's result.
type StatusWindow struct {
	Status
	Page
}

// ToolText is what the model reads.
func (r StatusWindow) ToolText() string {
	return r.Status.ToolText() + r.footer("semindex_status", len(r.Entries))
}

// AuditArgs are semindex_audit's arguments.
type AuditArgs struct {
	IndexArg
	Offset int `json:"offset,omitempty" jsonschema:"problems to skip first: the previous answer's next_offset (the audit runs again); default 0"`
}

// AuditWindow is semindex_audit's result.
type AuditWindow struct {
	AuditReport
	Page
}

// ToolText is what the model reads.
func (r AuditWindow) ToolText() string {
	return r.AuditReport.ToolText() + r.footer("semindex_audit", len(r.Problems))
}

// ToolText is what the model reads.
func (r SearchResult) ToolText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d hits (%d chunks scored)\n", len(r.Hits), r.Scanned)
	for _, h := range r.Hits {
		fmt.Fprintf(&b, "%.4f %s [%d,%d)\n", h.Score, h.Ref, h.Start, h.End)
		if h.Text != "" {
			fmt.Fprintf(&b, "  %s\n", h.Text)
		}
	}
	return b.String()
}

// StatusArgs are semindex_status's arguments.
type StatusArgs struct {
	IndexArg
	Refs    []string          `json:"refs,omitempty" jsonschema:"refs to report; default all"`
	Current map[string]string `json:"current,omitempty" jsonschema:"current digests by ref, to report staleness"`
	Offset  int               `json:"offset,omitempty" jsonschema:"entries to skip first: the previous answer's next_offset; default 0"`
}

// ToolText is what the model reads.
func (s Status) ToolText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d refs, %d chunks, %d scopes, model %s (%s)\n", s.Refs, s.Chunks, s.Scopes, s.ModelDigest, s.Note)
	for _, e := range s.Entries {
		state := "not indexed"
		if e.Indexed {
			state = fmt.Sprintf("indexed at %s, %d chunks", e.Digest, e.Chunks)
		}
		if e.Stale != nil && *e.Stale {
			state += ", stale"
		}
		fmt.Fprintf(&b, "%s: %s\n", e.Ref, state)
	}
	return b.String()
}

// ToolText is what the model reads.
func (r AuditReport) ToolText() string {
	var b strings.Builder
	verdict := "ok"
	if !r.OK {
		verdict = fmt.Sprintf("%d problems", len(r.Problems))
	}
	fmt.Fprintf(&b, "audit %s: %d refs, %d chunks (%s)\n", verdict, r.Refs, r.Chunks, r.Note)
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "%s: %s\n", p.Ref, p.Problem)
	}
	return b.String()
}

// RegisterTools registers semindex_add, semindex_remove and semindex_scope
// (effect index_write) and semindex_search, semindex_status and
// semindex_audit (effect index_read), all deferred. The index path is
// resolved inside the roots the session's capabilities grant the tool's
// effect (OpenIn). opts may be nil.
func RegisterTools(b *kernel.Builder, opts *ToolOptions) error {
	var o ToolOptions
	if opts != nil {
		o = *opts
	}
	l := &modelLoader{o: o, held: newHeldIndexes()}
	long := o.Timeout
	if long == 0 {
		long = limits.HardMaxTimeout
	}
	for _, reg := range []func(*kernel.Builder, *modelLoader, time.Duration, time.Duration) error{
		registerAdd, registerRemove, registerScope, registerSearch, registerStatus, registerAudit,
	} {
		if err := reg(b, l, o.Timeout, long); err != nil {
			return err
		}
	}
	return nil
}

// withIndex runs fn on the index at path inside a root the session's
// capabilities grant effect on, creating it when asked, never at a
// protected path (OpenOptions.Protected); the index stays open for the
// calls after (heldIndexes).
func withIndex[T any](ctx context.Context, l *modelLoader, call *kernel.Call, effect capability.Effect, path string, create bool, fn func(*Index) (T, error)) (T, error) {
	var zero T
	ix, release, err := l.held.acquire(ctx, call.Session.Capabilities().Roots(effect), path, &OpenOptions{NoCreate: !create, Protected: l.o.Protected})
	if err != nil {
		return zero, err
	}
	defer release()
	return fn(ix)
}

// addMaxInputBytes admits a source at its limit even if every character
// is escaped in six bytes (\u003c), with room for the other arguments.
const addMaxInputBytes = 6*limits.SemSourceMaxBytes + limits.MiB

func deref[T any](v *T, err error) (T, error) {
	if err != nil {
		var zero T
		return zero, err
	}
	return *v, nil
}

func registerAdd(b *kernel.Builder, l *modelLoader, _, long time.Duration) error {
	return kernel.AddTool(b, kernel.Policy{Name: "semindex_add", Timeout: long, MaxInputBytes: addMaxInputBytes},
		kernel.Meta{
			Effect:  capability.IndexWrite,
			Title:   "Add to semantic index",
			Summary: "Add or replace a source in a semantic index, by meaning (chunked and embedded)",
			Description: fmt.Sprintf(`Indexes the complete text, or the whole content of the file at path (in a root granted read_file), at most %d bytes of UTF-8, under ref, replacing what ref held, in one transaction: after a crash the index holds the old or the new state. The text is cut into chunks of whole words of at most %d word pieces, each embedded with the host's pinned model. With expect_digest, the replace happens only if ref is indexed at that digest now ("conflict" otherwise). Creates the index if it does not exist. A missing model is "unavailable".
Example: {"index": "work/sem.db", "ref": "doc-1", "text": "The quick brown fox."}`, limits.SemSourceMaxBytes, limits.SemChunkPieces),
		},
		func(ctx context.Context, call *kernel.Call, in AddArgs) (AddResult, error) {
			text, err := toolkit.Read(ctx, call, l.o.Files, in.Text, in.Path, limits.SemSourceMaxBytes, "source")
			if err != nil {
				return AddResult{}, err
			}
			m, err := l.model(ctx)
			if err != nil {
				return AddResult{}, err
			}
			return withIndex(ctx, l, call, capability.IndexWrite, in.Index, true, func(ix *Index) (AddResult, error) {
				return deref(ix.Add(ctx, m, in.Ref, string(text), &AddOptions{Digest: in.Digest, ExpectDigest: in.ExpectDigest}))
			})
		})
}

func registerRemove(b *kernel.Builder, l *modelLoader, short, _ time.Duration) error {
	return kernel.AddTool(b, kernel.Policy{Name: "semindex_remove", Timeout: short},
		kernel.Meta{
			Effect:  capability.IndexWrite,
			Title:   "Remove from semantic index",
			Summary: "Remove a ref and its chunks from a semantic index",
			Description: `Removes ref from the index in one transaction ("not_found" if it is not indexed). With expect_digest, only if ref is indexed at that digest now ("conflict" otherwise).
Example: {"index": "work/sem.db", "ref": "doc-1"}`,
		},
		func(ctx context.Context, call *kernel.Call, in RemoveArgs) (RemoveResult, error) {
			return withIndex(ctx, l, call, capability.IndexWrite, in.Index, false, func(ix *Index) (RemoveResult, error) {
				return RemoveResult{Removed: in.Ref}, ix.Remove(ctx, in.Ref, in.ExpectDigest)
			})
		})
}

func registerScope(b *kernel.Builder, l *modelLoader, short, _ time.Duration) error {
	return kernel.AddTool(b, kernel.Policy{Name: "semindex_scope", Timeout: short},
		kernel.Meta{
			Effect:  capability.IndexWrite,
			Title:   "Semantic index scope",
			Summary: "Define a named scope (a set of refs) stored in a semantic index",
			Description: fmt.Sprintf(`Sets scope name to exactly refs (at most %d per call; they need not be indexed yet), replacing its members, in one transaction. A search restricted to the scope filters before its limit.
Example: {"index": "work/sem.db", "name": "team-a", "refs": ["doc-1", "doc-2"]}`, limits.SemScopeMaxRefs),
		},
		func(ctx context.Context, call *kernel.Call, in ScopeArgs) (ScopeResult, error) {
			return withIndex(ctx, l, call, capability.IndexWrite, in.Index, true, func(ix *Index) (ScopeResult, error) {
				return ScopeResult{Name: in.Name, Refs: len(in.Refs)}, ix.SetScope(ctx, in.Name, in.Refs)
			})
		})
}

func registerSearch(b *kernel.Builder, l *modelLoader, short, _ time.Duration) error {
	return kernel.AddTool(b, kernel.Policy{Name: "semindex_search", Timeout: short},
		kernel.Meta{
			Effect:  capability.IndexRead,
			Title:   "Semantic search",
			Summary: "Search a semantic index by meaning: exact cosine over every chunk, ranked spans",
			Description: fmt.Sprintf(`Embeds query (at most %d word pieces) and scores every chunk in scope by exact cosine similarity, with no candidate or scan ceiling; returns the best hits (default %d, at most %d, from rank offset on, never past the best %d) as spans: ref, start and end in Unicode characters of the source, score. A scope filters before the limit; an unknown scope is "not_found". Hits past the output bound (%s unless the host sets another) come as a window with next_offset, the offset of the next call.
Example: {"index": "work/sem.db", "query": "a fast animal", "limit": 5}`, limits.SemChunkPieces, limits.SemSearchDefaultHits, limits.SemSearchMaxHits, limits.SemSearchMaxHits, limits.Bytes(limits.DefaultMaxOutputBytes)),
		},
		func(ctx context.Context, call *kernel.Call, in SearchArgs) (SearchWindow, error) {
			if in.Offset < 0 || in.Offset >= limits.SemSearchMaxHits {
				return SearchWindow{}, fault.New(fault.InvalidInput, "offset must be 0..%d: only the best %d hits are ranked", limits.SemSearchMaxHits-1, limits.SemSearchMaxHits)
			}
			limit, err := hitLimit(in.Limit)
			if err != nil {
				return SearchWindow{}, err
			}
			m, err := l.model(ctx)
			if err != nil {
				return SearchWindow{}, err
			}
			return withIndex(ctx, l, call, capability.IndexRead, in.Index, false, func(ix *Index) (SearchWindow, error) {
				r, err := ix.Search(ctx, m, in.Query, &SearchOptions{Scope: in.Scope, Limit: min(in.Offset+limit, limits.SemSearchMaxHits), WithText: in.WithText})
				if err != nil {
					return SearchWindow{}, err
				}
				return toolkit.Prefix(call, r.Hits, in.Offset, "hit", func(shown []Hit, next int) SearchWindow {
					w := SearchWindow{SearchResult: *r, Page: Page{Offset: in.Offset, NextOffset: next}}
					w.Hits = shown
					return w
				})
			})
		})
}

func registerStatus(b *kernel.Builder, l *modelLoader, short, _ time.Duration) error {
	return kernel.AddTool(b, kernel.Policy{Name: "semindex_status", Timeout: short},
		kernel.Meta{
			Effect:  capability.IndexRead,
			Title:   "Semantic index status",
			Summary: "Readiness of a semantic index from its metadata (not a full audit)",
			Description: `Reports the model digest, counts, and for the given refs (default all) whether each is indexed, at which digest, and whether a current digest you give says it is stale. Answers from metadata only: semindex_audit is the full check. Entries past the output bound (` + limits.Bytes(limits.DefaultMaxOutputBytes) + ` unless the host sets another) come as a window with next_offset, the offset of the next call.
Example: {"index": "work/sem.db", "current": {"doc-1": "sha256-of-doc-1"}}`,
		},
		func(ctx context.Context, call *kernel.Call, in StatusArgs) (StatusWindow, error) {
			return withIndex(ctx, l, call, capability.IndexRead, in.Index, false, func(ix *Index) (StatusWindow, error) {
				st, err := ix.Status(ctx, &StatusOptions{Refs: in.Refs, Current: in.Current})
				if err != nil {
					return StatusWindow{}, err
				}
				return toolkit.Prefix(call, st.Entries, in.Offset, "entry", func(shown []RefStatus, next int) StatusWindow {
					w := StatusWindow{Status: *st, Page: Page{Offset: in.Offset, NextOffset: next}}
					w.Entries = shown
					return w
				})
			})
		})
}

func registerAudit(b *kernel.Builder, l *modelLoader, _, long time.Duration) error {
	return kernel.AddTool(b, kernel.Policy{Name: "semindex_audit", Timeout: long},
		kernel.Meta{
			Effect:  capability.IndexRead,
			Title:   "Audit semantic index",
			Summary: "Full check of a semantic index: recompute every chunk and vector and compare",
			Description: `The full check: SQLite's integrity check, then every stored source's digest, chunking and vectors recomputed with the host's model and compared. It reads and re-embeds everything, so it is slow on large indexes; semindex_status answers readiness from metadata. Problems past the output bound (` + limits.Bytes(limits.DefaultMaxOutputBytes) + ` unless the host sets another) come as a window with next_offset; the next window runs the audit again.
Example: {"index": "work/sem.db"}`,
		},
		func(ctx context.Context, call *kernel.Call, in AuditArgs) (AuditWindow, error) {
			m, err := l.model(ctx)
			if err != nil {
				return AuditWindow{}, err
			}
			return withIndex(ctx, l, call, capability.IndexRead, in.Index, false, func(ix *Index) (AuditWindow, error) {
				rep, err := ix.Audit(ctx, m)
				if err != nil {
					return AuditWindow{}, err
				}
				return toolkit.Prefix(call, rep.Problems, in.Offset, "problem", func(shown []AuditProblem, next int) AuditWindow {
					w := AuditWindow{AuditReport: *rep, Page: Page{Offset: in.Offset, NextOffset: next}}
					w.Problems = shown
					return w
				})
			})
		})
}
