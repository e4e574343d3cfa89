package run

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/atfile"
	"github.com/capkit/capkit/limits"
)

// The persistent tool caches ([run] cache): build and package caches
// that outlive a run, so that a second build is fast. They are capkit's
// own, in a base directory outside every root (by default the capkit
// user's cache directory, $XDG_CACHE_HOME/capkit/run-cache), never the
// host user's own caches, so nothing a command writes there reaches the
// host's builds. Each set of roots has a cache of its own, keyed by the
// roots' paths: a command can poison what later runs over the same roots
// read (a Go build cache trusts its entries), but those runs could be
// changed through the roots themselves anyway; keyed so, one project's
// commands cannot reach another's builds through the cache.
//
// A key's directory holds its lock (held shared for each run, taken
// exclusively to remove the cache; its time is the last use), a note of
// its roots for a person, and tools/, the directory shown read-write in
// the container, with a subdirectory per tool that the environment
// points at (cacheVars). The base is bounded as a whole
// (limits.RunDefaultCacheBytes): after a run, at most once every
// limits.RunCacheTrimInterval, it is measured, and whole caches are
// removed, the least recently used first, until the rest fits.

// cacheVars point each tool at its directory in the run's cache; the
// host's [run] env overrides them.
var cacheVars = []struct{ name, dir string }{
	{"GOCACHE", "go-build"},
	{"GOMODCACHE", "go-mod"},
	{"npm_config_cache", "npm"},
	{"PIP_CACHE_DIR", "pip"},
	{"CARGO_HOME", "cargo"},
	{"XDG_CACHE_HOME", "xdg"},
}

// The names in the base and in a key's directory.
const (
	cacheStamp     = "trimmed"
	cacheTrash     = ".trash-"
	cacheLock      = "lock"
	cacheRootsNote = "roots"
	cacheTools     = "tools"
	cacheKeyLen    = 32 // hex digits of the roots' digest
)

// caches are a Runner's persistent tool caches.
type caches struct {
	base  string // as configured ("" : none)
	bound int64
}

// cacheUse is one run's hold on the cache of its roots.
type cacheUse struct {
	tools string   // the directory shown writable
	lock  *os.File // held shared until release
}

// DefaultCacheDir is the base of the persistent tool caches unless
// [run] cache names another: capkit's own directory in the user's cache
// directory. It fails when the user has none ($XDG_CACHE_HOME and $HOME
// unset).
func DefaultCacheDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "capkit", "run-cache"), nil
}

// acquire makes (or finds) the cache of a run's roots and holds it for
// the run. A base that lies in a root or holds one is not used (a
// read-only root would become writable through it): the run goes
// without a cache, and note says why.
func (c *caches) acquire(writable, readOnly []string) (u *cacheUse, note string, err error) {
	if c.base == "" {
		return nil, "", nil
	}
	if err := os.MkdirAll(c.base, 0o700); err != nil {
		return nil, "", fault.Wrap(fault.Unavailable, err, "the run cache %s cannot be made; set [run] cache to another directory, or \"none\"", c.base)
	}
	base, err := filepath.EvalSymlinks(c.base)
	if err != nil {
		return nil, "", fault.Wrap(fault.Unavailable, err, "the run cache %s cannot be resolved", c.base)
	}
	for _, r := range slices.Concat(writable, readOnly) {
		if capability.Within(r, base) || capability.Within(base, r) {
			return nil, fmt.Sprintf("no persistent tool cache: its directory %s lies in or holds the root %s (set [run] cache to a directory outside every root)", base, r), nil
		}
	}
	var roots []string
	for _, r := range writable {
		roots = append(roots, r+" (writable)")
	}
	for _, r := range readOnly {
		roots = append(roots, r+" (read-only)")
	}
	slices.Sort(roots)
	dir := filepath.Join(base, cacheKey(roots))
	for range 3 {
		u, err = holdCache(dir, roots)
		if !errors.Is(err, errCacheMoved) {
			return u, "", err
		}
	}
	return nil, "", fault.Wrap(fault.Unavailable, err, "the run cache %s kept being removed", dir)
}

// cacheKey names the cache of a sorted set of roots.
func cacheKey(roots []string) string {
	sum := sha256.Sum256([]byte(strings.Join(roots, "\x00")))
	return hex.EncodeToString(sum[:])[:cacheKeyLen]
}

// errCacheMoved is a cache removed between the open of its lock and the
// lock.
var errCacheMoved = errors.New("the cache was removed while it was being locked")

// holdCache makes the cache directory dir, locks it shared and marks it
// used now.
func holdCache(dir string, roots []string) (*cacheUse, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fault.Wrap(fault.Unavailable, err, "the run cache %s cannot be made", dir)
	}
	lock, err := os.OpenFile(filepath.Join(dir, cacheLock), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fault.Wrap(fault.Unavailable, err, "the run cache's lock cannot be opened")
	}
	fail := func(err error) (*cacheUse, error) { lock.Close(); return nil, err }
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_SH); err != nil {
		return fail(fault.Wrap(fault.Unavailable, err, "the run cache's lock cannot be taken"))
	}
	var held, named unix.Stat_t
	if unix.Fstat(int(lock.Fd()), &held) != nil || unix.Lstat(lock.Name(), &named) != nil || held.Ino != named.Ino || held.Dev != named.Dev {
		return fail(errCacheMoved)
	}
	if err := unix.Futimes(int(lock.Fd()), nil); err != nil {
		return fail(fault.Wrap(fault.Unavailable, err, "the run cache's lock cannot be marked used"))
	}
	tools := filepath.Join(dir, cacheTools)
	for _, v := range cacheVars {
		if err := os.MkdirAll(filepath.Join(tools, v.dir), 0o700); err != nil {
			return fail(fault.Wrap(fault.Unavailable, err, "the run cache %s cannot be made", tools))
		}
	}
	note := filepath.Join(dir, cacheRootsNote)
	if _, err := os.Lstat(note); errors.Is(err, os.ErrNotExist) {
		os.WriteFile(note, []byte(strings.Join(roots, "\n")+"\n"), 0o600)
	}
	return &cacheUse{tools: tools, lock: lock}, nil
}

// env is the environment pointing each tool at its cache.
func (u *cacheUse) env() []string {
	out := make([]string, len(cacheVars))
	for i, v := range cacheVars {
		out[i] = v.name + "=" + filepath.Join(u.tools, v.dir)
	}
	return out
}

func (u *cacheUse) release() {
	if u != nil {
		u.lock.Close()
	}
}

// trimIfDue measures the caches when the last measure (by any process
// of the user) is older than limits.RunCacheTrimInterval, and removes
// whole caches, the least recently used first, until the rest fits the
// bound. It returns a note saying what it removed, or why it could not.
func (c *caches) trimIfDue(ctx context.Context) string {
	if c.base == "" {
		return ""
	}
	base, err := filepath.EvalSymlinks(c.base)
	if err != nil || !trimDue(base) {
		return ""
	}
	entries, err := os.ReadDir(base)
	if err != nil {
		return "the run cache could not be measured: " + err.Error()
	}
	var keys []cacheEntry
	var total int64
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, cacheTrash) {
			atfile.RemoveAll(ctx, filepath.Join(base, name)) // left by a process killed while removing
			continue
		}
		if !isCacheKey(name) {
			continue
		}
		k := measure(ctx, filepath.Join(base, name))
		keys = append(keys, k)
		total += k.bytes
	}
	if total <= c.bound {
		return ""
	}
	slices.SortFunc(keys, func(a, b cacheEntry) int { return a.used.Compare(b.used) })
	was, removed := total, 0
	var failed []string
	for _, k := range keys {
		if total <= c.bound {
			break
		}
		if err := removeCache(ctx, base, k.dir); err != nil {
			failed = append(failed, err.Error())
			continue
		}
		total -= k.bytes
		removed++
	}
	note := fmt.Sprintf("the run cache held %s, past its bound of %s ([run] cache_bytes): the caches of %d set(s) of roots were removed, the least recently used first, leaving %s",
		limits.Bytes(was), limits.Bytes(c.bound), removed, limits.Bytes(total))
	if len(failed) > 0 {
		note += "; not removed: " + strings.Join(failed, "; ")
	}
	return note
}

// trimDue reports whether the caches were last measured longer than
// limits.RunCacheTrimInterval ago, and marks them measured now.
func trimDue(base string) bool {
	stamp := filepath.Join(base, cacheStamp)
	if st, err := os.Lstat(stamp); err == nil && time.Since(st.ModTime()) < limits.RunCacheTrimInterval {
		return false
	}
	f, err := os.OpenFile(stamp, os.O_WRONLY|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return false
	}
	f.Close()
	now := time.Now()
	return os.Chtimes(stamp, now, now) == nil
}

func isCacheKey(name string) bool {
	_, err := hex.DecodeString(name)
	return len(name) == cacheKeyLen && err == nil
}

// cacheEntry is one cache as measured: its size and its last use.
type cacheEntry struct {
	dir   string
	bytes int64
	used  time.Time
}

// measure sizes one cache; one past the walk's bound counts as past the
// whole bound.
func measure(ctx context.Context, dir string) cacheEntry {
	n, err := atfile.Usage(ctx, dir)
	if err != nil {
		n = limits.RunHardCacheBytes + 1
	}
	k := cacheEntry{dir: dir, bytes: n}
	if st, err := os.Lstat(filepath.Join(dir, cacheLock)); err == nil {
		k.used = st.ModTime()
	}
	return k
}

// removeCache removes the cache dir unless a run holds it: renamed away
// first, so that no run finds it half removed.
func removeCache(ctx context.Context, base, dir string) error {
	// A cache without its lock file has no run (the container cannot
	// reach the file).
	lock, err := os.OpenFile(filepath.Join(dir, cacheLock), os.O_RDWR|unix.O_NOFOLLOW, 0)
	if err == nil && unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		lock.Close()
		return fmt.Errorf("%s is in use", filepath.Base(dir))
	}
	trash := filepath.Join(base, fmt.Sprintf("%s%s-%d", cacheTrash, filepath.Base(dir), os.Getpid()))
	err = os.Rename(dir, trash)
	lock.Close() // nil without a lock file; a run waiting for it finds the cache gone, and makes it anew
	if err != nil {
		return err
	}
	return atfile.RemoveAll(ctx, trash)
}
