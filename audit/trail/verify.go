package trail

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strconv"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/store/journal"
)

// ErrBroken marks the failure Verify returns for a trail whose chain is
// broken; the *Break it wraps says where.
var ErrBroken = fault.NewMark("audit trail: broken chain")

// The kinds of Break.
const (
	Changed    = "changed"    // a line's content is not what its hash binds
	Removed    = "removed"    // records are missing before the line
	Reordered  = "reordered"  // the line's record belongs elsewhere, or appears twice
	Incomplete = "incomplete" // the file ends mid-line
	// Unchained is what Chain.Add says of a record that does not chain to
	// the one before: that one was changed (or replaced by a record of
	// another trail), which Verify reports at the line before as Changed.
	Unchained = "unchained"
)

// Break is the first place a trail's chain does not hold.
type Break struct {
	Path string `json:"path"`
	// Line is the 1-based line the break is found at or names; Offset the
	// byte offset of its start.
	Line   int    `json:"line"`
	Offset int64  `json:"offset"`
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
}

func (b *Break) Error() string {
	return b.Path + ":" + strconv.Itoa(b.Line) + ": " + b.Kind + ": " + b.Reason
}

// Chain checks records one after another, as they are read: each must
// continue the one before.
type Chain struct {
	// Records counts the records checked; Seq and Head are the last one's
	// number and hash (at the start: the record before the first, or 0
	// and journal.Genesis).
	Records uint64
	Seq     uint64
	Head    string
	// Started is false until the first record; First is its number.
	Started bool
	First   uint64
}

// NewChain checks a trail from its beginning.
func NewChain() *Chain { return &Chain{Head: journal.Genesis} }

// ChainAfter checks a trail that continues after record seq of hash head.
func ChainAfter(seq uint64, head string) *Chain {
	return &Chain{Seq: seq, Head: head, Started: seq > 0}
}

// Add checks one line (without its newline). It returns "" and the
// record when it continues the chain, or the kind of break and why.
func (c *Chain) Add(line []byte) (journal.Record, string, string) {
	rec, err := journal.DecodeRecord(line, limits.AuditMaxEventBytes)
	if err != nil {
		return rec, Changed, "the line is not the record its hash binds: " + fault.As(err).Message
	}
	want := c.Seq + 1
	switch {
	case !c.Started && c.Seq == 0 && c.Head == journal.Genesis && (rec.Seq != 1 || rec.Prev != journal.Genesis):
		return rec, Removed, "the trail starts at record " + strconv.FormatUint(rec.Seq, 10) +
			", not 1: the records before it were removed, or are in a rotated file given before it"
	case rec.Seq > want:
		return rec, Removed, "record " + strconv.FormatUint(want, 10) + " is missing: the line holds record " + strconv.FormatUint(rec.Seq, 10)
	case rec.Seq < want:
		return rec, Reordered, "the line holds record " + strconv.FormatUint(rec.Seq, 10) + ", which came before; record " +
			strconv.FormatUint(want, 10) + " was expected (a line was moved, copied or inserted)"
	case rec.Prev != c.Head:
		return rec, Unchained, "the record does not chain to the one before it"
	}
	if !c.Started {
		c.Started, c.First = true, rec.Seq
	}
	c.Records++
	c.Seq, c.Head = rec.Seq, rec.Hash
	return rec, "", ""
}

// FileReport is one verified file.
type FileReport struct {
	Path string `json:"path"`
	// First and Last are the numbers of its first and last records
	// (First 0: no records); Records counts them.
	First   uint64 `json:"first"`
	Last    uint64 `json:"last"`
	Records uint64 `json:"records"`
	// Head is the hash of its last record.
	Head string `json:"head"`
}

// Report is what Verify found.
type Report struct {
	Files []FileReport `json:"files"`
	// Records counts the records that verified; Seq and Head are the last
	// one's number and hash: keep them apart from the trail to detect
	// records cut from its end.
	Records uint64 `json:"records"`
	Seq     uint64 `json:"seq"`
	Head    string `json:"head"`
	// Break is the first break, if any.
	Break *Break `json:"break,omitempty"`
}

// Verify checks the trail files given, in order (a rotated file before
// the one that continues it), as one chain: from its beginning, or after
// record seq of hash after when after is not empty (the head a rotated
// file that is not given ended with). It returns the report and, when the
// chain is broken, an integrity failure wrapping ErrBroken and the
// *Break, which names the first line that was changed, removed or
// reordered.
func Verify(ctx context.Context, paths []string, seq uint64, after string) (*Report, error) {
	c := NewChain()
	if after != "" {
		c = ChainAfter(seq, after)
	}
	rep := &Report{}
	for _, p := range paths {
		fr, brk, err := verifyFile(ctx, p, c)
		if err != nil {
			return rep, err
		}
		rep.Files = append(rep.Files, fr)
		if brk != nil {
			rep.Break = brk
			break
		}
	}
	rep.Records, rep.Seq, rep.Head = c.Records, c.Seq, c.Head
	if rep.Break != nil {
		return rep, fault.Wrap(fault.Integrity, ErrBroken.With(rep.Break), "the audit trail is broken at %s line %d (%s)", rep.Break.Path, rep.Break.Line, rep.Break.Kind)
	}
	return rep, nil
}

// verifyFile continues c through one file.
func verifyFile(ctx context.Context, path string, c *Chain) (FileReport, *Break, error) {
	fr := FileReport{Path: path}
	f, err := os.Open(path)
	if err != nil {
		return fr, nil, fault.Wrap(fault.CodeOf(err), err, "the audit trail %s cannot be opened", path)
	}
	defer f.Close()
	if err := regular(f, path); err != nil {
		return fr, nil, err
	}
	before := c.Records
	br := bufio.NewReaderSize(f, journal.MaxLine(limits.AuditMaxEventBytes))
	var off, prevOff int64
	for line := 1; ; line++ {
		if line%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return fr, nil, fault.As(err)
			}
		}
		b, err := br.ReadSlice('\n')
		switch {
		case err == io.EOF && len(b) == 0:
			fr.Records = c.Records - before
			if fr.Records > 0 {
				fr.Last, fr.Head = c.Seq, c.Head
			}
			return fr, nil, nil
		case err == io.EOF:
			return fr, &Break{Path: path, Line: line, Offset: off, Kind: Incomplete, Reason: "the file ends mid-line (a write that did not finish, or a cut)"}, nil
		case errors.Is(err, bufio.ErrBufferFull):
			return fr, &Break{Path: path, Line: line, Offset: off, Kind: Changed, Reason: "the line is longer than any record"}, nil
		case err != nil:
			return fr, nil, fault.Wrap(fault.IO, err, "the audit trail %s cannot be read", path)
		}
		rec, kind, why := c.Add(b[:len(b)-1])
		if kind != "" {
			return fr, locate(path, line, off, prevOff, kind, why, br, c), nil
		}
		if fr.First == 0 {
			fr.First = rec.Seq
		}
		prevOff, off = off, off+int64(len(b))
	}
}

// locate is the break Chain.Add found at line (at byte off; the line
// before at prevOff), named where it is: a record that does not chain to
// the one before means the line before was changed; a record missing
// here that is found further on means lines were moved.
func locate(path string, line int, off, prevOff int64, kind, why string, br *bufio.Reader, c *Chain) *Break {
	switch {
	case kind == Unchained && line > 1:
		return &Break{Path: path, Line: line - 1, Offset: prevOff, Kind: Changed,
			Reason: "the line's record is not the one the next line chains to: it was changed"}
	case kind == Unchained:
		return &Break{Path: path, Line: line, Offset: off, Kind: Changed,
			Reason: "the first line does not chain to the record the trail before it ended with: it was changed, or the files are not in order"}
	case kind == Removed && c.Started:
		if at := findSeq(br, c.Seq+1); at > 0 {
			return &Break{Path: path, Line: line, Offset: off, Kind: Reordered,
				Reason: "record " + strconv.FormatUint(c.Seq+1, 10) + " is " + strconv.Itoa(at) + " lines further on: lines were moved"}
		}
	}
	return &Break{Path: path, Line: line, Offset: off, Kind: kind, Reason: why}
}

// findSeq reads on and returns how many lines after the current one the
// record numbered seq is, or 0.
func findSeq(br *bufio.Reader, seq uint64) int {
	prefix := []byte(`{"seq":` + strconv.FormatUint(seq, 10) + `,`)
	for n := 1; ; n++ {
		b, err := br.ReadSlice('\n')
		if bytes.HasPrefix(b, prefix) {
			return n
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return 0
		}
	}
}
