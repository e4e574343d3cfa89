package textarchive

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"strconv"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/search/lexindex"
)

// The kinds of version.
const (
	KindText  = "text"
	KindFile  = "file"
	KindFetch = "fetch"
)

// TextRequest asks for a document to be kept as a version of an item.
type TextRequest struct {
	Collection string
	Item       string
	// Request is the caller's identity of this request: the same identity
	// with the same content returns the same version; with other content
	// it is a conflict.
	Request  string
	Document Document
}

// FileRequest asks for a file's bytes to be kept as a version of an
// item; Item empty means the file's name.
type FileRequest struct {
	Collection string
	Item       string
	Request    string
	Name       string
	MediaType  string
}

// Added is what an add returns: the version the request made or found.
type Added struct {
	VersionInfo
	// Repeated says the request identity was used before with this
	// content: its version is returned and nothing was added.
	Repeated bool `json:"repeated,omitempty"`
	// Unchanged says the item's current version held this content
	// already: it is returned for the new request and nothing was added.
	Unchanged bool `json:"unchanged,omitempty"`
}

// VersionInfo describes one version. Titles, names and URLs are the
// sources' or callers': untrusted text.
type VersionInfo struct {
	Version    string `json:"version"`
	Collection string `json:"collection"`
	Item       string `json:"item"`
	// Seq numbers the item's versions from 1.
	Seq  int64  `json:"seq"`
	Kind string `json:"kind"`
	// Digest is the SHA-256 of the version's canonical manifest (its
	// parts' SHA-256, labels, title, source, blob and receipt).
	Digest string `json:"digest"`
	// Current says this is the item's latest version.
	Current   bool   `json:"current"`
	Title     string `json:"title,omitempty"`
	SourceURL string `json:"source_url,omitempty"`
	Name      string `json:"name,omitempty"`
	MediaType string `json:"media_type,omitempty"`
	// BlobSHA256 and Bytes are the kept bytes of a file or of a fetched
	// body retained whole.
	BlobSHA256 string `json:"blob_sha256,omitempty"`
	Bytes      int64  `json:"bytes,omitzero"`
	// Parts and Chars count the text's parts and its Unicode code points.
	Parts   int    `json:"parts"`
	Chars   int64  `json:"chars"`
	Request string `json:"request"`
	Created string `json:"created"`
}

// AddText keeps req's document as a new version of its item (created if
// missing), unless the request identity was used before (its version is
// returned, or conflict) or the item's current version holds the same
// content (it is returned). The version, its text and its place in the
// index commit together or not at all.
func (a *Archive) AddText(ctx context.Context, req TextRequest) (*Added, error) {
	if err := checkTarget(req.Collection, req.Item, req.Request); err != nil {
		return nil, err
	}
	if err := req.Document.check(); err != nil {
		return nil, err
	}
	nv := newTextVersion(KindText, req.Collection, req.Item, req.Request, &req.Document)
	var out *Added
	err := a.locked(func() error {
		return a.write(ctx, "adding a version", func(t *txn) (err error) {
			out, err = a.commitVersion(t, nv, nil)
			if err == nil && out.Repeated == false && out.Unchanged == false {
				step("add.inserted")
			}
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	step("add.committed")
	return out, nil
}

func checkTarget(collection, item, request string) error {
	if err := checkCollection(collection); err != nil {
		return err
	}
	if err := checkItem(item); err != nil {
		return err
	}
	return checkRequest(request)
}

// newVersion is a version about to be committed.
type newVersion struct {
	kind, collection, item, request   string
	title, sourceURL, name, mediaType string
	blob                              string
	blobBytes                         int64
	receipt                           string
	parts                             []storedPart
	digest                            string
}

func newTextVersion(kind, collection, item, request string, d *Document) *newVersion {
	nv := &newVersion{kind: kind, collection: collection, item: item, request: request,
		title: d.Title, sourceURL: d.SourceURL, parts: d.measure()}
	nv.seal()
	return nv
}

// seal computes nv's digest.
func (nv *newVersion) seal() {
	m := manifest{Kind: nv.kind, Title: nv.title, SourceURL: nv.sourceURL, Name: nv.name, MediaType: nv.mediaType,
		Blob: nv.blob, BlobBytes: nv.blobBytes, Parts: partManifests(nv.parts)}
	if nv.receipt != "" {
		m.ReceiptSHA256 = sha256String(nv.receipt)
	}
	nv.digest = m.digest()
}

func (nv *newVersion) chars() int64 {
	var n int64
	for _, p := range nv.parts {
		n += p.Chars
	}
	return n
}

func (nv *newVersion) textBytes() int64 {
	var n int64
	for _, p := range nv.parts {
		n += int64(len(p.Text))
	}
	return n
}

// commitVersion records nv inside t: the repeat of a request, the item's
// unchanged current version, or a new version, its parts, its link of
// the chain and its place in the index. publish, when set, runs once the
// version is known to be new, before anything is written (a blob's
// publication).
func (a *Archive) commitVersion(t *txn, nv *newVersion, publish func() error) (*Added, error) {
	if out, err := a.repeated(t, nv); out != nil || err != nil {
		return out, err
	}
	itemID, current, seq, err := ensureItem(t, nv.collection, nv.item)
	if err != nil {
		return nil, err
	}
	if current != 0 {
		var digest, kind string
		if err := t.row(`SELECT digest, kind FROM versions WHERE id = ?1`, current).Scan(&digest, &kind); err != nil {
			return nil, err
		}
		if digest == nv.digest && kind == nv.kind {
			if err := recordRequest(t, nv, current); err != nil {
				return nil, err
			}
			info, err := versionInfo(t, current)
			if err != nil {
				return nil, err
			}
			return &Added{VersionInfo: *info, Unchanged: true}, nil
		}
	}
	if publish != nil {
		if err := publish(); err != nil {
			return nil, err
		}
	}
	id, err := a.insertVersion(t, nv, itemID, seq+1)
	if err != nil {
		return nil, err
	}
	if err := a.reindex(t, nv, current, id); err != nil {
		return nil, err
	}
	if err := t.exec(`UPDATE items SET current = ?2, versions = ?3 WHERE id = ?1`, itemID, id, seq+1); err != nil {
		return nil, err
	}
	if err := recordRequest(t, nv, id); err != nil {
		return nil, err
	}
	info, err := versionInfo(t, id)
	if err != nil {
		return nil, err
	}
	return &Added{VersionInfo: *info}, nil
}

// repeated returns the version of an earlier request with nv's identity
// and content, or conflict when its content was other.
func (a *Archive) repeated(t *txn, nv *newVersion) (*Added, error) {
	var kind, collection, item, digest string
	var version int64
	err := t.row(`SELECT kind, collection, item, digest, version FROM requests WHERE request = ?1`, nv.request).
		Scan(&kind, &collection, &item, &digest, &version)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if kind != nv.kind || collection != nv.collection || item != nv.item || digest != nv.digest {
		what := "other content"
		switch {
		case collection != nv.collection || item != nv.item:
			what = "collection " + strconv.Quote(clip.Text(collection)) + ", item " + strconv.Quote(clip.Text(item))
		case kind != nv.kind:
			what = "a version of kind " + kind
		}
		return nil, fault.New(fault.Conflict, "request %q was made before with %s (version %s): a new request needs a new identity", clip.Text(nv.request), what, versionRef(version))
	}
	info, err := versionInfo(t, version)
	if err != nil {
		return nil, err
	}
	return &Added{VersionInfo: *info, Repeated: true}, nil
}

func recordRequest(t *txn, nv *newVersion, version int64) error {
	return t.exec(`INSERT INTO requests(request, kind, collection, item, digest, version) VALUES (?1, ?2, ?3, ?4, ?5, ?6)`,
		nv.request, nv.kind, nv.collection, nv.item, nv.digest, version)
}

// ensureItem returns the item's id, its current version (0 for a new
// item) and its number of versions, creating the collection and the item
// as needed.
func ensureItem(t *txn, collection, item string) (id, current, versions int64, err error) {
	var cid int64
	err = t.row(`SELECT id FROM collections WHERE name = ?1`, collection).Scan(&cid)
	if errors.Is(err, sql.ErrNoRows) {
		err = t.row(`INSERT INTO collections(name) VALUES (?1) RETURNING id`, collection).Scan(&cid)
	}
	if err != nil {
		return 0, 0, 0, err
	}
	err = t.row(`SELECT id, current, versions FROM items WHERE collection = ?1 AND name = ?2`, cid, item).Scan(&id, &current, &versions)
	if errors.Is(err, sql.ErrNoRows) {
		err = t.row(`INSERT INTO items(collection, name, current, versions) VALUES (?1, ?2, 0, 0) RETURNING id`, cid, item).Scan(&id)
	}
	return id, current, versions, err
}

// insertVersion writes version number seq of item as the chain's next
// link, with its parts, and moves the chain's head to it.
func (a *Archive) insertVersion(t *txn, nv *newVersion, item, seq int64) (int64, error) {
	h, err := t.head()
	if err != nil {
		return 0, err
	}
	id := h.Seq + 1
	created := a.stamp()
	rec := chainRecord{Version: versionRef(id), Collection: nv.collection, Item: nv.item, Seq: seq,
		Kind: nv.kind, Digest: nv.digest, Request: nv.request, Created: created}
	hash, err := rec.link(id, h.Hash)
	if err != nil {
		return 0, err
	}
	var blob any
	if nv.blob != "" {
		blob = nv.blob
	}
	if err := t.exec(`INSERT INTO versions(id, item, seq, kind, digest, title, source_url, name, media_type, blob, blob_bytes,
		receipt, parts, chars, text_bytes, request, created, prev, hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)`,
		id, item, seq, nv.kind, nv.digest, nv.title, nv.sourceURL, nv.name, nv.mediaType, blob, nv.blobBytes,
		nv.receipt, len(nv.parts), nv.chars(), nv.textBytes(), nv.request, created, h.Hash, hash); err != nil {
		return 0, err
	}
	for i, p := range nv.parts {
		if i%64 == 0 {
			if err := t.ctx.Err(); err != nil {
				return 0, err
			}
		}
		if err := t.exec(`INSERT INTO parts(version, idx, text, sha256, chars, page, method, warnings) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)`,
			id, i, p.Text, p.SHA256, p.Chars, string(p.Page), p.Method, warningsJSON(p.Warnings)); err != nil {
			return 0, err
		}
	}
	return id, t.setMeta("head", head{Seq: id, Hash: hash}.String())
}

// indexRef is the index's name for part idx of version id of
// collection: the collection first, so a search of one collection is a
// ref prefix.
func indexRef(collection string, id int64, idx int) string {
	return collection + "/" + versionRef(id) + "/" + strconv.Itoa(idx)
}

// reindex makes the index hold version id's parts in place of the old
// current version's (none when old is 0).
func (a *Archive) reindex(t *txn, nv *newVersion, old, id int64) error {
	var batch []lexindex.Mutation
	if old != 0 {
		var n int
		if err := t.row(`SELECT parts FROM versions WHERE id = ?1`, old).Scan(&n); err != nil {
			return err
		}
		for i := range n {
			batch = append(batch, lexindex.Mutation{Ref: indexRef(nv.collection, old, i), Remove: true})
		}
	}
	for i, p := range nv.parts {
		batch = append(batch, lexindex.Mutation{Ref: indexRef(nv.collection, id, i), Text: p.Text, Digest: p.SHA256})
	}
	if len(batch) == 0 {
		return nil
	}
	_, err := a.ix.Apply(t.ctx, batch)
	return err
}

// versionInfo describes version id.
func versionInfo(t *txn, id int64) (*VersionInfo, error) {
	v := &VersionInfo{Version: versionRef(id)}
	var blob sql.NullString
	var current int64
	err := t.row(`SELECT c.name, i.name, v.seq, v.kind, v.digest, i.current, v.title, v.source_url, v.name, v.media_type,
			v.blob, v.blob_bytes, v.parts, v.chars, v.request, v.created
		FROM versions AS v JOIN items AS i ON i.id = v.item JOIN collections AS c ON c.id = i.collection WHERE v.id = ?1`, id).
		Scan(&v.Collection, &v.Item, &v.Seq, &v.Kind, &v.Digest, &current, &v.Title, &v.SourceURL, &v.Name, &v.MediaType,
			&blob, &v.Bytes, &v.Parts, &v.Chars, &v.Request, &v.Created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(fault.NotFound, "no version %s in this archive", versionRef(id))
	}
	if err != nil {
		return nil, err
	}
	v.Current, v.BlobSHA256 = current == id, blob.String
	return v, nil
}

// AddFile keeps the bytes src yields (at most limits.ArchiveMaxFileBytes)
// as a new version of its item, content-addressed by SHA-256 and stored
// once, under the rules of AddText. The bytes are staged and made
// durable first; the blob is published and the version committed in one
// write transaction, so a crash leaves the archive as before (and at
// most a staged blob cleanup knows) or as after. The bytes are never
// executed, interpreted or published anywhere else.
func (a *Archive) AddFile(ctx context.Context, req FileRequest, src io.Reader) (*Added, error) {
	if req.Item == "" {
		req.Item = req.Name
	}
	if err := checkFile(req); err != nil {
		return nil, err
	}
	st, err := a.stageBlob(ctx, src, limits.ArchiveMaxFileBytes, "file")
	if err != nil {
		return nil, err
	}
	defer st.discard()
	nv := &newVersion{kind: KindFile, collection: req.Collection, item: req.Item, request: req.Request,
		name: req.Name, mediaType: req.MediaType, blob: st.sha, blobBytes: st.size, parts: []storedPart{}}
	nv.seal()
	return a.commitBlobVersion(ctx, nv, st, "add", nil)
}

func checkFile(req FileRequest) error {
	if err := checkTarget(req.Collection, req.Item, req.Request); err != nil {
		return err
	}
	if err := checkFileName(req.Name); err != nil {
		return err
	}
	return checkMediaType(req.MediaType)
}

// commitBlobVersion records the staged blob as pending, then publishes it
// and commits nv in one write transaction, with what finish (when set)
// records beside it. op names the steps.
func (a *Archive) commitBlobVersion(ctx context.Context, nv *newVersion, st *staged, op string, finish func(*txn, *Added) error) (*Added, error) {
	var out *Added
	err := a.locked(func() error {
		if err := a.write(ctx, "recording a staged blob", func(t *txn) error { return st.record(t) }); err != nil {
			return err
		}
		step(op + ".pending")
		published := false
		err := a.write(ctx, "adding a version", func(t *txn) (err error) {
			out, err = a.commitVersion(t, nv, func() error {
				if err := a.publishBlob(st); err != nil {
					return err
				}
				published = true
				step(op + ".published")
				return nil
			})
			if err == nil {
				err = st.forget(t)
			}
			if err == nil && finish != nil {
				err = finish(t, out)
			}
			if err == nil && !out.Repeated && !out.Unchanged {
				step(op + ".inserted")
			}
			return err
		})
		if err != nil && !published {
			// Nothing was published: the pending record names nothing.
			a.write(context.WithoutCancel(ctx), "forgetting a staged blob", st.forget)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	step(op + ".committed")
	return out, nil
}
