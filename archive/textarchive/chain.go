package textarchive

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/store/journal"
)

// chainRecord is what a version's link of the hash chain binds: its
// identity, its place, its content's digest (which covers its parts,
// title, source, blob and receipt: see manifest), the request that made
// it and when. The link's hash is the journal's record hash
// (journal.Hash) of the version's number, the previous link's hash and
// this record in canonical JSON: a version edited, removed, inserted or
// reordered breaks the chain from there on, and the head in archive_meta
// names the last link, so the loss of the last versions shows too.
type chainRecord struct {
	Version    string `json:"version"`
	Collection string `json:"collection"`
	Item       string `json:"item"`
	Seq        int64  `json:"seq"`
	Kind       string `json:"kind"`
	Digest     string `json:"digest"`
	Request    string `json:"request"`
	Created    string `json:"created"`
}

// link returns the hash of version id after prev.
func (r *chainRecord) link(id int64, prev string) (string, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return "", fault.Wrap(fault.Internal, err, "encoding a chain record failed")
	}
	event, err := journal.Canonicalize(data, 0)
	if err != nil {
		return "", err
	}
	return journal.Hash(uint64(id), prev, event), nil
}

// head is the chain's last link: its version number and hash.
type head struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
}

func (h head) String() string { return strconv.FormatInt(h.Seq, 10) + " " + h.Hash }

func parseHead(s string) (head, error) {
	n, hash, ok := strings.Cut(s, " ")
	seq, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil || seq < 0 || len(hash) != 64 {
		return head{}, fault.New(fault.Integrity, "the archive's chain head %q is malformed", s)
	}
	return head{Seq: seq, Hash: hash}, nil
}

func (t *txn) head() (head, error) {
	s, err := t.meta("head")
	if err != nil {
		return head{}, err
	}
	return parseHead(s)
}

// versionRef is the public name of version id: "v" and its number.
func versionRef(id int64) string { return "v" + strconv.FormatInt(id, 10) }

// parseVersionRef reads "v12" (or "12").
func parseVersionRef(s string) (int64, error) {
	n := strings.TrimPrefix(s, "v")
	id, err := strconv.ParseInt(n, 10, 64)
	if err != nil || id < 1 || n != strconv.FormatInt(id, 10) {
		return 0, fault.New(fault.InvalidInput, "version %q is not a version name such as v12", s)
	}
	return id, nil
}
