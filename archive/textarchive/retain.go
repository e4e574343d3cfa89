package textarchive

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net"
	"strings"
	"unicode/utf8"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/net/budget"
	"github.com/capkit/capkit/net/fetch"
	"github.com/capkit/capkit/parse/htmldoc"
)

// Source is where retained fetches come from: an approved source policy
// and the budget its group is admitted under (opened with the policy's
// Budget; nil fetches without one).
type Source struct {
	Policy *SourcePolicy
	Budget *budget.Budget
	// Resolver resolves host names; nil is the system's. The destination
	// guard checks every address dialled whatever it answers.
	Resolver *net.Resolver
}

// FetchRequest asks for url to be fetched and retained as a version.
type FetchRequest struct {
	URL string
	// Collection defaults to the policy's group, Item to the URL.
	Collection, Item string
	// Request is the operation's identity: a repeat returns the retained
	// result, or fetches again and says what an earlier attempt may have
	// done.
	Request string
	// Task is the stable task identity budget charges go to.
	Task string
}

// Fetched is a retained fetch: the version it made (or found) and its
// receipt.
type Fetched struct {
	Added
	Receipt   *fetch.Receipt `json:"receipt"`
	Retention string         `json:"retention"`
	// Attempts counts the times this operation was admitted, this one
	// included (1 for a first fetch; a retained result returned again
	// keeps its count).
	Attempts int `json:"attempts"`
	// Repeat, when set, discloses that an earlier attempt of this
	// operation may have reached the server: it was admitted and either
	// ended without a recorded outcome (a crash after its request was
	// sent, say) or failed after its request may have been sent. The GET
	// may thus have been made more than once.
	Repeat string `json:"repeat,omitempty"`
	// TextNote says why a body retained whole has no text.
	TextNote string `json:"text_note,omitempty"`
}

// The states of a fetch operation.
const (
	fetchAdmitted = "admitted" // its request may be in flight or done
	fetchFailed   = "failed"   // it failed; outcome says how
	fetchDone     = "done"     // it made or found its version
)

// fetchOp is a fetch operation as recorded.
type fetchOp struct {
	url, policy, collection, item, state string
	attempts                             int
	uncertain                            bool
	started, outcome                     string
	version                              sql.NullInt64
}

// Fetch fetches req.URL under the source's policy and budget and retains
// the result as a version. The archive owns the operation: it is admitted
// (recorded durably) before any request is sent, and its outcome and
// receipt are recorded with the version it makes, so a repeat of
// req.Request returns the retained result without fetching again; a
// repeat of an operation that may have reached the server without a
// retained result fetches again and says so (Fetched.Repeat).
func (a *Archive) Fetch(ctx context.Context, src *Source, req FetchRequest) (*Fetched, error) {
	if src == nil || src.Policy == nil {
		return nil, fault.New(fault.InvalidInput, "a fetch needs an approved source policy")
	}
	if req.Collection == "" {
		req.Collection = src.Policy.Group
	}
	if req.Item == "" {
		req.Item = req.URL
	}
	if err := checkTarget(req.Collection, req.Item, req.Request); err != nil {
		return nil, err
	}
	if err := checkText("task", req.Task, limits.ArchiveMaxNameBytes, src.Budget != nil); err != nil {
		return nil, err
	}
	op, done, err := a.admit(ctx, src.Policy, req)
	if err != nil || done != nil {
		return done, err
	}
	step("fetch.admitted")
	out, reached, err := a.fetchAndRetain(ctx, src, req, op)
	if err != nil {
		a.recordFailure(ctx, req.Request, err, reached)
		return nil, err
	}
	step("fetch.committed")
	return out, nil
}

// admit records the operation before anything is sent: a new one, or
// another attempt of one that did not make its version (noting that an
// earlier attempt may have reached the server). A done operation's
// retained result is returned instead.
func (a *Archive) admit(ctx context.Context, p *SourcePolicy, req FetchRequest) (*fetchOp, *Fetched, error) {
	var op *fetchOp
	var done *Fetched
	err := a.locked(func() error {
		return a.write(ctx, "admitting a fetch", func(t *txn) error {
			prev, err := loadFetch(t, req.Request)
			if err != nil {
				return err
			}
			now := a.stamp()
			if prev == nil {
				op = &fetchOp{url: req.URL, policy: p.digest, collection: req.Collection, item: req.Item, state: fetchAdmitted, attempts: 1, started: now}
				return t.exec(`INSERT INTO fetches(request, url, policy, collection, item, state, attempts, uncertain, started, updated, outcome, version)
					VALUES (?1, ?2, ?3, ?4, ?5, 'admitted', 1, 0, ?6, ?6, '', NULL)`, req.Request, req.URL, p.digest, req.Collection, req.Item, now)
			}
			if prev.url != req.URL || prev.collection != req.Collection || prev.item != req.Item {
				return fault.New(fault.Conflict, "fetch operation %q was made before for %s into %q %q: a new operation needs a new identity",
					clip.Text(req.Request), clip.Text(prev.url), clip.Text(prev.collection), clip.Text(prev.item))
			}
			if prev.state == fetchDone {
				done, err = a.retained(t, prev)
				return err
			}
			// An attempt that was admitted and never recorded an outcome,
			// or failed after its request may have been sent, may have
			// reached the server.
			prev.uncertain = prev.uncertain || prev.state == fetchAdmitted || prev.state == fetchFailed && mayHaveSent(prev.outcome)
			prev.attempts++
			prev.state = fetchAdmitted
			op = prev
			return t.exec(`UPDATE fetches SET state = 'admitted', attempts = ?2, uncertain = ?3, policy = ?4, updated = ?5 WHERE request = ?1`,
				req.Request, prev.attempts, prev.uncertain, p.digest, now)
		})
	})
	return op, done, err
}

func loadFetch(t *txn, request string) (*fetchOp, error) {
	op := &fetchOp{}
	err := t.row(`SELECT url, policy, collection, item, state, attempts, uncertain, started, outcome, version FROM fetches WHERE request = ?1`, request).
		Scan(&op.url, &op.policy, &op.collection, &op.item, &op.state, &op.attempts, &op.uncertain, &op.started, &op.outcome, &op.version)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return op, err
}

// reachedMark starts the outcome of a failure after a response came.
const reachedMark = "reached the server; "

// mayHaveSent reports whether a recorded failure may have come after the
// request was sent: one after a response came, and any failure of the
// fetch but a refusal before any request (the guard, the budget, the
// URL, a name that does not resolve, TLS).
func mayHaveSent(outcome string) bool {
	if strings.HasPrefix(outcome, reachedMark) {
		return true
	}
	code, _, _ := strings.Cut(outcome, ":")
	switch fault.Code(code) {
	case fault.Denied, fault.Deferred, fault.InvalidInput, fault.NotFound, fault.TLS:
		return false
	}
	return true
}

func (op *fetchOp) disclosure() string {
	if !op.uncertain {
		return ""
	}
	return fmt.Sprintf("attempt %d of this operation: an earlier attempt was admitted (the first at %s) and may have reached the server before it ended without a retained result, so the GET may have been made more than once", op.attempts, op.started)
}

// retained is the result a done operation made.
func (a *Archive) retained(t *txn, op *fetchOp) (*Fetched, error) {
	info, err := versionInfo(t, op.version.Int64)
	if err != nil {
		return nil, err
	}
	var receipt string
	if err := t.row(`SELECT receipt FROM versions WHERE id = ?1`, op.version.Int64).Scan(&receipt); err != nil {
		return nil, err
	}
	out := &Fetched{Added: Added{VersionInfo: *info, Repeated: true}, Attempts: op.attempts, Repeat: op.disclosure()}
	if info.BlobSHA256 != "" {
		out.Retention = RetainOriginal
	} else {
		out.Retention = RetainTextOnly
	}
	if receipt != "" {
		out.Receipt = &fetch.Receipt{}
		if err := json.Unmarshal([]byte(receipt), out.Receipt); err != nil {
			return nil, fault.Wrap(fault.Integrity, err, "version %s: its stored receipt does not decode", info.Version)
		}
	}
	return out, nil
}

// fetchAndRetain fetches and commits the version with the operation's
// outcome in one transaction. reached says a response came.
func (a *Archive) fetchAndRetain(ctx context.Context, src *Source, req FetchRequest, op *fetchOp) (*Fetched, bool, error) {
	f, err := fetch.New(src.Policy.fetch, &fetch.Options{Budget: src.Budget, Task: req.Task, Resolver: src.Resolver})
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	res, err := f.Fetch(ctx, req.URL)
	if err != nil {
		return nil, false, err
	}
	step("fetch.fetched")
	out, err := a.retain(ctx, src, req, op, res)
	return out, true, err
}

// retain commits the fetched response as a version with the operation's
// outcome in one transaction.
func (a *Archive) retain(ctx context.Context, src *Source, req FetchRequest, op *fetchOp, res *fetch.Response) (*Fetched, error) {
	receipt, err := json.Marshal(res.Receipt)
	if err != nil {
		return nil, fault.Wrap(fault.Internal, err, "encoding the receipt failed")
	}
	d, note, err := derive(ctx, res.Body, res.Receipt)
	keep := src.Policy.Retention == RetainOriginal
	if code := fault.CodeOf(err); err != nil && (!keep || code != fault.Limit && code != fault.InvalidInput) {
		return nil, err
	}
	nv := &newVersion{kind: KindFetch, collection: req.Collection, item: req.Item, request: req.Request,
		sourceURL: res.Receipt.FinalURL, mediaType: res.Receipt.MediaType, receipt: string(receipt), parts: []storedPart{}}
	if d != nil {
		nv.title, nv.parts = d.Title, d.measure()
	}
	out := &Fetched{Receipt: res.Receipt, Retention: src.Policy.Retention, Attempts: op.attempts, Repeat: op.disclosure(), TextNote: note}
	finish := func(t *txn, added *Added) error {
		out.Added = *added
		return t.exec(`UPDATE fetches SET state = 'done', outcome = 'ok', version = ?2, updated = ?3 WHERE request = ?1`, req.Request, mustVersionID(added.Version), a.stamp())
	}
	if !keep {
		nv.seal()
		err = a.locked(func() error {
			return a.write(ctx, "retaining a fetch", func(t *txn) error {
				added, err := a.commitVersion(t, nv, nil)
				if err == nil {
					err = finish(t, added)
				}
				if err == nil {
					step("fetch.inserted")
				}
				return err
			})
		})
		return out, err
	}
	st, err := a.stageBlob(ctx, bytes.NewReader(res.Body), limits.ArchiveMaxFileBytes, "fetched body")
	if err != nil {
		return nil, err
	}
	defer st.discard()
	nv.blob, nv.blobBytes = st.sha, st.size
	nv.seal()
	if _, err := a.commitBlobVersion(ctx, nv, st, "fetch", finish); err != nil {
		return nil, err
	}
	return out, nil
}

func mustVersionID(v string) int64 {
	id, _ := parseVersionRef(v)
	return id
}

// recordFailure records a failed attempt's outcome; it does its best
// past ctx's end, within limits.ArchiveSettleTimeout.
func (a *Archive) recordFailure(ctx context.Context, request string, cause error, reached bool) {
	fe := fault.As(cause)
	outcome := string(fe.Code) + ": " + clip.N(fe.Message, 512)
	if reached {
		outcome = reachedMark + outcome
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), limits.ArchiveSettleTimeout)
	defer cancel()
	a.locked(func() error {
		return a.write(ctx, "recording a fetch's failure", func(t *txn) error {
			return t.exec(`UPDATE fetches SET state = 'failed', outcome = ?2, updated = ?3 WHERE request = ?1 AND state = 'admitted'`,
				request, outcome, a.stamp())
		})
	})
}

// The methods of text the archive takes from a fetched body itself.
const (
	methodHTML = "capkit htmldoc text"
	methodBody = "capkit body as text"
)

// derive takes a fetched body's text: an HTML page's visible text
// (parse/htmldoc, whose access-screen refusal stands), or the body itself
// when it is UTF-8 text of a textual media type. The same body and
// headers always give the same text, so Rebuild can take it again. A
// body of no text is invalid_input, text past limits.ArchiveMaxTextBytes
// limit; note says why there is no text.
func derive(ctx context.Context, body []byte, rc *fetch.Receipt) (*Document, string, error) {
	mt := rc.MediaType
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml":
		doc, err := htmldoc.Parse(ctx, body, htmldoc.SelectText, &htmldoc.Options{BaseURL: rc.FinalURL, ContentType: rc.Headers["content-type"]})
		if err != nil {
			return nil, "no text: " + fault.As(err).Message, err
		}
		var text strings.Builder
		if err := doc.WriteText(&text); err != nil {
			return nil, "", fault.Wrap(fault.Internal, err, "rendering the page's text failed")
		}
		p := Part{Text: text.String(), Method: methodHTML}
		for _, w := range doc.Warnings {
			if len(p.Warnings) < limits.ArchiveMaxWarnings {
				p.Warnings = append(p.Warnings, clip.N(w.Code+": "+oneLine(w.Message), limits.ArchiveMaxWarningBytes))
			}
		}
		return finishDerived(&Document{Parts: []Part{p}, Title: clipTitle(oneLine(doc.Title))})
	case textual(mt, rc.Headers["content-type"]) && utf8.Valid(body):
		return finishDerived(&Document{Parts: []Part{{Text: string(body), Method: methodBody}}})
	}
	err := fault.New(fault.InvalidInput, "the body (%s) holds no text the archive takes: a source policy with retention %q keeps such bodies whole", mediaOr(mt), RetainOriginal)
	return nil, "no text: the media type " + mediaOr(mt) + " is not text", err
}

func finishDerived(d *Document) (*Document, string, error) {
	if n := len(d.Parts[0].Text); n > limits.ArchiveMaxTextBytes {
		return nil, fmt.Sprintf("no text: its %d bytes exceed the %s a document may hold", n, limits.Bytes(limits.ArchiveMaxTextBytes)),
			fault.LimitExceeded("text bytes of the fetched body", limits.ArchiveMaxTextBytes, int64(n))
	}
	return d, "", d.check()
}

func mediaOr(mt string) string {
	if mt == "" {
		return "no media type"
	}
	return mt
}

// textual reports whether a media type is text the archive keeps as it
// is: text/* but HTML, JSON, XML and their +json, +xml kinds, with no
// charset or a UTF-8 one.
func textual(mt, contentType string) bool {
	if _, params, err := mime.ParseMediaType(contentType); err == nil {
		if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "us-ascii") {
			return false
		}
	}
	switch {
	case strings.HasPrefix(mt, "text/"):
		return true
	case mt == "application/json", mt == "application/xml", strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"):
		return true
	}
	return false
}

// oneLine turns control characters into spaces.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return ' '
		}
		return r
	}, s)
}

// clipTitle cuts a page's title to limits.ArchiveMaxTitleBytes on a
// character boundary, marking the cut.
func clipTitle(s string) string {
	if len(s) <= limits.ArchiveMaxTitleBytes {
		return s
	}
	cut := limits.ArchiveMaxTitleBytes - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
