package textarchive

import (
	"fmt"
	"strconv"
	"strings"
)

// Results render as text for a person or a model. What a source or a
// caller wrote (titles, names, URLs, item and collection names) is shown
// as quoted strings: data, never text that reads as the archive's own.

func quoted(s string) string { return strconv.Quote(s) }

// line describes v on one line.
func (v *VersionInfo) line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s %s #%d, %s", v.Version, quoted(v.Collection), quoted(v.Item), v.Seq, v.Kind)
	if v.Current {
		b.WriteString(", current")
	}
	if v.Parts > 0 {
		fmt.Fprintf(&b, ", %d parts, %d characters", v.Parts, v.Chars)
	}
	if v.BlobSHA256 != "" {
		fmt.Fprintf(&b, ", %d bytes sha256 %s", v.Bytes, v.BlobSHA256)
	}
	if v.Name != "" {
		fmt.Fprintf(&b, ", name %s", quoted(v.Name))
	}
	if v.MediaType != "" {
		fmt.Fprintf(&b, ", %s", quoted(v.MediaType))
	}
	if v.Title != "" {
		fmt.Fprintf(&b, ", title %s", quoted(v.Title))
	}
	if v.SourceURL != "" {
		fmt.Fprintf(&b, ", from %s", quoted(v.SourceURL))
	}
	fmt.Fprintf(&b, ", digest %s, %s", v.Digest, v.Created)
	return b.String()
}

// ToolText is what a model reads.
func (r Added) ToolText() string {
	switch {
	case r.Repeated:
		return "request " + quoted(r.Request) + " was made before: its version, nothing added\n" + r.line()
	case r.Unchanged:
		return "the item's current version holds this content: nothing added\n" + r.line()
	}
	return "added " + r.line()
}

// ToolText is what a model reads.
func (l Listing) ToolText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "collection %s: %d items", quoted(l.Collection), l.Total)
	if len(l.Items) < int(l.Total) {
		fmt.Fprintf(&b, ", %d..%d shown", l.Offset+1, l.Offset+len(l.Items))
	}
	if l.NextOffset > 0 {
		fmt.Fprintf(&b, "; the next window is offset=%d", l.NextOffset)
	}
	b.WriteByte('\n')
	for _, it := range l.Items {
		fmt.Fprintf(&b, "%s (%d versions) %s\n", quoted(it.Item), it.Versions, it.Current.line())
	}
	return b.String()
}

// ToolText is what a model reads.
func (l VersionList) ToolText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "item %s of %s: %d versions", quoted(l.Item), quoted(l.Collection), l.Total)
	if l.NextOffset > 0 {
		fmt.Fprintf(&b, "; the next window is offset=%d", l.NextOffset)
	}
	b.WriteByte('\n')
	for _, v := range l.Versions {
		b.WriteString(v.line())
		b.WriteByte('\n')
	}
	return b.String()
}

// Text is the report for a person.
func (r *AuditReport) Text() string {
	var b strings.Builder
	kind := "full audit"
	if !r.Full {
		kind = fmt.Sprintf("sample audit of %g%% (seed %d)", r.SamplePercent, r.Seed)
	}
	c := r.Covered
	fmt.Fprintf(&b, "%s: %d of %d versions (%d parts), %d of %d referenced blobs (%d bytes), %d index entries",
		kind, c.Versions, c.TotalVersions, c.Parts, c.Blobs, c.TotalBlobs, c.BlobBytes, c.IndexEntries)
	var not []string
	for _, s := range []struct {
		done bool
		what string
	}{{c.Database, "the database's structure"}, {c.Chain, "the whole chain and its head"}, {c.Index, "the index's own consistency"}} {
		if !s.done {
			not = append(not, s.what)
		}
	}
	if len(not) > 0 {
		fmt.Fprintf(&b, "; not checked: %s", strings.Join(not, ", "))
	}
	b.WriteByte('\n')
	if r.Clean() {
		b.WriteString("no problems\n")
	}
	for _, p := range r.Problems {
		fix := "not repairable: restore from a backup"
		if p.Repairable {
			fix = "repairable: capkit archive rebuild"
		}
		fmt.Fprintf(&b, "problem: %s: %s (%s)\n", p.Object, p.Problem, fix)
	}
	if r.UnlistedProblems > 0 {
		fmt.Fprintf(&b, "problem: %d more not listed\n", r.UnlistedProblems)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	if r.UnlistedNotes > 0 {
		fmt.Fprintf(&b, "note: %d more not listed\n", r.UnlistedNotes)
	}
	return b.String()
}

// ToolText is what a model reads.
func (r SearchResult) ToolText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d hits for %s", len(r.Hits), r.Match)
	if r.Collection != "" {
		fmt.Fprintf(&b, " in %s", quoted(r.Collection))
	}
	if r.Offset > 0 || r.NextOffset > 0 {
		fmt.Fprintf(&b, "; ranks %d..%d shown", r.Offset+1, r.Offset+len(r.Hits))
	}
	if r.NextOffset > 0 {
		fmt.Fprintf(&b, "; more rank after them: offset=%d", r.NextOffset)
	}
	b.WriteByte('\n')
	for i, h := range r.Hits {
		fmt.Fprintf(&b, "%d. %s part %d of %s %s #%d (%d characters, score %.4g)", r.Offset+i+1, h.Version, h.Part, quoted(h.Collection), quoted(h.Item), h.Seq, h.PartChars, h.Score)
		if h.Page != "" {
			fmt.Fprintf(&b, ", page %s", quoted(h.Page))
		}
		if h.Title != "" {
			fmt.Fprintf(&b, ", title %s", quoted(h.Title))
		}
		b.WriteByte('\n')
		if h.Snippet != "" {
			fmt.Fprintf(&b, "   %s\n", quoted(h.Snippet))
		}
	}
	return b.String()
}

// ToolText is what a model reads: where the span is, and the citation
// (which holds the exact text once).
func (c Cited) ToolText() string {
	var b strings.Builder
	ci := c.Citation
	fmt.Fprintf(&b, "%s part %d of %d, characters %d..%d of %d", ci.Version, ci.Part, c.Parts, ci.Position.Start, ci.Position.Start+ci.Position.Length, ci.PartChars)
	if !c.Current {
		b.WriteString(" (a newer version of the item exists; this one stays citable)")
	}
	if c.NextStart > 0 {
		fmt.Fprintf(&b, "; the part goes on at start=%d", c.NextStart)
	} else if ci.Part+1 < c.Parts {
		fmt.Fprintf(&b, "; the part ends here, part=%d is next", ci.Part+1)
	}
	b.WriteByte('\n')
	for _, n := range c.Notes {
		b.WriteString("note: " + n + "\n")
	}
	b.WriteString("exact text: ")
	b.WriteString(quoted(ci.Quote.Exact))
	b.WriteByte('\n')
	return b.String()
}

// Text is the check's verdict for a person.
func (c Checked) Text() string {
	s := fmt.Sprintf("the citation holds: %s part %d", c.Version, c.Part)
	if !c.Current {
		s += " (a newer version of the item exists)"
	}
	return s
}

// ToolText is what a model reads: the version, its receipt and any
// disclosure of a repeat.
func (f Fetched) ToolText() string {
	var b strings.Builder
	if f.Repeated {
		b.WriteString("retained before (nothing fetched now): ")
	} else {
		fmt.Fprintf(&b, "fetched and retained (%s): ", f.Retention)
	}
	b.WriteString(f.line())
	b.WriteByte('\n')
	if f.Repeat != "" {
		b.WriteString("repeat: " + f.Repeat + "\n")
	}
	if f.TextNote != "" {
		b.WriteString("text: " + f.TextNote + "\n")
	}
	if f.Parts > 0 {
		fmt.Fprintf(&b, "read the text with archive_cite version=%s part=0 start=0 (windows come from the archive, not the network)\n", f.Version)
	}
	if f.Receipt != nil {
		b.WriteString(f.Receipt.Text())
		b.WriteByte('\n')
	}
	return b.String()
}

// Text describes a backup for a person.
func (r *BackupResult) Text() string {
	m := r.Manifest
	return fmt.Sprintf("backup of archive %s written to %s: %d versions (head %s), database %d bytes, %d blobs %d bytes\nmanifest sha256 %s (verify-backup and restore check it with --manifest-sha256)",
		m.Archive, r.File, m.Head.Seq, m.Head.Hash, m.Database.Bytes, m.Blobs.Count, m.Blobs.Bytes, r.ManifestSHA256)
}

// Text describes a restore or a verification for a person.
func (r *Restored) Text() string {
	m := r.Manifest
	what := "verified"
	if r.Dir != "" {
		what = "restored to " + r.Dir
	}
	return fmt.Sprintf("archive %s %s: every entry has its digest, %d versions (head %s), %d blobs %d bytes, and the archive audits clean",
		m.Archive, what, m.Head.Seq, m.Head.Hash, m.Blobs.Count, m.Blobs.Bytes)
}

// Text describes a migration for a person.
func (m *Migrated) Text() string {
	if m.From == m.To {
		return fmt.Sprintf("the archive is at schema %d already: nothing to do", m.To)
	}
	return fmt.Sprintf("migrated from schema %d to %d; the original database is kept at %s", m.From, m.To, m.Retained)
}

// Text describes a rebuild for a person.
func (r *Rebuilt) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rebuilt the index: %d parts of current versions", r.Indexed)
	if len(r.Unindexed) > 0 {
		fmt.Fprintf(&b, " (%d left out: their stored text does not verify)", len(r.Unindexed))
	}
	b.WriteByte('\n')
	for _, p := range r.Repaired {
		fmt.Fprintf(&b, "repaired: %s: %s\n", p.Object, p.Problem)
	}
	b.WriteString("after the rebuild, " + r.Audit.Text())
	return b.String()
}
