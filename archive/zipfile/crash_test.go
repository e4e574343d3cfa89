package zipfile

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/internal/testkit"
)

// TestCrashChild is the child of TestCrashExtract: it extracts the archive
// named by its environment and exits. It does nothing in a normal run.
func TestCrashChild(t *testing.T) {
	archive := os.Getenv("ZIPFILE_CRASH_ARCHIVE")
	if archive == "" {
		t.Skip("child of TestCrashExtract")
	}
	f, err := os.Open(os.Getenv("ZIPFILE_CRASH_MANIFEST"))
	if err != nil {
		t.Fatal(err)
	}
	expect, err := ParseManifest(f)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Extract(context.Background(), archive, os.Getenv("ZIPFILE_CRASH_DEST"), expect, nil); err != nil {
		t.Fatal(err)
	}
}

// TestCrashExtract kills an extracting process with SIGKILL at random
// instants: the destination is then either absent or complete and
// verified, never partial; only staging directories are left beside it.
func TestCrashExtract(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	src := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	var sources []Source
	for i := range 48 {
		data := make([]byte, 96<<10)
		for j := range data {
			data[j] = byte(rng.IntN(16)) // compressible, but not trivially
		}
		p := filepath.Join(src, "f"+strconv.Itoa(i))
		os.WriteFile(p, data, 0o600)
		sources = append(sources, Source{Name: "d" + strconv.Itoa(i%4) + "/f" + strconv.Itoa(i), Path: p})
	}
	archive := filepath.Join(t.TempDir(), "a.zip")
	created, err := Create(context.Background(), archive, sources, nil)
	if err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(t.TempDir(), "MANIFEST")
	os.WriteFile(manifest, []byte(created.Manifest()), 0o600)
	expect, _ := ParseManifest(strings.NewReader(created.Manifest()))

	parent := t.TempDir()
	run := func(dest string, kill time.Duration) (time.Duration, bool) {
		start := time.Now()
		child := testkit.StartChild(t, "TestCrashChild", "ZIPFILE_CRASH_ARCHIVE="+archive, "ZIPFILE_CRASH_MANIFEST="+manifest, "ZIPFILE_CRASH_DEST="+dest)
		if kill > 0 {
			time.Sleep(kill)
			child.Kill(t)
		}
		_, err := child.Wait()
		return time.Since(start), err != nil
	}
	full, failed := run(filepath.Join(parent, "calibrate"), 0)
	if failed {
		t.Fatal("child failed without being killed")
	}
	killed := 0
	for i := range 12 {
		dest := filepath.Join(parent, "out"+strconv.Itoa(i))
		_, died := run(dest, time.Duration(rng.Int64N(int64(full)+1)))
		if died {
			killed++
		}
		if _, err := os.Stat(dest); err != nil {
			continue // not published: fine
		}
		if _, err := verifyTree(dest, expect); err != nil {
			t.Fatalf("run %d: published directory is not complete: %v", i, err)
		}
	}
	published, staged := 0, 0
	for _, name := range entries(t, parent) {
		switch {
		case strings.HasPrefix(name, "out"):
			published++
		case scope.IsStaging(name):
			staged++
		case name != "calibrate":
			t.Fatalf("unexpected entry %q beside the destinations", name)
		}
	}
	t.Logf("full extraction %v; %d of 12 runs killed; %d published, %d staging directories left by kills", full, killed, published, staged)
}

// verifyTree checks that dir holds exactly the expected files.
func verifyTree(dir string, expect Expect) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		want, ok := expect[filepath.ToSlash(rel)]
		if !ok || sum(data) != want {
			return os.ErrInvalid
		}
		n++
		return nil
	})
	if err == nil && n != len(expect) {
		err = os.ErrNotExist
	}
	return n, err
}
