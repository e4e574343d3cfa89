package journal

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/capkit/capkit/limits"
)

func recordSeeds() [][]byte {
	l1, h1 := EncodeRecord(1, Genesis, []byte(`{"a":[1,2.5,"x"],"b":null}`))
	l2, _ := EncodeRecord(2, h1, []byte(`"é\u2028"`))
	return [][]byte{
		bytes.TrimSuffix(l1, []byte("\n")), bytes.TrimSuffix(l2, []byte("\n")),
		[]byte(`{"seq":01,"prev":"x"}`), []byte(`{"seq":1,"prev":"` + Genesis + `","hash":"` + Genesis + `","event":1}`),
		[]byte(`{}`), nil,
	}
}

func eventSeeds() [][]byte {
	return [][]byte{[]byte(`{"b":1,"a":[true,false,null,1e2,-0.5,"\u00e9"]}`), []byte(`12345678901234567890`),
		[]byte(`1e400`), []byte(`{"a":1,"a":2}`), []byte("\"\xff\""), []byte(`[[[[]]]]`), []byte(`0e-9999`), []byte(`"\ud800"`)}
}

// FuzzParseRecord: a line the parser accepts is exactly what the encoder
// renders for its fields.
func FuzzParseRecord(f *testing.F) {
	for _, s := range recordSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r, why := parseRecord(line, limits.JournalMaxEventBytes)
		if why != "" {
			return
		}
		enc, hash := EncodeRecord(r.Seq, r.Prev, r.Event)
		if !bytes.Equal(enc, append(bytes.Clone(line), '\n')) || hash != r.Hash {
			t.Fatalf("accepted %q, which re-encodes as %q", line, enc)
		}
	})
}

// FuzzCanonicalize: canonical events are fixed points and within bounds.
func FuzzCanonicalize(f *testing.F) {
	for _, s := range eventSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, event []byte) {
		c, err := Canonicalize(event, 0)
		if err != nil {
			return
		}
		if len(c) > limits.JournalMaxEventBytes {
			t.Fatalf("canonical event of %d bytes", len(c))
		}
		again, err := Canonicalize(c, 0)
		if err != nil || !bytes.Equal(again, c) {
			t.Fatalf("canonical %q is not a fixed point: %q %v", c, again, err)
		}
	})
}

// FuzzVerify: Verify never panics, and what it accepts it accepts whole.
func FuzzVerify(f *testing.F) {
	l1, h1 := EncodeRecord(1, Genesis, []byte(`{"n":1}`))
	l2, _ := EncodeRecord(2, h1, []byte(`{"n":2}`))
	f.Add(append(bytes.Clone(l1), l2...))
	f.Add(append(bytes.Clone(l1), "{\"seq\":2"...))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		os.Chmod(dir, 0o700)
		os.WriteFile(filepath.Join(dir, "f.jsonl"), data, 0o600)
		j, err := Open(dir, "f", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		rep, err := j.Verify(ctx)
		if rep != nil && err == nil && rep.Bytes != int64(len(data)) {
			t.Fatalf("verified %d of %d bytes without an error", rep.Bytes, len(data))
		}
	})
}

// TestWriteFuzzSeeds refreshes the checked-in seed corpora when asked.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("CAPKIT_WRITE_FUZZ_SEEDS") == "" {
		t.Skip("set CAPKIT_WRITE_FUZZ_SEEDS=1 to rewrite testdata/fuzz")
	}
	for name, seeds := range map[string][][]byte{"FuzzParseRecord": recordSeeds(), "FuzzCanonicalize": eventSeeds()} {
		dir := filepath.Join("testdata", "fuzz", name)
		os.MkdirAll(dir, 0o755)
		for i, s := range seeds {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
