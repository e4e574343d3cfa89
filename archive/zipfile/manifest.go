package zipfile

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"io"
	"strings"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// ParseManifest reads an expectation in the form sha256sum prints: one
// "DIGEST  NAME" line per member (64 hex digits, two spaces, or a space and
// "*" for binary mode, then the name). Names escaped by sha256sum (lines
// starting with a backslash) are refused: such names are refused as member
// names anyway. Blank lines, a name given twice and a manifest larger than
// limits.ZipMaxManifestBytes are refused. Names are checked when the
// expectation is used.
func ParseManifest(r io.Reader) (Expect, error) {
	data, err := io.ReadAll(io.LimitReader(r, limits.ZipMaxManifestBytes+1))
	if err != nil {
		return nil, fault.Wrap(fault.IO, err, "reading the manifest failed")
	}
	if len(data) > limits.ZipMaxManifestBytes {
		return nil, fault.LimitExceeded("manifest bytes", limits.ZipMaxManifestBytes, int64(len(data)))
	}
	if len(data) == 0 {
		return nil, fault.New(fault.InvalidInput, "the manifest is empty")
	}
	e := Expect{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), len(data)+1)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSuffix(sc.Text(), "\r")
		bad := func(why string) error {
			return fault.New(fault.InvalidInput, "manifest line %d: %s (want \"SHA256  NAME\" as sha256sum prints)", n, why)
		}
		switch {
		case line == "":
			return nil, bad("blank line")
		case line[0] == '\\':
			return nil, bad("escaped name (names with backslashes or newlines are refused)")
		case len(line) < 67 || (line[64:66] != "  " && line[64:66] != " *"):
			return nil, bad("malformed line")
		}
		var d Digest
		if _, err := hex.Decode(d[:], []byte(line[:64])); err != nil {
			return nil, bad("digest is not 64 hex digits")
		}
		name := line[66:]
		if _, dup := e[name]; dup {
			return nil, bad("name given twice")
		}
		e[name] = d
	}
	if err := sc.Err(); err != nil {
		return nil, fault.Wrap(fault.InvalidInput, err, "reading the manifest failed")
	}
	return e, nil
}

// ParseDigest parses a SHA-256 digest written as 64 hex digits.
func ParseDigest(s string) (Digest, error) {
	var d Digest
	if len(s) != 64 {
		return d, fault.New(fault.InvalidInput, "a SHA-256 digest is 64 hex digits, got %d characters", len(s))
	}
	if _, err := hex.Decode(d[:], []byte(s)); err != nil {
		return d, fault.New(fault.InvalidInput, "a SHA-256 digest is 64 hex digits")
	}
	return d, nil
}
