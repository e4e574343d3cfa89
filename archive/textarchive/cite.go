package textarchive

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/rivo/uniseg"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/limits"
)

// CiteRequest names a span of one part of one version: Start and Length
// in Unicode code points.
type CiteRequest struct {
	Version string
	Part    int
	Start   int64
	Length  int64
	// UpToEnd ends a span that would pass the part's end there (the
	// citation's position says where) instead of refusing it: for a
	// reader going through a part window by window.
	UpToEnd bool
}

// CitationFormat is the format of a Citation.
const CitationFormat = 1

// Citation says exactly what a span is and where it came from: its
// version (by name and digest), its part (by index and the SHA-256 of its
// whole text), a position selector (code points) and a quote selector
// (the exact text, with a little of what comes before and after), with
// the part's and the version's provenance. Check verifies it against an
// archive later.
type Citation struct {
	Format        int      `json:"format"`
	Archive       string   `json:"archive"`
	Collection    string   `json:"collection"`
	Item          string   `json:"item"`
	Version       string   `json:"version"`
	Seq           int64    `json:"seq"`
	VersionDigest string   `json:"version_digest"`
	Part          int      `json:"part"`
	PartSHA256    string   `json:"part_sha256"`
	PartChars     int64    `json:"part_chars"`
	Position      Position `json:"position"`
	Quote         Quote    `json:"quote"`
	Page          string   `json:"page,omitempty"`
	Method        string   `json:"method,omitempty"`
	Warnings      []string `json:"warnings,omitempty"`
	Title         string   `json:"title,omitempty"`
	SourceURL     string   `json:"source_url,omitempty"`
}

// Position is a span of a part: [Start, Start+Length) in code points.
type Position struct {
	Start  int64 `json:"start"`
	Length int64 `json:"length"`
}

// Quote is the span's exact text and up to
// limits.ArchiveQuoteContextChars code points before and after it.
type Quote struct {
	Exact  string `json:"exact"`
	Prefix string `json:"prefix"`
	Suffix string `json:"suffix"`
}

// Cited is a citation with what the archive knows of it now.
type Cited struct {
	Citation Citation `json:"citation"`
	// Current says the version is its item's latest.
	Current bool `json:"current"`
	// NextStart, when set, is where the part goes on after the span.
	NextStart int64 `json:"next_start,omitzero"`
	// Parts counts the version's parts.
	Parts int `json:"parts"`
	// Notes say where the span's ends cut a user-perceived character (a
	// base and its combining marks, an emoji sequence, CR LF): the span
	// is exact in code points all the same.
	Notes []string `json:"notes,omitempty"`
}

// Cite returns the span req names, never text of another version: at
// most limits.ArchiveMaxCiteChars code points inside one part.
func (a *Archive) Cite(ctx context.Context, req CiteRequest) (*Cited, error) {
	id, err := parseVersionRef(req.Version)
	if err != nil {
		return nil, err
	}
	switch {
	case req.Length < 1:
		return nil, fault.New(fault.InvalidInput, "length must be at least 1 character")
	case req.Length > limits.ArchiveMaxCiteChars:
		return nil, fault.LimitExceeded("citation length in characters", limits.ArchiveMaxCiteChars, req.Length)
	case req.Start < 0 || req.Part < 0:
		return nil, fault.New(fault.InvalidInput, "part and start must not be negative")
	}
	var out *Cited
	err = a.locked(func() error {
		return a.read(ctx, "citing", func(t *txn) error {
			c, text, err := a.citable(t, id, req.Part)
			if err != nil {
				return err
			}
			if req.UpToEnd && req.Start < c.Citation.PartChars {
				req.Length = min(req.Length, c.Citation.PartChars-req.Start)
			}
			if req.Start+req.Length > c.Citation.PartChars {
				return fault.New(fault.InvalidInput, "the span %d..%d crosses the end of part %d, which has %d characters: a citation stays inside one part (cite the next part separately)",
					req.Start, req.Start+req.Length, req.Part, c.Citation.PartChars)
			}
			b0, b1 := spanBytes(text, req.Start, req.Length)
			c.Citation.Position = Position{Start: req.Start, Length: req.Length}
			c.Citation.Quote = quoteAt(text, b0, b1)
			c.Notes = boundaryNotes(text, b0, b1)
			if end := req.Start + req.Length; end < c.Citation.PartChars {
				c.NextStart = end
			}
			out = c
			return nil
		})
	})
	return out, err
}

// citable reads version id's part idx and what a citation of it names.
func (a *Archive) citable(t *txn, id int64, idx int) (*Cited, string, error) {
	info, err := versionInfo(t, id)
	if err != nil {
		return nil, "", err
	}
	c := &Cited{Current: info.Current, Parts: info.Parts, Citation: Citation{Format: CitationFormat, Archive: a.id,
		Collection: info.Collection, Item: info.Item, Version: info.Version, Seq: info.Seq, VersionDigest: info.Digest,
		Part: idx, Title: info.Title, SourceURL: info.SourceURL}}
	if info.Parts == 0 {
		return nil, "", fault.New(fault.InvalidInput, "version %s holds no text (a %s): there is nothing to cite", info.Version, info.Kind)
	}
	if idx >= info.Parts {
		return nil, "", fault.New(fault.NotFound, "version %s has parts 0..%d, not %d", info.Version, info.Parts-1, idx)
	}
	var text, warnings string
	err = t.row(`SELECT text, sha256, chars, page, method, warnings FROM parts WHERE version = ?1 AND idx = ?2`, id, idx).
		Scan(&text, &c.Citation.PartSHA256, &c.Citation.PartChars, &c.Citation.Page, &c.Citation.Method, &warnings)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", fault.New(fault.Integrity, "version %s part %d is missing: run capkit archive audit", info.Version, idx)
	}
	if err != nil {
		return nil, "", err
	}
	if sha256String(text) != c.Citation.PartSHA256 {
		return nil, "", fault.New(fault.Integrity, "version %s part %d: its stored text no longer has its SHA-256, so no span of it is cited (capkit archive audit and rebuild)", info.Version, idx)
	}
	if c.Citation.Warnings, err = parseWarnings(warnings); err != nil {
		return nil, "", err
	}
	if len(c.Citation.Warnings) == 0 {
		c.Citation.Warnings = nil
	}
	return c, text, nil
}

// spanBytes is the byte range of the span [start, start+length) in code
// points of text, which holds at least start+length code points.
func spanBytes(text string, start, length int64) (int, int) {
	b0 := runeOffset(text, 0, start)
	return b0, runeOffset(text, b0, length)
}

// runeOffset is the byte offset n code points after byte offset from.
func runeOffset(text string, from int, n int64) int {
	i := from
	for ; n > 0 && i < len(text); n-- {
		if text[i] < utf8.RuneSelf {
			i++
			continue
		}
		_, size := utf8.DecodeRuneInString(text[i:])
		i += size
	}
	return i
}

// quoteAt is the quote selector of text[b0:b1].
func quoteAt(text string, b0, b1 int) Quote {
	p := b0
	for k := 0; k < limits.ArchiveQuoteContextChars && p > 0; k++ {
		_, size := utf8.DecodeLastRuneInString(text[:p])
		p -= size
	}
	s := runeOffset(text, b1, limits.ArchiveQuoteContextChars)
	return Quote{Exact: text[b0:b1], Prefix: text[p:b0], Suffix: text[b1:s]}
}

// boundaryNotes says where b0 or b1 cuts a grapheme cluster.
func boundaryNotes(text string, b0, b1 int) []string {
	var notes []string
	if !isBoundary(text, b0) {
		notes = append(notes, "the span starts inside a user-perceived character (a combining mark, an emoji sequence or CR LF)")
	}
	if !isBoundary(text, b1) {
		notes = append(notes, "the span ends inside a user-perceived character (a combining mark, an emoji sequence or CR LF)")
	}
	return notes
}

// isBoundary reports whether byte offset b of text is a grapheme cluster
// boundary. A break always follows a line feed (UAX #29, GB4), so the
// clusters are followed from the last one before b.
func isBoundary(text string, b int) bool {
	if b == 0 || b == len(text) {
		return true
	}
	from := strings.LastIndexByte(text[:b], '\n') + 1
	rest, at, state := text[from:], from, -1
	for at < b && rest != "" {
		var cluster string
		cluster, rest, _, state = uniseg.FirstGraphemeClusterInString(rest, state)
		at += len(cluster)
	}
	return at == b
}

// ParseCitation reads a citation, or the result of Cite that holds one,
// strictly (unknown members, duplicate names, invalid UTF-8 and values of
// the wrong type refused with their position), at most
// limits.ArchiveMaxCitationBytes.
func ParseCitation(data []byte) (*Citation, error) {
	if len(data) > limits.ArchiveMaxCitationBytes {
		return nil, fault.LimitExceeded("citation bytes", limits.ArchiveMaxCitationBytes, int64(len(data)))
	}
	// What cite --json prints (a Cited) holds the citation too.
	var cited Cited
	var c Citation
	if strictJSON(data, &cited, "citation") == nil && cited.Citation.Format != 0 {
		c = cited.Citation
	} else if err := strictJSON(data, &c, "citation"); err != nil {
		return nil, err
	}
	switch {
	case c.Format != CitationFormat:
		return nil, fault.New(fault.InvalidInput, "citation: \"format\" must be %d", CitationFormat)
	case c.Position.Start < 0 || c.Position.Length < 1 || c.Position.Length > limits.ArchiveMaxCiteChars:
		return nil, fault.New(fault.InvalidInput, "citation: the position must start at 0 or later and be 1 to %d characters long", limits.ArchiveMaxCiteChars)
	case c.Part < 0:
		return nil, fault.New(fault.InvalidInput, "citation: the part must not be negative")
	case int64(utf8.RuneCountInString(c.Quote.Exact)) != c.Position.Length:
		return nil, fault.New(fault.InvalidInput, "citation: the quote's exact text is not as long as its position says")
	}
	if _, err := parseVersionRef(c.Version); err != nil {
		return nil, err
	}
	return &c, nil
}

// Checked is a citation verified against the archive.
type Checked struct {
	Version string `json:"version"`
	Part    int    `json:"part"`
	// Current says the cited version is still its item's latest; a cited
	// version stays valid after newer ones.
	Current bool `json:"current"`
}

// Check verifies c against the archive: the same archive, the version
// with its digest, the part with its SHA-256, and at the position the
// quote's exact text, prefix and suffix. Anything else is integrity,
// naming what differs; a version the archive does not hold is
// not_found.
func (a *Archive) Check(ctx context.Context, c *Citation) (*Checked, error) {
	if c.Archive != a.id {
		return nil, fault.New(fault.Integrity, "the citation is of archive %s, not of this one (%s)", clip.Text(c.Archive), a.id)
	}
	id, err := parseVersionRef(c.Version)
	if err != nil {
		return nil, err
	}
	var out *Checked
	err = a.locked(func() error {
		return a.read(ctx, "checking a citation", func(t *txn) error {
			now, text, err := a.citable(t, id, c.Part)
			if err != nil {
				return err
			}
			if err := compare(c, &now.Citation, text); err != nil {
				return err
			}
			out = &Checked{Version: c.Version, Part: c.Part, Current: now.Current}
			return nil
		})
	})
	return out, err
}

// compare holds the citation c to the part as stored (now, text).
func compare(c, now *Citation, text string) error {
	bad := func(what string) error {
		return fault.New(fault.Integrity, "the citation does not hold: %s", what)
	}
	switch {
	case c.Collection != now.Collection || c.Item != now.Item || c.Seq != now.Seq:
		return bad("the version belongs to another item than it names")
	case c.VersionDigest != now.VersionDigest:
		return bad("the version's digest differs")
	case c.PartSHA256 != now.PartSHA256:
		return bad("the part's SHA-256 differs")
	case c.Position.Start+c.Position.Length > now.PartChars:
		return bad("the position is past the part's end")
	}
	b0, b1 := spanBytes(text, c.Position.Start, c.Position.Length)
	q := quoteAt(text, b0, b1)
	switch {
	case q.Exact != c.Quote.Exact:
		return bad("the text at the position is not the quote's exact text")
	case !strings.HasSuffix(q.Prefix, c.Quote.Prefix) || !strings.HasPrefix(q.Suffix, c.Quote.Suffix):
		return bad("the text around the position is not the quote's prefix and suffix")
	}
	return nil
}
