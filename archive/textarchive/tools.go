package textarchive

import (
	"context"
	"fmt"
	"time"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/kernel/toolkit"
	"github.com/capkit/capkit/limits"
)

// ToolOptions configure the model-facing tools.
type ToolOptions struct {
	// Archive is the open archive the tools work on (the host's, for the
	// server's life); without one no tool is registered.
	Archive *Archive
	// Source, when set, offers archive_fetch under its policy and budget.
	Source *Source
	// Task is the budget task of archive_fetch's charges; empty means the
	// session's actor.
	Task string
	// Protected are the paths no tool may change; archive_add reads a
	// file through a scope of the session's read_file roots with them.
	Protected capability.Protected
	// Timeout bounds one call; zero means limits.ArchiveDefaultTimeout.
	Timeout time.Duration
}

// AddArgs are archive_add's arguments.
type AddArgs struct {
	Collection string    `json:"collection"`
	Item       string    `json:"item,omitempty" jsonschema:"the item; default for a file: its name"`
	Request    string    `json:"request" jsonschema:"your identity of this request: the same identity with the same content returns the same version; with other content it is a conflict"`
	Parts      []PartArg `json:"parts,omitempty" jsonschema:"the document's parts in order (or give path)"`
	Title      string    `json:"title,omitempty"`
	SourceURL  string    `json:"source_url,omitempty"`
	Path       string    `json:"path,omitempty" jsonschema:"a file to keep as bytes (instead of parts), in a root granted read_file"`
	MediaType  string    `json:"media_type,omitempty" jsonschema:"the file's media type, such as application/pdf (with path)"`
}

// PartArg is one part of archive_add's document.
type PartArg struct {
	Text     string   `json:"text"`
	Page     string   `json:"page,omitempty" jsonschema:"the physical page the part is on, as you label it"`
	Method   string   `json:"method,omitempty" jsonschema:"how the text was produced: ocr, pdftotext, typed..."`
	Warnings []string `json:"warnings,omitempty"`
}

// ListArgs are archive_list's arguments.
type ListArgs struct {
	Collection string `json:"collection"`
	Limit      int    `json:"limit,omitempty"`
	Offset     int    `json:"offset,omitempty" jsonschema:"items to skip: the previous answer's next_offset"`
}

// VersionsArgs are archive_versions' arguments.
type VersionsArgs struct {
	Collection string `json:"collection"`
	Item       string `json:"item"`
	Limit      int    `json:"limit,omitempty"`
	Offset     int    `json:"offset,omitempty" jsonschema:"versions to skip: the previous answer's next_offset"`
}

// SearchArgs are archive_search's arguments.
type SearchArgs struct {
	Query      string `json:"query"`
	Mode       string `json:"mode,omitempty" jsonschema:"terms (default: every word), phrase, or fts (FTS5 query syntax)"`
	Collection string `json:"collection,omitempty" jsonschema:"only this collection"`
	Limit      int    `json:"limit,omitempty"`
	Offset     int    `json:"offset,omitempty" jsonschema:"ranked hits to skip: the previous answer's next_offset"`
	NoSnippets bool   `json:"no_snippets,omitempty" jsonschema:"leave out each hit's excerpt"`
}

// CiteArgs are archive_cite's arguments.
type CiteArgs struct {
	Version string `json:"version" jsonschema:"the version, such as v12"`
	Part    int    `json:"part,omitempty" jsonschema:"the part, from 0"`
	Start   int64  `json:"start,omitempty" jsonschema:"the span's first character (Unicode code point), from 0: the previous answer's next_start to read on"`
	Length  int64  `json:"length" jsonschema:"characters (code points) in the span, at most; it ends at the part's end"`
}

// FetchArgs are archive_fetch's arguments.
type FetchArgs struct {
	URL        string `json:"url" jsonschema:"the https URL to fetch and keep"`
	Request    string `json:"request" jsonschema:"your identity of this fetch: repeating it returns the kept result without fetching again"`
	Collection string `json:"collection,omitempty" jsonschema:"default: the source policy's group"`
	Item       string `json:"item,omitempty" jsonschema:"default: the URL"`
}

// RegisterTools registers the archive's model tools, all deferred:
// archive_add (effect text_archive_write), archive_list, archive_versions,
// archive_search and archive_cite (text_archive_read) and, with a source,
// archive_fetch (text_archive_fetch). The operator's operations (backup,
// restore, migrate, audit, rebuild, cleanup) are no tools. opts may be
// nil: then nothing is registered.
func RegisterTools(b *kernel.Builder, opts *ToolOptions) error {
	if opts == nil || opts.Archive == nil {
		return nil
	}
	o := *opts
	if o.Timeout == 0 {
		o.Timeout = limits.ArchiveDefaultTimeout
	}
	register := []func(*kernel.Builder, ToolOptions) error{registerAdd, registerList, registerVersions, registerSearch, registerCite}
	if o.Source != nil {
		register = append(register, registerFetch)
	}
	for _, r := range register {
		if err := r(b, o); err != nil {
			return err
		}
	}
	return nil
}

func registerAdd(b *kernel.Builder, o ToolOptions) error {
	return kernel.AddTool(b, kernel.Policy{Name: "archive_add", MaxInputBytes: limits.ArchiveToolInputBytes, Timeout: o.Timeout},
		kernel.Meta{
			Effect:  capability.TextArchiveWrite,
			Title:   "Keep in the archive",
			Summary: "Keep a document's text (parts) or a file's bytes as an exact, citable version of an archive item",
			Description: fmt.Sprintf(`Keeps a document (parts of text, each with its page, method and warnings as you label them) or a file's bytes (path, in a root granted read_file) as a new version of an item. Versions never change and are never removed: a newer one is added beside the older, which stays citable. The same request identity with the same content returns the same version ("repeated"); with other content it fails with "conflict". A new request whose content the item's current version holds returns that version ("unchanged").
Bounds: %s parts and %s of text per document, %s per file, %s bytes per collection, item or request.
Example: {"collection": "papers", "item": "smith-2024", "request": "smith-2024-ocr-1", "parts": [{"text": "Abstract…", "page": "1", "method": "ocr"}], "title": "Smith 2024"}`,
				limits.Count(limits.ArchiveMaxParts), limits.Bytes(limits.ArchiveMaxTextBytes), limits.Bytes(limits.ArchiveMaxFileBytes), limits.Count(limits.ArchiveMaxNameBytes)),
		},
		func(ctx context.Context, call *kernel.Call, in AddArgs) (Added, error) {
			a := o.Archive
			if (len(in.Parts) > 0) == (in.Path != "") {
				return Added{}, fault.New(fault.InvalidInput, "give parts (a document) or path (a file), one of them")
			}
			if in.Path != "" {
				return addPath(ctx, call, a, o.Protected, in)
			}
			d := Document{Title: in.Title, SourceURL: in.SourceURL, Parts: make([]Part, len(in.Parts))}
			for i, p := range in.Parts {
				d.Parts[i] = Part{Text: p.Text, Page: Page(p.Page), Method: p.Method, Warnings: p.Warnings}
			}
			out, err := a.AddText(ctx, TextRequest{Collection: in.Collection, Item: in.Item, Request: in.Request, Document: d})
			if err != nil {
				return Added{}, err
			}
			return *out, nil
		})
}

// addPath keeps the file at in.Path, read through the session's
// read_file scope.
func addPath(ctx context.Context, call *kernel.Call, a *Archive, protected capability.Protected, in AddArgs) (Added, error) {
	if in.Title != "" || in.SourceURL != "" {
		return Added{}, fault.New(fault.InvalidInput, "title and source_url describe a document's parts; a file has its name and media type")
	}
	t, err := scope.New(call.Session.Capabilities(), capability.ReadFile, protected).Resolve(in.Path)
	if err != nil {
		return Added{}, err
	}
	defer t.Close()
	f, st, err := t.OpenRegular("file")
	if err != nil {
		return Added{}, err
	}
	defer f.Close()
	if st.Size > limits.ArchiveMaxFileBytes {
		return Added{}, fault.LimitExceeded("file bytes", limits.ArchiveMaxFileBytes, st.Size)
	}
	name := baseName(t.Name())
	out, err := a.AddFile(ctx, FileRequest{Collection: in.Collection, Item: in.Item, Request: in.Request, Name: name, MediaType: in.MediaType}, f)
	if err != nil {
		return Added{}, err
	}
	return *out, nil
}

// fit cuts n records of a result to those that fit the call's output
// bound, failing when the first does not fit alone.
func fit(call *kernel.Call, n int, build func(k int) any, unit string) (int, error) {
	k, err := toolkit.FitPrefix(call.MaxOutputBytes, n, build)
	switch {
	case err != nil:
		return 0, err
	case k == 0 && n > 0:
		return 0, toolkit.UnitTooLarge(call, "one "+unit, 0, "a "+unit+" is never shown in part")
	}
	return k, nil
}

func recordsBound() string {
	return fmt.Sprintf("at most %d records a call (limit, default %d) from offset on; records past the output bound (%s unless the host sets another) are left for the next call, at next_offset",
		limits.ArchiveMaxRecords, limits.ArchiveDefaultRecords, limits.Bytes(limits.DefaultMaxOutputBytes))
}

func registerList(b *kernel.Builder, o ToolOptions) error {
	return kernel.AddTool(b, kernel.Policy{Name: "archive_list", Timeout: o.Timeout},
		kernel.Meta{
			Effect:      capability.TextArchiveRead,
			Title:       "List archive items",
			Summary:     "List a collection's items in the archive, each with its current version",
			Description: `Lists a collection's items in name order, each with its number of versions and its current version (name, digest, parts, characters, title). Titles and names are the sources' text, quoted. ` + recordsBound() + `.` + "\n" + `Example: {"collection": "papers"}`,
		},
		func(ctx context.Context, call *kernel.Call, in ListArgs) (Listing, error) {
			l, err := o.Archive.List(ctx, ListQuery{Collection: in.Collection, Limit: in.Limit, Offset: in.Offset})
			if err != nil {
				return Listing{}, err
			}
			cut := func(k int) Listing {
				w := *l
				w.Items = l.Items[:k]
				w.NextOffset = next(l.Offset, k, l.Total)
				return w
			}
			k, err := fit(call, len(l.Items), func(k int) any { return cut(k) }, "item")
			return cut(k), err
		})
}

func registerVersions(b *kernel.Builder, o ToolOptions) error {
	return kernel.AddTool(b, kernel.Policy{Name: "archive_versions", Timeout: o.Timeout},
		kernel.Meta{
			Effect:      capability.TextArchiveRead,
			Title:       "List an item's versions",
			Summary:     "List an archive item's versions, oldest first; every one stays citable",
			Description: `Lists an item's versions, oldest first: each one's name (v12), number, kind, digest, parts, characters, and whether it is current. Every version stays citable after newer ones. ` + recordsBound() + `.` + "\n" + `Example: {"collection": "papers", "item": "smith-2024"}`,
		},
		func(ctx context.Context, call *kernel.Call, in VersionsArgs) (VersionList, error) {
			l, err := o.Archive.Versions(ctx, VersionsQuery{Collection: in.Collection, Item: in.Item, Limit: in.Limit, Offset: in.Offset})
			if err != nil {
				return VersionList{}, err
			}
			cut := func(k int) VersionList {
				w := *l
				w.Versions = l.Versions[:k]
				w.NextOffset = next(l.Offset, k, l.Total)
				return w
			}
			k, err := fit(call, len(l.Versions), func(k int) any { return cut(k) }, "version")
			return cut(k), err
		})
}

func registerSearch(b *kernel.Builder, o ToolOptions) error {
	return kernel.AddTool(b, kernel.Policy{Name: "archive_search", Timeout: o.Timeout},
		kernel.Meta{
			Effect:      capability.TextArchiveRead,
			Title:       "Search the archive",
			Summary:     "Ranked full-text search (BM25) of the archive's current versions; each hit names its version and part to cite",
			Description: `Searches the text of every item's current version (BM25, higher scores first) and returns hits naming collection, item, version, part, page and the part's SHA-256, with an excerpt (matches in «»). Modes: "terms" (default) requires every word; "phrase" the words in order; "fts" takes SQLite FTS5 syntax (a malformed query fails with "invalid_input" naming the character). Cite a hit's text with archive_cite. ` + recordsBound() + `.` + "\n" + `Example: {"query": "quarterly revenue", "collection": "reports"}`,
		},
		func(ctx context.Context, call *kernel.Call, in SearchArgs) (SearchResult, error) {
			r, err := o.Archive.Search(ctx, SearchQuery{Text: in.Query, Mode: in.Mode, Collection: in.Collection, Limit: in.Limit, Offset: in.Offset, Snippets: !in.NoSnippets})
			if err != nil {
				return SearchResult{}, err
			}
			cut := func(k int) SearchResult {
				w := *r
				w.Hits = r.Hits[:k]
				if k < len(r.Hits) {
					w.NextOffset = r.Offset + k
				}
				return w
			}
			k, err := fit(call, len(r.Hits), func(k int) any { return cut(k) }, "hit")
			return cut(k), err
		})
}

func registerCite(b *kernel.Builder, o ToolOptions) error {
	return kernel.AddTool(b, kernel.Policy{Name: "archive_cite", Timeout: o.Timeout},
		kernel.Meta{
			Effect:  capability.TextArchiveRead,
			Title:   "Cite the archive",
			Summary: "Read and cite an exact span of a version's part (Unicode code points), with digests to check it later",
			Description: fmt.Sprintf(`Returns a span of one part of any version (current or not) as a citation: the version and its digest, the part and the SHA-256 of its whole text, the position (start, length in Unicode code points: "é" written as e plus an accent is two, CR LF is two) and the exact text with up to %d characters before and after. Read a long part window by window: next_start is where it goes on. At most %s characters, inside one part: a span that would pass the part's end ends there, and one past the output bound comes shorter, each with its position and next_start saying so.
Example: {"version": "v12", "part": 0, "start": 0, "length": 2000}`, limits.ArchiveQuoteContextChars, limits.Count(limits.ArchiveMaxCiteChars)),
		},
		func(ctx context.Context, call *kernel.Call, in CiteArgs) (Cited, error) {
			req := CiteRequest{Version: in.Version, Part: in.Part, Start: in.Start, Length: in.Length, UpToEnd: true}
			c, err := o.Archive.Cite(ctx, req)
			if err != nil {
				return Cited{}, err
			}
			if res, err := kernel.Encode(*c); err != nil || res.Size() <= call.MaxOutputBytes {
				return *c, err
			}
			n, err := toolkit.FitPrefix(call.MaxOutputBytes, int(in.Length), func(k int) any {
				r := req
				r.Length = int64(k)
				c, cerr := o.Archive.Cite(ctx, r)
				if k == 0 || cerr != nil {
					return Cited{}
				}
				return *c
			})
			if err != nil {
				return Cited{}, err
			}
			if n == 0 {
				return Cited{}, toolkit.UnitTooLarge(call, "a citation of one character", 0, "the citation's provenance nearly fills it")
			}
			req.Length = int64(n)
			c, err = o.Archive.Cite(ctx, req)
			if err != nil {
				return Cited{}, err
			}
			return *c, nil
		})
}

func registerFetch(b *kernel.Builder, o ToolOptions) error {
	p := o.Source.Policy
	return kernel.AddTool(b, kernel.Policy{Name: "archive_fetch", Timeout: p.fetch.Deadline() + limits.FetchSettleTimeout + limits.ArchiveSettleTimeout},
		kernel.Meta{
			Effect:  capability.TextArchiveFetch,
			Title:   "Fetch into the archive",
			Summary: "Fetch a public https URL under the archive's approved source policy and keep the result as a citable version",
			Description: fmt.Sprintf(`Fetches an https URL (GET) under the host's approved source policy and budget, and keeps the result as a version: the page's visible text (or a text body as it is) and, if the policy keeps originals, the body. Returns the version, the receipt (final URL, redirects, status, headers, SHA-256, budget charge) and, when an earlier attempt of the same request may have reached the server, a "repeat" saying so. Repeating a request that finished returns the kept result without fetching. Read the text with archive_cite (from the archive: never fetched again).
Only the policy's hosts (%d listed), at most %s a response, %d redirects and %ds; a spent budget fails with "deferred" and the wait.
Example: {"url": "https://example.org/report", "request": "report-2024-06"}`, len(p.Hosts), limits.Bytes(p.MaxResponseBytes), p.MaxRedirects, p.DeadlineSeconds),
		},
		func(ctx context.Context, call *kernel.Call, in FetchArgs) (Fetched, error) {
			task := o.Task
			if task == "" {
				task = call.Session.Actor()
			}
			out, err := o.Archive.Fetch(ctx, o.Source, FetchRequest{URL: in.URL, Collection: in.Collection, Item: in.Item, Request: in.Request, Task: task})
			if err != nil {
				return Fetched{}, err
			}
			return *out, nil
		})
}
