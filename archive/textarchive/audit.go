package textarchive

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/atfile"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/search/lexindex"
)

// AuditOptions select an audit. The zero value is a full audit.
type AuditOptions struct {
	// SamplePercent, between 0 (exclusive) and 100, audits about that
	// share of the versions and of the blobs, chosen at random (Seed), and
	// leaves out what only a whole pass can check (the database's
	// structure, the chain as a whole, the index's own consistency,
	// entries of no version, files of no version); zero or 100 is a full
	// audit.
	SamplePercent float64
	// Seed chooses the sample; zero draws one, which the report names.
	Seed uint64
}

// Problem is one thing an audit found wrong, named.
type Problem struct {
	// Object names what is wrong: "blob 3fa4…", "version v12",
	// "version v12 part 0", "index entry c/v12/0", "index", "chain at
	// v12", "database".
	Object  string `json:"object"`
	Problem string `json:"problem"`
	// Repairable says Rebuild can repair it from what the archive holds
	// (the index from the stored text; a fetched version's text from its
	// retained original).
	Repairable bool `json:"repairable"`
}

// Coverage says what an audit looked at.
type Coverage struct {
	Versions      int64 `json:"versions"`
	TotalVersions int64 `json:"total_versions"`
	Parts         int64 `json:"parts"`
	Blobs         int64 `json:"blobs"`
	TotalBlobs    int64 `json:"total_blobs"`
	BlobBytes     int64 `json:"blob_bytes"`
	IndexEntries  int64 `json:"index_entries"`
	// Database, Chain and Index say whether the database's structure
	// (SQLite's integrity check), the whole chain with its head, and the
	// index's own consistency (FTS5's integrity check, entries of no
	// current part) were checked: by full audits only.
	Database bool `json:"database"`
	Chain    bool `json:"chain"`
	Index    bool `json:"index"`
}

// AuditReport is what an audit found.
type AuditReport struct {
	Full          bool      `json:"full"`
	SamplePercent float64   `json:"sample_percent,omitzero"`
	Seed          uint64    `json:"seed,omitzero"`
	Covered       Coverage  `json:"covered"`
	Problems      []Problem `json:"problems"`
	// Notes are what is not wrong but worth knowing: staged blobs of
	// interrupted operations (cleanup removes them), files the archive
	// did not make, fetches whose outcome was never recorded.
	Notes []string `json:"notes"`
	// Unlisted counts the problems and notes past
	// limits.ArchiveAuditMaxListed of each, found but not listed.
	UnlistedProblems int64 `json:"unlisted_problems,omitzero"`
	UnlistedNotes    int64 `json:"unlisted_notes,omitzero"`
}

// Clean reports whether the audit found no problem.
func (r *AuditReport) Clean() bool { return len(r.Problems) == 0 }

func (r *AuditReport) problem(object, format string, repairable bool, args ...any) {
	if len(r.Problems) >= limits.ArchiveAuditMaxListed {
		r.UnlistedProblems++
		return
	}
	r.Problems = append(r.Problems, Problem{Object: object, Problem: fmt.Sprintf(format, args...), Repairable: repairable})
}

func (r *AuditReport) note(text string) {
	if len(r.Notes) >= limits.ArchiveAuditMaxListed {
		r.UnlistedNotes++
		return
	}
	r.Notes = append(r.Notes, text)
}

// Audit checks the archive: every blob re-hashed against its name, every
// version's text against its parts' SHA-256 and its manifest's digest,
// the chain of versions and its head, the index against the stored text
// of current versions, and the database's structure; or, with a sample,
// part of that (the report says which). It reads in one snapshot and
// changes nothing. A report with problems is returned with no error; the
// CLI exits 9 (integrity) on it.
func (a *Archive) Audit(ctx context.Context, o AuditOptions) (*AuditReport, error) {
	if o.SamplePercent < 0 || o.SamplePercent > 100 {
		return nil, fault.New(fault.InvalidInput, "the sample must be a percentage above 0 and at most 100")
	}
	r := &AuditReport{Full: o.SamplePercent == 0 || o.SamplePercent == 100, Problems: []Problem{}, Notes: []string{}}
	var pick func() bool
	if !r.Full {
		if o.Seed == 0 {
			o.Seed = rand.Uint64() | 1
		}
		rng := rand.New(rand.NewPCG(o.Seed, 0x5eed))
		r.SamplePercent, r.Seed = o.SamplePercent, o.Seed
		pick = func() bool { return rng.Float64()*100 < o.SamplePercent }
	}
	err := a.locked(func() error {
		return a.read(ctx, "auditing the archive", func(t *txn) error {
			au := &auditor{a: a, t: t, r: r, pick: pick, referenced: map[string]int64{}}
			return au.run()
		})
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

type auditor struct {
	a    *Archive
	t    *txn
	r    *AuditReport
	pick func() bool // nil: everything
	// referenced are the blobs versions name, with their sizes (a full
	// audit's, for the walk of the blob directory).
	referenced map[string]int64
	// noBlobs leaves the blobs out (a backup's snapshot: they are
	// re-hashed as they are copied).
	noBlobs bool
	// currentIndexed counts the index entries found for current parts
	// (each a distinct ref): when it is all the index holds, no entry is
	// of anything else.
	currentIndexed int64
}

func (au *auditor) run() error {
	if au.r.Full {
		if err := au.database(); err != nil {
			return err
		}
	}
	if err := au.versions(); err != nil {
		return err
	}
	if !au.noBlobs {
		if err := au.blobs(); err != nil {
			return err
		}
	}
	if au.r.Full {
		if err := au.index(); err != nil {
			return err
		}
	}
	return au.notes()
}

// database runs SQLite's integrity check and the archive's own
// cross-table checks.
func (au *auditor) database() error {
	rows, err := au.t.query(`PRAGMA integrity_check(20)`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var msg string
		if err := rows.Scan(&msg); err != nil {
			rows.Close()
			return err
		}
		switch {
		case msg == "ok":
		case lexindex.IsIndexMessage(msg):
			au.r.problem("index", "the full-text index does not match the text it holds: %s", true, msg)
		default:
			au.r.problem("database", "SQLite's integrity check: %s", false, msg)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	au.r.Covered.Database = true
	checks := []struct{ q, what string }{
		{`SELECT count(*) FROM requests WHERE version NOT IN (SELECT id FROM versions)`, "requests name versions the archive does not hold"},
		{`SELECT count(*) FROM items AS i WHERE NOT EXISTS (SELECT 1 FROM versions AS v WHERE v.id = i.current AND v.item = i.id AND v.seq = i.versions)`, "items whose current version is not their latest"},
		{`SELECT count(*) FROM versions AS v WHERE v.parts != (SELECT count(*) FROM parts AS p WHERE p.version = v.id)`, "versions whose parts are missing or extra"},
		{`SELECT count(*) FROM parts WHERE version NOT IN (SELECT id FROM versions)`, "parts of no version"},
	}
	for _, c := range checks {
		var n int64
		if err := au.t.row(c.q).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			au.r.problem("database", "%d %s", false, n, c.what)
		}
	}
	return nil
}

// versionRow is a version as stored.
type versionRow struct {
	id, seq, blobBytes, parts, chars, textBytes int64
	collection, item                            string
	kind, digest, title, sourceURL, name        string
	mediaType, receipt, request, created        string
	prev, hash                                  string
	blob                                        sql.NullString
	current                                     bool
}

const versionColumns = `v.id, v.seq, v.blob_bytes, v.parts, v.chars, v.text_bytes, c.name, i.name, v.kind, v.digest, v.title,
	v.source_url, v.name, v.media_type, v.receipt, v.request, v.created, v.prev, v.hash, v.blob, i.current = v.id
	FROM versions AS v JOIN items AS i ON i.id = v.item JOIN collections AS c ON c.id = i.collection`

func scanVersion(s interface{ Scan(...any) error }, v *versionRow) error {
	return s.Scan(&v.id, &v.seq, &v.blobBytes, &v.parts, &v.chars, &v.textBytes, &v.collection, &v.item, &v.kind, &v.digest,
		&v.title, &v.sourceURL, &v.name, &v.mediaType, &v.receipt, &v.request, &v.created, &v.prev, &v.hash, &v.blob, &v.current)
}

// versions checks each (sampled) version and, in a full audit, the
// chain's links in order and its head.
func (au *auditor) versions() error {
	if err := au.t.row(`SELECT count(*) FROM versions`).Scan(&au.r.Covered.TotalVersions); err != nil {
		return err
	}
	prev, last := "", int64(0)
	for after := int64(0); ; {
		batch, err := au.versionBatch(after)
		if err != nil || len(batch) == 0 {
			if err == nil && au.r.Full {
				err = au.chainHead(last, prev)
			}
			return err
		}
		checked := make([]*versionRow, 0, len(batch))
		for i := range batch {
			v := &batch[i]
			if err := au.t.ctx.Err(); err != nil {
				return err
			}
			if v.blob.Valid {
				au.referenced[v.blob.String] = v.blobBytes
			}
			if au.r.Full {
				au.link(v, last, prev)
			} else if !au.pick() {
				continue
			} else if err := au.sampledLink(v); err != nil {
				return err
			}
			prev, last = v.hash, v.id
			checked = append(checked, v)
		}
		if err := au.checkVersions(checked); err != nil {
			return err
		}
		after = batch[len(batch)-1].id
		prev, last = batch[len(batch)-1].hash, after
	}
}

func (au *auditor) versionBatch(after int64) ([]versionRow, error) {
	rows, err := au.t.query(`SELECT `+versionColumns+` WHERE v.id > ?1 ORDER BY v.id LIMIT 256`, after)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []versionRow
	for rows.Next() {
		var v versionRow
		if err := scanVersion(rows, &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// link checks v follows the version before it (number last, hash prev).
func (au *auditor) link(v *versionRow, last int64, prev string) {
	obj := "chain at " + versionRef(v.id)
	if last == 0 {
		prev = genesisHead[2:]
	}
	if v.id != last+1 {
		au.r.problem(obj, "versions %s to %s are missing", false, versionRef(last+1), versionRef(v.id-1))
	}
	if v.prev != prev {
		au.r.problem(obj, "the link does not name the version before it", false)
	}
	au.linkHash(v, obj)
}

func (au *auditor) linkHash(v *versionRow, obj string) {
	rec := chainRecord{Version: versionRef(v.id), Collection: v.collection, Item: v.item, Seq: v.seq, Kind: v.kind,
		Digest: v.digest, Request: v.request, Created: v.created}
	h, err := rec.link(v.id, v.prev)
	if err != nil || h != v.hash {
		au.r.problem(obj, "the version's record does not match its link's hash: it was changed after it was committed", false)
	}
}

// sampledLink checks a sampled version's own link and that the version
// before it names it.
func (au *auditor) sampledLink(v *versionRow) error {
	obj := "chain at " + versionRef(v.id)
	au.linkHash(v, obj)
	want := genesisHead[2:]
	if v.id > 1 {
		err := au.t.row(`SELECT hash FROM versions WHERE id = ?1`, v.id-1).Scan(&want)
		if err == sql.ErrNoRows {
			au.r.problem(obj, "version %s before it is missing", false, versionRef(v.id-1))
			return nil
		}
		if err != nil {
			return err
		}
	}
	if v.prev != want {
		au.r.problem(obj, "the link does not name the version before it", false)
	}
	return nil
}

func (au *auditor) chainHead(last int64, prev string) error {
	au.r.Covered.Chain = true
	h, err := au.t.head()
	if err != nil {
		au.r.problem("chain", "%s", false, fault.As(err).Message)
		return nil
	}
	if last == 0 {
		prev = genesisHead[2:]
	}
	if h.Seq != last || h.Hash != prev {
		au.r.problem("chain", "the head names version %s, but the last version is %s: versions were removed or added outside the archive", false, versionRef(h.Seq), versionRef(last))
	}
	return nil
}

// audited is a version being checked: its parts (their text checked and
// let go), what is wrong with them, and the parts whose index copy has
// the recorded SHA-256.
type audited struct {
	v        *versionRow
	parts    []storedPart
	bytes    int64
	problems []partProblem
	copies   map[int]bool
}

// checkVersions checks a batch of versions in two queries, not two a
// version: one ordered scan of their parts and one of their index
// entries, each checked while its rows stream.
func (au *auditor) checkVersions(vs []*versionRow) error {
	if len(vs) == 0 {
		return nil
	}
	avs, err := au.batchParts(vs)
	if err != nil {
		return err
	}
	if err := au.indexed(avs); err != nil {
		return err
	}
	for _, av := range avs {
		au.version(av)
	}
	return nil
}

// batchParts reads the parts of vs, in order, checking each part's text
// against its SHA-256 and length as it is read.
func (au *auditor) batchParts(vs []*versionRow) ([]*audited, error) {
	avs := make([]*audited, len(vs))
	byID := make(map[int64]*audited, len(vs))
	ids := make([]byte, 0, 8*len(vs))
	for i, v := range vs {
		avs[i] = &audited{v: v, copies: map[int]bool{}}
		byID[v.id] = avs[i]
		ids = strconv.AppendInt(append(ids, ','), v.id, 10)
	}
	ids[0] = '['
	rows, err := au.t.query(`SELECT version, idx, text, sha256, chars, page, method, warnings FROM parts
		WHERE version IN (SELECT value FROM json_each(?1)) ORDER BY version, idx`, string(ids)+"]")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		if err := au.t.ctx.Err(); err != nil {
			return nil, err
		}
		var id int64
		var r partRow
		if err := rows.Scan(&id, &r.idx, &r.text, &r.sha, &r.chars, &r.page, &r.method, &r.warnings); err != nil {
			return nil, err
		}
		av := byID[id]
		p, problems := r.check(id, len(av.parts))
		av.bytes += int64(len(r.text))
		p.Text = "" // checked: the manifest needs only its digest
		av.parts = append(av.parts, p)
		av.problems = append(av.problems, problems...)
	}
	return avs, rows.Err()
}

// version reports av's part problems and checks its parts' lengths and
// its manifest against its digest. Damaged stored text is repairable
// from a verified copy: the index's (a current version's text, when it
// still has the recorded SHA-256) or the retained original a fetched
// version's text was taken from.
func (au *auditor) version(av *audited) {
	v, parts := av.v, av.parts
	au.r.Covered.Versions++
	fromOriginal := v.kind == KindFetch && v.blob.Valid
	for _, p := range av.problems {
		au.r.problem(p.object, "%s", fromOriginal || p.idx >= 0 && av.copies[p.idx], p.problem)
	}
	au.r.Covered.Parts += int64(len(parts))
	var chars int64
	for _, p := range parts {
		chars += p.Chars
	}
	if int64(len(parts)) != v.parts || chars != v.chars || av.bytes != v.textBytes {
		au.r.problem("version "+versionRef(v.id), "its stored text does not have the recorded parts, characters and bytes", false)
	}
	if v.manifest(parts).digest() != v.digest {
		au.r.problem("version "+versionRef(v.id), "its manifest no longer has its digest", false)
	}
}

func (v *versionRow) manifest(parts []storedPart) *manifest {
	m := &manifest{Kind: v.kind, Title: v.title, SourceURL: v.sourceURL, Name: v.name, MediaType: v.mediaType,
		Blob: v.blob.String, BlobBytes: v.blobBytes, Parts: partManifests(parts)}
	if v.receipt != "" {
		m.ReceiptSHA256 = sha256String(v.receipt)
	}
	return m
}

type partProblem struct {
	object, problem string
	idx             int // the part's, or -1
}

// partRow is a part as stored.
type partRow struct {
	idx                               int
	chars                             int64
	text, sha, page, method, warnings string
}

// check returns the part, the at-th read of version id's, and what is
// wrong with it: warnings that do not decode, parts missing before it,
// text that does not have its recorded SHA-256 or length.
func (r *partRow) check(id int64, at int) (storedPart, []partProblem) {
	p := storedPart{Part: Part{Text: r.text, Page: Page(r.page), Method: r.method}, SHA256: r.sha, Chars: r.chars}
	obj := "version " + versionRef(id) + " part " + strconv.Itoa(r.idx)
	var problems []partProblem
	var err error
	if p.Warnings, err = parseWarnings(r.warnings); err != nil {
		problems = append(problems, partProblem{obj, "its warnings do not decode", -1})
	}
	if r.idx != at {
		problems = append(problems, partProblem{obj, "parts are missing before it", -1})
	}
	if sha256String(r.text) != r.sha || int64(utf8.RuneCountInString(r.text)) != r.chars {
		problems = append(problems, partProblem{obj, "its stored text does not match its SHA-256", r.idx})
	}
	return p, problems
}

// loadParts reads version id's parts, reporting those whose text does
// not have its recorded SHA-256 or length.
func (t *txn) loadParts(id int64) ([]storedPart, []partProblem, error) {
	rows, err := t.query(`SELECT idx, text, sha256, chars, page, method, warnings FROM parts WHERE version = ?1 ORDER BY idx`, id)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var parts []storedPart
	var problems []partProblem
	for rows.Next() {
		var r partRow
		if err := rows.Scan(&r.idx, &r.text, &r.sha, &r.chars, &r.page, &r.method, &r.warnings); err != nil {
			return nil, nil, err
		}
		p, pp := r.check(id, len(parts))
		parts = append(parts, p)
		problems = append(problems, pp...)
	}
	return parts, problems, rows.Err()
}

// indexed checks the index holds exactly the stored text of the parts of
// the current versions of avs, in one query, and records in each the
// parts whose index copy has the recorded SHA-256.
func (au *auditor) indexed(avs []*audited) error {
	type want struct {
		av   *audited
		i    int
		seen bool
	}
	var refs []string
	wants := map[string]*want{}
	for _, av := range avs {
		if !av.v.current {
			continue
		}
		for i := range av.parts {
			ref := indexRef(av.v.collection, av.v.id, i)
			refs = append(refs, ref)
			wants[ref] = &want{av: av, i: i}
		}
	}
	_, err := au.a.ix.Entries(au.t.ctx, refs, func(e lexindex.Entry) error {
		w := wants[e.Ref]
		w.seen = true
		au.r.Covered.IndexEntries++
		if int64(w.i) < w.av.v.parts {
			au.currentIndexed++
		}
		if sha := w.av.parts[w.i].SHA256; e.Digest == sha && sha256String(e.Text) == sha {
			w.av.copies[w.i] = true
			return nil
		}
		au.r.problem("index entry "+e.Ref, "the index holds other text than the stored part", true)
		return nil
	})
	if err != nil {
		return err
	}
	for _, ref := range refs {
		if !wants[ref].seen {
			au.r.problem("index entry "+ref, "the current version's part is not in the index", true)
		}
	}
	return nil
}

// index runs the index's own check and looks for entries of no current
// part.
func (au *auditor) index() error {
	au.r.Covered.Index = true
	// The database's integrity check ran FTS5's check of the index (a
	// full audit always runs both): the rows are what is left to check.
	if err := au.a.ix.CheckRows(au.t.ctx); err != nil {
		if fault.CodeOf(err) != fault.Integrity {
			return err
		}
		au.r.problem("index", "%s", true, fault.As(err).Message)
	}
	// Every entry the versions' check found is a distinct current part's:
	// when they are all the index holds, there is nothing else to look for.
	if n, err := au.a.ix.Count(au.t.ctx); err != nil || n == au.currentIndexed {
		return err
	}
	extra := 0
	for after := ""; ; {
		n := 0
		last, err := au.a.ix.Refs(au.t.ctx, after, 1024, func(ref, _ string) error {
			n++
			if !au.currentPart(ref) {
				extra++
				if extra <= 10 {
					au.r.problem("index entry "+ref, "the index holds text of no current version", true)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		after = last
	}
	if extra > 10 {
		au.r.problem("index", "%d more entries hold text of no current version", true, extra-10)
	}
	return nil
}

// currentPart reports whether ref names a part of a current version of
// its collection.
func (au *auditor) currentPart(ref string) bool {
	collection, rest, ok1 := strings.Cut(ref, "/")
	v, idx, ok2 := strings.Cut(rest, "/")
	id, err := parseVersionRef(v)
	n, nerr := strconv.Atoi(idx)
	if !ok1 || !ok2 || err != nil || nerr != nil || n < 0 {
		return false
	}
	var parts int64
	err = au.t.row(`SELECT v.parts FROM versions AS v JOIN items AS i ON i.id = v.item AND i.current = v.id
		JOIN collections AS c ON c.id = i.collection WHERE v.id = ?1 AND c.name = ?2`, id, collection).Scan(&parts)
	return err == nil && int64(n) < parts && indexRef(collection, id, n) == ref
}

// blobs re-hashes the blobs: in a full audit every file of the blob
// directory (and each referenced blob must be one), in a sample the
// sampled referenced ones.
func (au *auditor) blobs() error {
	if !au.r.Full {
		return au.sampledBlobs()
	}
	au.r.Covered.TotalBlobs = int64(len(au.referenced))
	found := map[string]bool{}
	err := au.walkBlobs(func(sha string, size int64) error {
		found[sha] = true
		want, ok := au.referenced[sha]
		if !ok {
			return au.unreferenced(sha)
		}
		return au.blob(sha, want)
	})
	if err != nil {
		return err
	}
	for sha := range au.referenced {
		if !found[sha] {
			au.r.problem("blob "+sha, "a version names it but the archive does not hold it", false)
		}
	}
	return nil
}

func (au *auditor) sampledBlobs() error {
	rows, err := au.t.query(`SELECT DISTINCT blob, blob_bytes FROM versions WHERE blob IS NOT NULL ORDER BY blob`)
	if err != nil {
		return err
	}
	type ref struct {
		sha  string
		size int64
	}
	var picked []ref
	for rows.Next() {
		var r ref
		if err := rows.Scan(&r.sha, &r.size); err != nil {
			rows.Close()
			return err
		}
		au.r.Covered.TotalBlobs++
		if au.pick() {
			picked = append(picked, r)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, r := range picked {
		if err := au.blob(r.sha, r.size); err != nil {
			return err
		}
	}
	return nil
}

// blob re-hashes one referenced blob.
func (au *auditor) blob(sha string, size int64) error {
	au.r.Covered.Blobs++
	au.r.Covered.BlobBytes += size
	err := au.a.checkBlob(au.t.ctx, sha, size)
	switch fault.CodeOf(err) {
	case "":
	case fault.Integrity:
		au.r.problem("blob "+sha, "its bytes no longer have that SHA-256", false)
	case fault.NotFound:
		au.r.problem("blob "+sha, "a version names it but the archive does not hold it", false)
	case fault.Denied, fault.InvalidInput:
		au.r.problem("blob "+sha, "%s", false, fault.As(err).Message)
	default:
		return err
	}
	return nil
}

// unreferenced notes a blob file no version names: one an interrupted
// operation staged (pending) or one the archive does not know.
func (au *auditor) unreferenced(sha string) error {
	var n int
	if err := au.t.row(`SELECT count(*) FROM pending WHERE blob = ?1`, sha).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		au.r.note("blob " + sha + " was staged by an operation that did not commit: capkit archive cleanup removes it")
		return nil
	}
	au.r.note("blob " + sha + " is named by no version and no staged operation: left in place")
	return nil
}

// walkBlobs calls fn with each file of the blob directory that has a
// blob's name in the right place; anything else there is noted.
func (au *auditor) walkBlobs(fn func(sha string, size int64) error) error {
	return eachName(au.t.ctx, au.a.fs, blobsDir, func(sub string) error {
		if atfile.IsStaging(sub) {
			return nil
		}
		st, err := au.a.fs.Lstat(blobsDir + "/" + sub)
		if err != nil || !st.IsDir() || len(sub) != 2 || !isBlobName(sub+strings.Repeat("0", 62)) {
			au.r.note("blobs/" + sub + " is not the archive's: left in place")
			return nil
		}
		return eachName(au.t.ctx, au.a.fs, blobsDir+"/"+sub, func(name string) error {
			if atfile.IsStaging(name) {
				return nil
			}
			fi, err := au.a.fs.Lstat(blobsDir + "/" + sub + "/" + name)
			if err != nil || !fi.Mode().IsRegular() || !isBlobName(name) || name[:2] != sub {
				au.r.note("blobs/" + sub + "/" + name + " is not the archive's: left in place")
				return nil
			}
			return fn(name, fi.Size())
		})
	})
}

// eachName calls fn with each name in the directory rel of r, in the
// directory's order, a batch at a time: no count bounds it.
func eachName(ctx context.Context, r *os.Root, rel string, fn func(string) error) error {
	d, err := r.OpenFile(rel, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return atfile.Fault(err, rel)
	}
	defer d.Close()
	for {
		if err := ctx.Err(); err != nil {
			return fault.As(err)
		}
		batch, err := d.Readdirnames(4096)
		for _, name := range batch {
			if err := fn(name); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return atfile.Fault(err, rel)
		}
	}
}

// notes adds what the archive knows of interrupted operations.
func (au *auditor) notes() error {
	var pending, uncertain int64
	if err := au.t.row(`SELECT count(*) FROM pending`).Scan(&pending); err != nil {
		return err
	}
	if err := au.t.row(`SELECT count(*) FROM fetches WHERE state = 'admitted'`).Scan(&uncertain); err != nil {
		return err
	}
	if pending > 0 {
		au.r.note(fmt.Sprintf("%d operations staged blobs and did not commit: capkit archive cleanup --preview lists them", pending))
	}
	if uncertain > 0 {
		au.r.note(fmt.Sprintf("%d fetches were admitted and their outcome never recorded: their request may have reached the server; a repeat says so", uncertain))
	}
	return nil
}

// ParsePercent reads a sample's share: "10%", "2.5%" or "10", above 0 and
// at most 100.
func ParsePercent(s string) (float64, error) {
	p, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil || !(p > 0 && p <= 100) {
		return 0, fault.New(fault.InvalidInput, "sample %q: give a percentage above 0 and at most 100, such as 10%%", s)
	}
	return p, nil
}
