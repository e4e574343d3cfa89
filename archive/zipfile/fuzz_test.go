package zipfile

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var fuzzLimits = Limits{MaxFiles: 64, MaxMemberBytes: 256 << 10, MaxTotalBytes: 1 << 20, MaxCentralDirectoryBytes: 64 << 10, MaxPathDepth: 8}

func fuzzSeeds() [][]byte {
	var seeds [][]byte
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for i, name := range []string{"a.txt", "dir/b.txt", "dir/"} {
		w, _ := zw.Create(name)
		if name[len(name)-1] != '/' {
			fmt.Fprintf(w, "member %d %s", i, bytes.Repeat([]byte("z"), 100*i))
		}
	}
	zw.Close()
	seeds = append(seeds, b.Bytes())
	for _, c := range hostileCases() {
		if data := c.archive.bytes(); len(data) < 64<<10 {
			seeds = append(seeds, data)
		}
	}
	return append(seeds, rawArchive{}.bytes())
}

// FuzzReader feeds arbitrary bytes to the archive reader and inflates what
// it accepts: it must never panic, and what it accepts must respect every
// bound and name rule.
func FuzzReader(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lim, _ := fuzzLimits.resolve()
		a, err := openArchive(context.Background(), bytes.NewReader(data), int64(len(data)), lim)
		if err != nil {
			return
		}
		if len(a.members) > lim.MaxFiles || a.total > lim.MaxTotalBytes {
			t.Fatalf("accepted %d members, %d bytes", len(a.members), a.total)
		}
		names := newNameSet()
		for _, m := range a.members {
			if checkName(m.name, lim.MaxPathDepth) != nil || names.add(m.name, m.dir) != nil {
				t.Fatalf("accepted bad name %q", m.name)
			}
			if m.dir {
				continue
			}
			mt := &meter{max: lim.MaxTotalBytes}
			inflate(context.Background(), m, nil, mt)
			if mt.done.Load() > m.size+int64(copyBuffer) {
				t.Fatalf("member %q inflated %d bytes past its declared %d", m.name, mt.done.Load(), m.size)
			}
		}
	})
}

// TestWriteFuzzSeeds refreshes the checked-in seed corpus when asked.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("CAPKIT_WRITE_FUZZ_SEEDS") == "" {
		t.Skip("set CAPKIT_WRITE_FUZZ_SEEDS=1 to rewrite testdata/fuzz/FuzzReader")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzReader")
	os.MkdirAll(dir, 0o755)
	for i, s := range fuzzSeeds() {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
