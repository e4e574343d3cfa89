package state

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// noTemps fails if dir holds a leftover temporary file.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	must(t, err)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".capkit-") {
			t.Fatalf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestReplace(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string) // makes dir/state
		data  string
		code  fault.Code
	}{
		{"create", func(*testing.T, string) {}, "new", ""},
		{"replace", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "state"), []byte("old content"), 0o644))
		}, "new", ""},
		{"replace with nothing", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "state"), []byte("old"), 0o600))
		}, "", ""},
		{"symlink", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "target"), []byte("target"), 0o600))
			must(t, os.Symlink("target", filepath.Join(dir, "state")))
		}, "new", fault.Denied},
		{"directory", func(t *testing.T, dir string) { must(t, os.Mkdir(filepath.Join(dir, "state"), 0o700)) }, "new", fault.InvalidInput},
		{"fifo", func(t *testing.T, dir string) { must(t, syscall.Mkfifo(filepath.Join(dir, "state"), 0o600)) }, "new", fault.InvalidInput},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.setup(t, dir)
			path := filepath.Join(dir, "state")
			before, _ := os.Lstat(path)
			err := Replace(context.Background(), path, []byte(c.data))
			if got := fault.CodeOf(err); got != c.code {
				t.Fatalf("code %q (%v), want %q", got, err, c.code)
			}
			noTemps(t, dir)
			after, _ := os.Lstat(path)
			if err != nil {
				if before.Mode() != after.Mode() || !os.SameFile(before, after) {
					t.Fatal("a refused replacement changed the entry")
				}
				if b, err := os.ReadFile(filepath.Join(dir, "target")); err == nil && string(b) != "target" {
					t.Fatal("a symlink was written through")
				}
				return
			}
			if b, _ := os.ReadFile(path); string(b) != c.data {
				t.Fatalf("content %q", b)
			}
			// New state is private; replaced state keeps its mode.
			want := os.FileMode(0o600)
			if before != nil {
				want = before.Mode()
			}
			if after.Mode() != want {
				t.Fatalf("mode %v, want %v", after.Mode(), want)
			}
		})
	}
	t.Run("refusals", func(t *testing.T) {
		dir := t.TempDir()
		for path, code := range map[string]fault.Code{
			"relative":                            fault.InvalidInput,
			"/":                                   fault.InvalidInput,
			filepath.Join(dir, "missing", "file"): fault.NotFound,
		} {
			if err := Replace(context.Background(), path, []byte("x")); fault.CodeOf(err) != code {
				t.Errorf("%s: %v, want %s", path, err, code)
			}
		}
	})
	t.Run("canceled", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "state")
		must(t, os.WriteFile(path, []byte("old"), 0o600))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := Replace(ctx, path, []byte("new")); fault.CodeOf(err) != fault.Unavailable {
			t.Fatalf("got %v", err)
		}
		if b, _ := os.ReadFile(path); string(b) != "old" {
			t.Fatalf("content %q", b)
		}
		noTemps(t, dir)
	})
}

// TestStateSizeBound checks the bound at the edge and one past it without
// allocating 128 MiB.
func TestStateSizeBound(t *testing.T) {
	if err := checkSize(limits.StateMaxBytes); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	if err := checkSize(limits.StateMaxBytes + 1); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("one past: %v", err)
	}
}

// stage makes dir/name holding a file, a subdirectory with a file, a
// symlink and a FIFO.
func stage(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	must(t, os.MkdirAll(filepath.Join(p, "sub"), 0o700))
	must(t, os.WriteFile(filepath.Join(p, "a"), []byte("a"), 0o600))
	must(t, os.WriteFile(filepath.Join(p, "sub", "b"), []byte("b"), 0o600))
	must(t, os.Symlink("/etc/passwd", filepath.Join(p, "link")))
	must(t, syscall.Mkfifo(filepath.Join(p, "fifo"), 0o600))
	return p
}

func TestPublish(t *testing.T) {
	other := t.TempDir()
	cases := []struct {
		name    string
		setup   func(t *testing.T, dir string)
		staging string // relative to dir unless absolute
		dest    string
		opts    *PublishOptions
		code    fault.Code
	}{
		{"publish", nil, "stage", "pub", nil, ""},
		{"publish without sync", nil, "stage", "pub", &PublishOptions{DisableSync: true}, ""},
		{"existing directory", func(t *testing.T, dir string) { must(t, os.Mkdir(filepath.Join(dir, "pub"), 0o700)) }, "stage", "pub", nil, fault.Conflict},
		{"existing non-empty directory", func(t *testing.T, dir string) {
			must(t, os.MkdirAll(filepath.Join(dir, "pub", "x"), 0o700))
		}, "stage", "pub", nil, fault.Conflict},
		{"existing file", func(t *testing.T, dir string) { must(t, os.WriteFile(filepath.Join(dir, "pub"), nil, 0o600)) }, "stage", "pub", nil, fault.Conflict},
		{"existing dangling symlink", func(t *testing.T, dir string) { must(t, os.Symlink("nowhere", filepath.Join(dir, "pub"))) }, "stage", "pub", nil, fault.Conflict},
		{"staging in another parent", nil, filepath.Join(other, "stage"), "pub", nil, fault.InvalidInput},
		{"staging in a subdirectory", func(t *testing.T, dir string) { stage(t, dir, "nested/stage") }, "nested/stage", "pub", nil, fault.InvalidInput},
		{"destination in a subdirectory", func(t *testing.T, dir string) { must(t, os.Mkdir(filepath.Join(dir, "x"), 0o700)) }, "stage", "x/pub", nil, fault.InvalidInput},
		{"staging missing", nil, "nope", "pub", nil, fault.NotFound},
		{"staging is a file", func(t *testing.T, dir string) { must(t, os.WriteFile(filepath.Join(dir, "file"), nil, 0o600)) }, "file", "pub", nil, fault.InvalidInput},
		{"staging is a symlink", func(t *testing.T, dir string) { must(t, os.Symlink("stage", filepath.Join(dir, "link"))) }, "link", "pub", nil, fault.Denied},
		{"same name", nil, "stage", "stage", nil, fault.InvalidInput},
		{"relative staging", nil, "", "pub", nil, fault.InvalidInput},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			stage(t, dir, "stage")
			if c.setup != nil {
				c.setup(t, dir)
			}
			staging := c.staging
			switch {
			case staging == "":
				staging = "stage"
			case !filepath.IsAbs(staging):
				staging = filepath.Join(dir, staging)
			}
			err := Publish(context.Background(), staging, filepath.Join(dir, c.dest), c.opts)
			if got := fault.CodeOf(err); got != c.code {
				t.Fatalf("code %q (%v), want %q", got, err, c.code)
			}
			if err != nil {
				if _, serr := os.Lstat(filepath.Join(dir, "stage")); serr != nil {
					t.Fatal("a refused publication moved the staging directory")
				}
				if b, _ := os.ReadFile(filepath.Join(dir, "pub", "a")); len(b) > 0 {
					t.Fatal("a refused publication replaced the destination")
				}
				return
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "pub", "sub", "b")); string(b) != "b" {
				t.Fatalf("published content %q", b)
			}
			if l, _ := os.Readlink(filepath.Join(dir, "pub", "link")); l != "/etc/passwd" {
				t.Fatal("symlink not published as a symlink")
			}
			if _, err := os.Lstat(filepath.Join(dir, "stage")); !os.IsNotExist(err) {
				t.Fatal("staging directory still there")
			}
		})
	}
}
