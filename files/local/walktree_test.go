package local

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/internal/scope"
)

// TestWalkTreeOpen: the opener reads the regular files of the directory being
// walked and refuses everything else: symlinks, FIFOs, directories,
// staging names and names that are not one element.
func TestWalkTreeOpen(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "d"), 0o755)
	os.WriteFile(filepath.Join(root, "d", "a.txt"), []byte("alpha\n"), 0o644)
	os.WriteFile(filepath.Join(root, "outside"), []byte("secret\n"), 0o644)
	os.Symlink("../outside", filepath.Join(root, "d", "link"))
	if err := syscall.Mkfifo(filepath.Join(root, "d", "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "d", scope.StagingPrefix+"x"), []byte("staged"), 0o644)
	p := New()
	got := map[string]fault.Code{}
	var content string
	err := walkTreeIn(p, context.Background(), in(root), "d", func(info files.Info, dir files.WalkTree) error {
		if info.Name == "d" {
			if dir != nil {
				t.Error("a directory for the walk's start")
			}
			return nil
		}
		for _, base := range []string{path.Base(info.Name), scope.StagingPrefix + "x", "../outside", "", "."} {
			f, err := dir.Open(base)
			key := info.Name + " " + base
			got[key] = fault.CodeOf(err)
			if err == nil {
				if base == "a.txt" {
					b, _ := io.ReadAll(f)
					content = string(b)
					if v, ok := f.Version(); !ok || v != files.VersionOf(b) {
						t.Errorf("version %v %v after reading to the end", v, ok)
					}
				}
				f.Close()
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]fault.Code{
		"d/a.txt a.txt": "", "d/link link": fault.Denied, "d/fifo fifo": fault.InvalidInput,
		"d/a.txt " + scope.StagingPrefix + "x": fault.InvalidInput, "d/a.txt ../outside": fault.InvalidInput,
		"d/a.txt ": fault.InvalidInput, "d/a.txt .": fault.InvalidInput,
	}
	for k, code := range want {
		if got[k] != code {
			t.Errorf("%s: code %q, want %q", k, got[k], code)
		}
	}
	if content != "alpha\n" {
		t.Errorf("read %q", content)
	}
}

// TestWalkTreeSwappedAfterListing: a regular file replaced, between the
// listing that named it a regular file and its open, by a FIFO (with no
// writer: an open that waited for one would hang), a symlink to a file
// outside the tree, a directory, or nothing, is refused without being
// read or followed; the walk goes on to the next entry.
func TestWalkTreeSwappedAfterListing(t *testing.T) {
	swaps := []struct {
		name string
		swap func(p string) error
		want fault.Code
	}{
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o644) }, fault.InvalidInput},
		{"symlink", func(p string) error { return os.Symlink("../outside", p) }, fault.Denied},
		{"directory", func(p string) error { return os.Mkdir(p, 0o755) }, fault.InvalidInput},
		{"removed", func(string) error { return nil }, fault.NotFound},
	}
	for _, tc := range swaps {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			d := filepath.Join(root, "d")
			os.MkdirAll(d, 0o755)
			os.WriteFile(filepath.Join(root, "outside"), []byte("secret\n"), 0o644)
			os.WriteFile(filepath.Join(d, "a"), []byte("alpha\n"), 0o644)
			os.WriteFile(filepath.Join(d, "b"), []byte("beta\n"), 0o644)
			done := make(chan struct{})
			var got fault.Code
			var seen []string
			var walkErr error
			go func() {
				defer close(done)
				walkErr = walkTreeIn(New(), context.Background(), in(root), "d", func(info files.Info, dir files.WalkTree) error {
					if info.Name == "d" {
						return nil
					}
					seen = append(seen, info.Name)
					if info.Name != "d/a" {
						return nil
					}
					if !info.IsRegular() {
						t.Errorf("d/a listed as %v", info.Mode)
					}
					p := filepath.Join(d, "a")
					if err := os.Remove(p); err != nil {
						t.Error(err)
					}
					if err := tc.swap(p); err != nil {
						t.Error(err)
					}
					f, err := dir.Open("a")
					if err == nil {
						b, _ := io.ReadAll(f)
						f.Close()
						t.Errorf("opened the swapped-in %s and read %q", tc.name, b)
					}
					got = fault.CodeOf(err)
					return nil
				})
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second): // a hang guard, not a timing assertion
				t.Fatal("the open of a swapped-in entry hung")
			}
			if walkErr != nil {
				t.Fatal(walkErr)
			}
			if got != tc.want {
				t.Errorf("open of the swapped-in %s: %q, want %q", tc.name, got, tc.want)
			}
			if len(seen) != 2 || seen[1] != "d/b" {
				t.Errorf("walk saw %v, want d/a then d/b", seen)
			}
		})
	}
}

// TestWalkTreeHeld: a directory's listing has its entries (staging names
// left out); an open directory opens its files after the walk has moved
// on, under the same checks (a file swapped for a symlink meanwhile is
// refused), until it is closed.
func TestWalkTreeHeld(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "d", "e"), 0o755)
	os.WriteFile(filepath.Join(root, "d", "a"), []byte("alpha\n"), 0o644)
	os.WriteFile(filepath.Join(root, "d", "b"), []byte("beta\n"), 0o644)
	os.WriteFile(filepath.Join(root, "d", "e", "c"), []byte("gamma\n"), 0o644)
	os.WriteFile(filepath.Join(root, "outside"), []byte("secret\n"), 0o644)
	os.WriteFile(filepath.Join(root, "d", scope.StagingPrefix+"x"), []byte("staged"), 0o644)
	_, err := with(in(root), "d", func(tt *scope.Target) (struct{}, error) {
		_, tree, err := New().OpenTree(context.Background(), tt)
		if err != nil {
			return struct{}{}, err
		}
		entries, err := tree.List(context.Background(), 10)
		if err != nil {
			return struct{}{}, err
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name)
		}
		if !slices.Equal(names, []string{"d/a", "d/b", "d/e"}) || !tree.Listed("a") || tree.Listed("absent") || tree.Listed(scope.StagingPrefix+"x") {
			t.Errorf("listing %v", names)
		}
		sub, err := tree.Sub(context.Background(), entries[2])
		if err != nil {
			return struct{}{}, err
		}
		if _, err := sub.List(context.Background(), 10); err != nil {
			return struct{}{}, err
		}
		p := filepath.Join(root, "d", "b")
		os.Remove(p)
		os.Symlink("../outside", p)
		want := map[string]string{"a": "alpha\n", "b": "", "c": "gamma\n"}
		for base, dir := range map[string]files.WalkTree{"a": tree, "b": tree, "c": sub} {
			f, err := dir.Open(base)
			switch {
			case base == "b":
				if fault.CodeOf(err) != fault.Denied {
					t.Errorf("b swapped for a symlink: %v, want denied", err)
				}
			case err != nil:
				t.Errorf("%s: %v", base, err)
			default:
				b, _ := io.ReadAll(f)
				f.Close()
				if string(b) != want[base] {
					t.Errorf("%s: %q", base, b)
				}
			}
		}
		tree.Close()
		sub.Close()
		for base, dir := range map[string]files.WalkTree{"a": tree, "c": sub} {
			if f, err := dir.Open(base); err == nil {
				f.Close()
				t.Errorf("%s opened after its directory was closed", base)
			}
		}
		return struct{}{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWalkTreeOpensInAnyOrder: a listed directory's files open as
// themselves in whatever order, from several goroutines at once, with
// the names a walk shows, and its subdirectory by its entry.
func TestWalkTreeOpensInAnyOrder(t *testing.T) {
	root := t.TempDir()
	const n = 40
	for i := range n {
		os.MkdirAll(filepath.Join(root, "d", "sub"), 0o755)
		os.WriteFile(filepath.Join(root, "d", fmt.Sprintf("f%02d", i)), []byte(fmt.Sprint(i)), 0o644)
	}
	_, err := with(in(root), "d", func(tt *scope.Target) (struct{}, error) {
		_, tree, err := New().OpenTree(context.Background(), tt)
		if err != nil {
			return struct{}{}, err
		}
		defer tree.Close()
		entries, err := tree.List(context.Background(), 100)
		if err != nil || len(entries) != n+1 {
			return struct{}{}, fmt.Errorf("listing %d entries: %v", len(entries), err)
		}
		orders := [][]int{{}, {}, {}, {}}
		for i := range n {
			orders[0] = append(orders[0], i)
			orders[1] = append(orders[1], n-1-i)
			orders[2] = append(orders[2], (i*7)%n)
			orders[3] = append(orders[3], (i*13+5)%n)
		}
		var wg sync.WaitGroup
		for _, order := range orders {
			wg.Go(func() {
				for _, i := range order {
					base := fmt.Sprintf("f%02d", i)
					f, err := tree.Open(base)
					if err != nil {
						t.Errorf("%s: %v", base, err)
						continue
					}
					b, _ := io.ReadAll(f)
					if string(b) != fmt.Sprint(i) || f.Info().Name != "d/"+base {
						t.Errorf("%s: read %q as %q", base, b, f.Info().Name)
					}
					f.Close()
				}
			})
		}
		wg.Wait()
		sub, err := tree.Sub(context.Background(), entries[n])
		if err != nil || sub == nil {
			return struct{}{}, fmt.Errorf("sub: %v", err)
		}
		sub.Close()
		if _, err := tree.Open("absent"); fault.CodeOf(err) != fault.NotFound {
			t.Errorf("absent: %v, want not found", err)
		}
		return struct{}{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
