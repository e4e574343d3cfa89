package journal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/big"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// Genesis is the prev hash of record 1.
const Genesis = "0000000000000000000000000000000000000000000000000000000000000000"

const domain = "capkit.journal.v1\n"

// Record is one verified journal record.
type Record struct {
	Seq   uint64         `json:"seq"`
	Prev  string         `json:"prev"`
	Hash  string         `json:"hash"`
	Event jsontext.Value `json:"event"`
}

// Canonicalize returns the canonical form of one JSON event (see the
// package documentation), refusing what the journal refuses. maxBytes
// bounds the canonical form; zero means limits.JournalMaxEventBytes.
func Canonicalize(event []byte, maxBytes int) ([]byte, error) {
	if maxBytes <= 0 || maxBytes > limits.JournalMaxEventBytes {
		maxBytes = limits.JournalMaxEventBytes
	}
	if len(event) > limits.JournalMaxInputBytes {
		return nil, fault.LimitExceeded("event bytes before canonicalization", limits.JournalMaxInputBytes, int64(len(event)))
	}
	if err := checkEvent(event); err != nil {
		return nil, err
	}
	v := jsontext.Value(bytes.Clone(event))
	if err := v.Canonicalize(); err != nil {
		return nil, fault.New(fault.InvalidInput, "event is not valid JSON: %s", err.Error())
	}
	if len(v) > maxBytes {
		return nil, fault.LimitExceeded("canonical event bytes", int64(maxBytes), int64(len(v)))
	}
	return v, nil
}

// checkEvent validates one JSON value token by token: syntax, duplicate
// names and UTF-8 (jsontext's defaults), depth, and numbers.
func checkEvent(event []byte) error {
	dec := jsontext.NewDecoder(bytes.NewReader(event))
	for {
		tok, err := dec.ReadToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fault.New(fault.InvalidInput, "event is not valid JSON: %s", err.Error())
		}
		if dec.StackDepth() > limits.JournalMaxDepth {
			return fault.New(fault.InvalidInput, "event nests deeper than %d levels", limits.JournalMaxDepth)
		}
		if tok.Kind() == '0' {
			if err := checkNumber(tok.String()); err != nil {
				return err
			}
		}
	}
	if dec.InputOffset() == 0 {
		return fault.New(fault.InvalidInput, "event is empty; send one JSON value")
	}
	return nil
}

// checkNumber refuses a number whose canonical (float64) form would denote
// a different value: out of range, underflowing to zero, or more precise
// than float64.
func checkNumber(lit string) error {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) && f != 0 {
			return fault.New(fault.InvalidInput, "event number %.40s is outside the float64 range (not finite)", lit)
		}
		if !errors.Is(err, strconv.ErrRange) {
			return fault.New(fault.InvalidInput, "event number %.40s is malformed", lit)
		}
	}
	v := jsontext.Value(lit)
	if err := v.Canonicalize(); err != nil {
		return fault.New(fault.InvalidInput, "event number %.40s is malformed", lit)
	}
	canon := string(v)
	if canon == lit {
		return nil
	}
	if f == 0 {
		if !zeroLiteral(lit) {
			return fault.New(fault.InvalidInput, "event number %.40s underflows float64 to zero; write it as a string", lit)
		}
		return nil
	}
	a, ok1 := new(big.Rat).SetString(lit)
	b, ok2 := new(big.Rat).SetString(canon)
	if !ok1 || !ok2 || a.Cmp(b) != 0 {
		return fault.New(fault.InvalidInput, "event number %.40s has more precision than float64 keeps (it would become %s); write it as a string", lit, canon)
	}
	return nil
}

func zeroLiteral(lit string) bool {
	for i := 0; i < len(lit); i++ {
		switch c := lit[i]; {
		case c == 'e' || c == 'E':
			return true
		case c >= '1' && c <= '9':
			return false
		}
	}
	return true
}

// Hash is H of the package documentation for record seq after prev with
// the canonical event: the framing another store that chains its own
// records (the text archive's versions) computes and checks, so one
// verifier serves both.
func Hash(seq uint64, prev string, event []byte) string { return recordHash(seq, prev, event) }

// recordHash is H of the package documentation.
func recordHash(seq uint64, prev string, event []byte) string {
	h := sha256.New()
	var num [20]byte
	h.Write([]byte(domain))
	h.Write(strconv.AppendUint(num[:0], seq, 10))
	h.Write([]byte{'\n'})
	h.Write([]byte(prev))
	h.Write([]byte{'\n'})
	h.Write(event)
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0]))
}

// EncodeRecord renders record seq as its line, newline included.
func EncodeRecord(seq uint64, prev string, event []byte) ([]byte, string) {
	return AppendRecord(make([]byte, 0, len(event)+180), seq, prev, event)
}

// AppendRecord appends record seq's line, newline included, to line (a
// writer reusing its buffer), and returns it and the record's hash.
func AppendRecord(line []byte, seq uint64, prev string, event []byte) ([]byte, string) {
	hash := recordHash(seq, prev, event)
	line = append(line, `{"seq":`...)
	line = strconv.AppendUint(line, seq, 10)
	line = append(line, `,"prev":"`...)
	line = append(line, prev...)
	line = append(line, `","hash":"`...)
	line = append(line, hash...)
	line = append(line, `","event":`...)
	line = append(line, event...)
	line = append(line, "}\n"...)
	return line, hash
}

// maxLine is the longest valid line: the framing around the largest event.
func maxLine(maxEvent int) int { return maxEvent + 200 }

// MaxLine is the longest line of a record whose canonical event is at most
// maxEvent bytes, its newline included.
func MaxLine(maxEvent int) int { return maxLine(maxEvent) + 1 }

// DecodeRecord parses one line (without its newline) strictly, as Verify
// does: it must be byte for byte what EncodeRecord renders for its own
// fields, with a canonical event of at most maxEvent bytes (0: the
// package's bound) and a hash that matches. What is wrong is said in the
// error (integrity, wrapping ErrCorrupt). Chaining (seq and prev against
// the record before) is the caller's to check.
func DecodeRecord(line []byte, maxEvent int) (Record, error) {
	if maxEvent <= 0 || maxEvent > limits.JournalMaxEventBytes {
		maxEvent = limits.JournalMaxEventBytes
	}
	r, why := parseRecord(line, maxEvent)
	if why != "" {
		return Record{}, fault.Wrap(fault.Integrity, ErrCorrupt, "%s", why)
	}
	return r, nil
}

// parseRecord parses one line (without its newline) strictly: it must be
// byte for byte what EncodeRecord renders for its own fields. It reports why
// not, or returns the record.
func parseRecord(line []byte, maxEvent int) (Record, string) {
	var r Record
	rest, ok := bytes.CutPrefix(line, []byte(`{"seq":`))
	if !ok {
		return r, `does not start with {"seq":`
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	if i == 0 || i > 19 || rest[0] == '0' {
		return r, "seq is not a positive decimal number without leading zeros"
	}
	seq, err := strconv.ParseUint(string(rest[:i]), 10, 64)
	if err != nil {
		return r, "seq is out of range"
	}
	rest = rest[i:]
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"prev":"`)); !ok || len(rest) < 64 {
		return r, `"prev" is missing or misplaced`
	}
	prev := string(rest[:64])
	if !isHex(prev) {
		return r, "prev is not 64 lowercase hex digits"
	}
	if rest, ok = bytes.CutPrefix(rest[64:], []byte(`","hash":"`)); !ok || len(rest) < 64 {
		return r, `"hash" is missing or misplaced`
	}
	hash := string(rest[:64])
	if !isHex(hash) {
		return r, "hash is not 64 lowercase hex digits"
	}
	if rest, ok = bytes.CutPrefix(rest[64:], []byte(`","event":`)); !ok {
		return r, `"event" is missing or misplaced`
	}
	event, ok := bytes.CutSuffix(rest, []byte("}"))
	if !ok {
		return r, "record does not end with }"
	}
	canon, err := Canonicalize(event, maxEvent)
	if err != nil {
		return r, "event is not a valid journal event: " + fault.As(err).Message
	}
	if !bytes.Equal(canon, event) {
		return r, "event is not in canonical form"
	}
	if recordHash(seq, prev, event) != hash {
		return r, "hash does not match the record's content"
	}
	return Record{Seq: seq, Prev: prev, Hash: hash, Event: jsontext.Value(event)}, ""
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
