package lexindex

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/kernel/toolkit"
	"github.com/capkit/capkit/limits"
)

// ToolOptions configure the model-facing tools. A nil *ToolOptions is
// valid.
type ToolOptions struct {
	// Timeout bounds one call; zero means the kernel's default. A write
	// waiting for another writer fails with "unavailable" when it ends.
	Timeout time.Duration
	// Protected are the paths no index may be at (the zero value: .git
	// and capkit.toml in every root); the host passes its set.
	Protected capability.Protected
	// Files reads the documents a mutation names by path, confined to the
	// session's read_file roots; nil refuses paths (denied).
	Files toolkit.FileReader
}

// UpdateArgs are lexindex_update's arguments.
type UpdateArgs struct {
	Index     string        `json:"index" jsonschema:"index database file, inside a root granted index_write; created if missing"`
	Mutations []MutationArg `json:"mutations" jsonschema:"puts (ref, text or path, optional digest, optional expect_digest) and removals (ref, remove: true, optional expect_digest), applied in order, all or none"`
}

// MutationArg is a Mutation whose text may instead be read from a file.
type MutationArg struct {
	Mutation
	Path string `json:"path,omitempty" jsonschema:"a file whose whole content is the document (instead of text), in a root granted read_file"`
}

// ToolText is what the model reads.
func (a Applied) ToolText() string {
	return fmt.Sprintf("applied: %d added, %d replaced, %d unchanged, %d removed", a.Added, a.Replaced, a.Unchanged, a.Removed)
}

// ScopeArgs are lexindex_scope's arguments.
type ScopeArgs struct {
	Index  string   `json:"index" jsonschema:"index database file, inside a root granted index_write"`
	Name   string   `json:"name" jsonschema:"scope name"`
	Refs   []string `json:"refs,omitempty" jsonschema:"the refs the scope holds from now on (they need not be indexed yet)"`
	Remove bool     `json:"remove,omitempty" jsonschema:"delete the scope instead"`
}

// ScopeResult is lexindex_scope's result.
type ScopeResult struct {
	Name    string `json:"name"`
	Refs    int    `json:"refs"`
	Removed bool   `json:"removed,omitempty"`
}

// ToolText is what the model reads.
func (r ScopeResult) ToolText() string {
	if r.Removed {
		return fmt.Sprintf("scope %q removed", r.Name)
	}
	return fmt.Sprintf("scope %q holds %d refs", r.Name, r.Refs)
}

// StatusArgs are lexindex_status's arguments.
type StatusArgs struct {
	Index string      `json:"index" jsonschema:"index database file, inside a root granted index_read"`
	Refs  []RefDigest `json:"refs,omitempty" jsonschema:"refs to report on, each optionally with the caller's current digest; empty lists every ref"`
	After string      `json:"after,omitempty" jsonschema:"when listing, continue after this ref (the previous answer's next)"`
	Limit int         `json:"limit,omitempty" jsonschema:"when listing, at most this many refs"`
}

// ToolText is what the model reads.
func (s Status) ToolText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d documents in the index (tokenizer %s)\n", s.Documents, s.Tokenizer)
	for _, d := range s.Refs {
		switch {
		case !d.Indexed:
			fmt.Fprintf(&b, "%s: not indexed", d.Ref)
		default:
			fmt.Fprintf(&b, "%s: indexed at %s (%d bytes)", d.Ref, d.Digest, d.Bytes)
		}
		if d.Stale != nil && *d.Stale {
			b.WriteString(", stale")
		}
		b.WriteByte('\n')
	}
	if s.Next != "" {
		fmt.Fprintf(&b, "more: continue with after=%q\n", s.Next)
	}
	return b.String()
}

// SearchArgs are lexindex_search's arguments.
type SearchArgs struct {
	Index    string `json:"index" jsonschema:"index database file, inside a root granted index_read"`
	Query    string `json:"query"`
	Mode     string `json:"mode,omitempty" jsonschema:"terms (default: every term required), phrase, or fts (FTS5 query syntax)"`
	Scope    string `json:"scope,omitempty" jsonschema:"only documents of this stored scope"`
	Limit    int    `json:"limit,omitempty"`
	Snippets bool   `json:"snippets,omitempty" jsonschema:"add an excerpt of each hit, matches in «»"`
	Offset   int    `json:"offset,omitempty" jsonschema:"hits to skip first, in rank order: the previous answer's next_offset; default 0"`
}

// SearchResult is lexindex_search's result: the ranked hits from offset
// on that fit the output bound.
type SearchResult struct {
	Result
	// Offset is the rank of the first hit shown, 0-based; NextOffset, set
	// when hits found did not fit the output bound, the offset of the next
	// window.
	Offset     int `json:"offset,omitzero"`
	NextOffset int `json:"next_offset,omitzero"`
}

// ToolText is what the model reads.
func (r SearchResult) ToolText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d hits for %s", len(r.Hits), r.Match)
	if r.Offset > 0 || r.NextOffset > 0 {
		fmt.Fprintf(&b, "; ranks %d..%d shown", r.Offset+1, r.Offset+len(r.Hits))
	}
	if r.NextOffset > 0 {
		fmt.Fprintf(&b, ": the next window is lexindex_search with offset=%d", r.NextOffset)
	}
	b.WriteByte('\n')
	scores := scoreTexts(r.Hits)
	for i, h := range r.Hits {
		fmt.Fprintf(&b, "%d. %s (score %s, digest %s)\n", r.Offset+i+1, h.Ref, scores[i], h.Digest)
		if h.Snippet != "" {
			fmt.Fprintf(&b, "   %s\n", h.Snippet)
		}
	}
	return b.String()
}

// searchWindow runs the query for the hits up to offset+limit (never past
// limits.LexMaxHits) and returns those from offset on that fit the
// call's output bound.
func searchWindow(ctx context.Context, call *kernel.Call, ix *Index, in SearchArgs) (SearchResult, error) {
	if in.Offset < 0 || in.Offset >= limits.LexMaxHits {
		return SearchResult{}, fault.New(fault.InvalidInput, "offset must be 0..%d: only the best %d hits are ranked", limits.LexMaxHits-1, limits.LexMaxHits)
	}
	limit := cmp.Or(in.Limit, limits.LexDefaultHits)
	if limit < 0 || limit > limits.LexMaxHits {
		return SearchResult{}, fault.LimitExceeded("limit", limits.LexMaxHits, int64(limit))
	}
	r, err := ix.Search(ctx, Query{Text: in.Query, Mode: in.Mode, Scope: in.Scope, Limit: min(in.Offset+limit, limits.LexMaxHits), Snippets: in.Snippets})
	if err != nil {
		return SearchResult{}, err
	}
	return toolkit.Prefix(call, r.Hits, in.Offset, "hit", func(shown []Hit, next int) SearchResult {
		w := SearchResult{Result: *r, Offset: in.Offset, NextOffset: next}
		w.Hits = shown
		return w
	})
}

// StatusResult is lexindex_status's result: the refs that fit the output
// bound. A listing cut by it continues with after (Next); a report on
// given refs names how many at the end of the list were left out.
type StatusResult struct {
	Status
	Unreported int `json:"unreported,omitzero"`
}

// ToolText is what the model reads.
func (r StatusResult) ToolText() string {
	text := r.Status.ToolText()
	if r.Unreported > 0 {
		text += fmt.Sprintf("the last %d refs asked for did not fit the output bound: ask for them again\n", r.Unreported)
	}
	return text
}

// statusWindow is st cut to the refs that fit the call's output bound.
func statusWindow(call *kernel.Call, st *Status, listing bool) (StatusResult, error) {
	result := func(n int) StatusResult {
		r := StatusResult{Status: *st}
		r.Refs = st.Refs[:n]
		switch {
		case n == len(st.Refs):
		case listing:
			r.Next = st.Refs[max(n-1, 0)].Ref
		default:
			r.Unreported = len(st.Refs) - n
		}
		return r
	}
	n, err := toolkit.FitPrefix(call.MaxOutputBytes, len(st.Refs), func(n int) any { return result(n) })
	switch {
	case err != nil:
		return StatusResult{}, err
	case n == 0 && len(st.Refs) > 0:
		return StatusResult{}, toolkit.UnitTooLarge(call, fmt.Sprintf("the status of %q", clip.Text(st.Refs[0].Ref)), 0, "a ref's status is never shown in part")
	}
	return result(n), nil
}

// ToolText is what the model reads.
func (r Result) ToolText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d hits for %s\n", len(r.Hits), r.Match)
	scores := scoreTexts(r.Hits)
	for i, h := range r.Hits {
		fmt.Fprintf(&b, "%d. %s (score %s, digest %s)\n", i+1, h.Ref, scores[i], h.Digest)
		if h.Snippet != "" {
			fmt.Fprintf(&b, "   %s\n", h.Snippet)
		}
	}
	return b.String()
}

// RegisterTools registers lexindex_update and lexindex_scope (effect
// index_write) and lexindex_status and lexindex_search (effect
// index_read), all deferred. The database path is resolved in the scope
// of the roots the session's capabilities grant the effect on and opened
// through its pinned directory (openIn). opts may be nil.
func RegisterTools(b *kernel.Builder, opts *ToolOptions) error {
	var o ToolOptions
	if opts != nil {
		o = *opts
	}
	for _, register := range []func(*kernel.Builder, ToolOptions) error{registerUpdate, registerScope, registerStatus, registerSearch} {
		if err := register(b, o); err != nil {
			return err
		}
	}
	return nil
}

// openIndex opens the index db inside a root the session's capabilities
// grant e on; a writer creates it when missing. Neither the database nor
// its sidecars may be protected, also for reading: SQLite creates its
// sidecars when it opens a database.
func openIndex(ctx context.Context, call *kernel.Call, e capability.Effect, db string, protected capability.Protected) (*Index, error) {
	return openIn(ctx, scope.New(call.Session.Capabilities(), e, protected), db, e == capability.IndexWrite)
}

func registerUpdate(b *kernel.Builder, o ToolOptions) error {
	return kernel.AddTool(b, kernel.Policy{Name: "lexindex_update", MaxInputBytes: limits.LexToolInputBytes, Timeout: o.Timeout},
		kernel.Meta{
			Effect:  capability.IndexWrite,
			Title:   "Update full-text index",
			Summary: "Add, replace or remove documents of a full-text index, all or none",
			Description: fmt.Sprintf(`Applies a batch of mutations to a full-text index (a SQLite database) in one transaction: after a crash the index holds the state before or after the batch, never a mix.
A put stores text, or the whole content of the file at path (in a root granted read_file), at most %d bytes of UTF-8, under an opaque ref with a digest (default: the text's hex SHA-256); a put whose digest the index already holds is left unchanged. With expect_digest, the index must hold that digest for the ref now, else the whole batch fails with "conflict" (another writer changed it: re-read its status). Removing a ref the index does not hold is "not_found".
Example: {"index": "index/docs.db", "mutations": [{"ref": "doc-17", "text": "The quarterly report…", "digest": "sha256:ab12…"}, {"ref": "notes", "path": "docs/notes.md"}, {"ref": "doc-3", "remove": true}]}`, limits.LexMaxDocumentBytes),
		},
		func(ctx context.Context, call *kernel.Call, in UpdateArgs) (Applied, error) {
			ix, err := openIndex(ctx, call, capability.IndexWrite, in.Index, o.Protected)
			if err != nil {
				return Applied{}, err
			}
			defer ix.Close()
			muts, err := readMutations(ctx, call, o.Files, in.Mutations)
			if err != nil {
				return Applied{}, err
			}
			return ix.Apply(ctx, muts)
		})
}

// readMutations returns the mutations with the text of those that name a
// path read from it: each at most limits.LexMaxDocumentBytes, and
// limits.LexMaxBatchReadBytes in all, as the input bound holds inline
// text.
func readMutations(ctx context.Context, call *kernel.Call, r toolkit.FileReader, in []MutationArg) ([]Mutation, error) {
	out := make([]Mutation, len(in))
	left := int64(limits.LexMaxBatchReadBytes)
	for i, m := range in {
		out[i] = m.Mutation
		switch {
		case m.Path == "":
			continue
		case m.Remove:
			return nil, fault.New(fault.InvalidInput, "mutation %d removes %q: a removal takes no path", i+1, clip.Text(m.Ref))
		}
		max := min(limits.LexMaxDocumentBytes, left)
		text, err := toolkit.Read(ctx, call, r, m.Text, m.Path, max, "document")
		if fault.CodeOf(err) == fault.Limit && max < limits.LexMaxDocumentBytes {
			return nil, fault.New(fault.Limit, "mutation %d: the documents this batch reads from paths exceed %s in all: split the batch", i+1, limits.Bytes(limits.LexMaxBatchReadBytes))
		}
		if err != nil {
			return nil, err
		}
		out[i].Text, left = string(text), left-int64(len(text))
	}
	return out, nil
}

func registerScope(b *kernel.Builder, o ToolOptions) error {
	return kernel.AddTool(b, kernel.Policy{Name: "lexindex_scope", Timeout: o.Timeout},
		kernel.Meta{
			Effect:  capability.IndexWrite,
			Title:   "Full-text index scope",
			Summary: "Set or remove a named scope (a set of refs) a full-text search can be restricted to",
			Description: `Stores a named scope in the index: the set of refs given, replacing what the scope held. A search restricted to the scope filters before it ranks and cuts, so documents outside the scope never take the places of those inside. With remove, deletes the scope ("not_found" if there is none).
Example: {"index": "index/docs.db", "name": "team-a", "refs": ["doc-1", "doc-17"]}`,
		},
		func(ctx context.Context, call *kernel.Call, in ScopeArgs) (ScopeResult, error) {
			ix, err := openIndex(ctx, call, capability.IndexWrite, in.Index, o.Protected)
			if err != nil {
				return ScopeResult{}, err
			}
			defer ix.Close()
			if in.Remove {
				return ScopeResult{Name: in.Name, Removed: true}, ix.RemoveScope(ctx, in.Name)
			}
			return ScopeResult{Name: in.Name, Refs: len(in.Refs)}, ix.SetScope(ctx, in.Name, in.Refs)
		})
}

func registerStatus(b *kernel.Builder, o ToolOptions) error {
	return kernel.AddTool(b, kernel.Policy{Name: "lexindex_status", Timeout: o.Timeout},
		kernel.Meta{
			Effect:  capability.IndexRead,
			Title:   "Full-text index status",
			Summary: "Which refs a full-text index holds, at which digests, and which are stale",
			Description: fmt.Sprintf(`Reports for each ref whether the index holds it and at which digest; given the caller's current digest, also whether the indexed copy is stale. Without refs, lists the indexed refs in order, at most %d per call; continue with "after". Refs past the output bound (%s unless the host sets another) are left for the next call: a listing's "next" is the after to continue with; with refs, the result says how many at the end were not reported.
Example: {"index": "index/docs.db", "refs": [{"ref": "doc-17", "current_digest": "sha256:ab12…"}]}`, limits.LexMaxStatusRefs, limits.Bytes(limits.DefaultMaxOutputBytes)),
		},
		func(ctx context.Context, call *kernel.Call, in StatusArgs) (StatusResult, error) {
			ix, err := openIndex(ctx, call, capability.IndexRead, in.Index, o.Protected)
			if err != nil {
				return StatusResult{}, err
			}
			defer ix.Close()
			st, err := ix.Status(ctx, StatusRequest{Refs: in.Refs, After: in.After, Limit: in.Limit})
			if err != nil {
				return StatusResult{}, err
			}
			return statusWindow(call, st, len(in.Refs) == 0)
		})
}

func registerSearch(b *kernel.Builder, o ToolOptions) error {
	return kernel.AddTool(b, kernel.Policy{Name: "lexindex_search", Timeout: o.Timeout},
		kernel.Meta{
			Effect:  capability.IndexRead,
			Title:   "Full-text search",
			Summary: "Ranked full-text search (BM25) over an index's documents, optionally within a scope",
			Description: fmt.Sprintf(`Searches a full-text index and returns refs ranked by BM25 over the whole index (score: higher is better), at most %d (default %d) from rank offset on (never past the best %d). Hits past the output bound (%s unless the host sets another) come as a window with next_offset, the offset of the next call.
Modes: "terms" (default) requires every word; "phrase" requires the words in order; "fts" takes SQLite FTS5 query syntax (AND, OR, NOT, "phrases", prefix*, NEAR(a b, 5), body:term, ^first); a malformed query fails with "invalid_input" naming the character where it goes wrong. With scope, only that stored scope's documents are ranked.
Example: {"index": "index/docs.db", "query": "quarterly revenue", "scope": "team-a", "snippets": true}`, limits.LexMaxHits, limits.LexDefaultHits, limits.LexMaxHits, limits.Bytes(limits.DefaultMaxOutputBytes)),
		},
		func(ctx context.Context, call *kernel.Call, in SearchArgs) (SearchResult, error) {
			ix, err := openIndex(ctx, call, capability.IndexRead, in.Index, o.Protected)
			if err != nil {
				return SearchResult{}, err
			}
			defer ix.Close()
			return searchWindow(ctx, call, ix, in)
		})
}
