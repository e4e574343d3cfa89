package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/limits"
)

// The private tmp of a command in reduced containment is a directory of
// the host's temporary directory (scratchPrefix*), where no tmpfs bounds
// it. While the command runs it is measured against Limits.TmpBytes and
// limits.RunTmpInodes, and the command is killed past either; afterwards
// it is removed whatever modes the command left in it. The run holds an
// flock on it meanwhile, so that one left behind (capkit killed, or a
// removal that failed) is told from a live one and removed by the next
// run of any capkit process of this user.
const scratchPrefix = "capkit-run-"

// scratch is one run's private tmp.
type scratch struct {
	dir  string
	lock int // the directory, opened and flocked for the run
}

// newScratch makes a private tmp, first sweeping what earlier runs left.
func newScratch() (*scratch, error) {
	sweepScratch()
	dir, err := os.MkdirTemp("", scratchPrefix)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == nil {
		err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err != nil {
			unix.Close(fd)
		}
	}
	if err != nil {
		os.Remove(dir)
		return nil, err
	}
	return &scratch{dir: dir, lock: fd}, nil
}

// remove removes the private tmp; it says why when it cannot, and then
// leaves it to the next run's sweep.
func (s *scratch) remove() error {
	defer unix.Close(s.lock)
	err := removeIn(s.dir)
	if err != nil {
		leftovers.add(s.dir)
	}
	return err
}

// removeIn removes the directory at path, opening its parent by path.
func removeIn(path string) error {
	parent, err := unix.Open(filepath.Dir(path), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	return removeAll(parent, filepath.Base(path))
}

// leftovers are the private tmps this process could not remove.
var leftovers leftoverList

type leftoverList struct {
	mu    sync.Mutex
	dirs  []string
	swept bool // the temporary directory was swept once
}

func (l *leftoverList) add(dir string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dirs = append(l.dirs, dir)
}

// sweepScratch removes the private tmps left behind: on a process's first
// run every one of this user's in the temporary directory that no run
// holds, and on each later run those this process failed to remove.
func sweepScratch() {
	leftovers.mu.Lock()
	dirs := leftovers.dirs
	leftovers.dirs = nil
	first := !leftovers.swept
	leftovers.swept = true
	leftovers.mu.Unlock()
	if first {
		entries, _ := os.ReadDir(os.TempDir())
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), scratchPrefix) {
				dirs = append(dirs, filepath.Join(os.TempDir(), e.Name()))
			}
		}
	}
	for _, d := range dirs {
		if err := sweepOne(d); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, errHeld) {
			leftovers.add(d)
		}
	}
}

var errHeld = errors.New("in use by a run, or not this user's")

// sweepOne removes the private tmp dir unless a run holds it or another
// user owns it.
func sweepOne(dir string) error {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if int(st.Uid) != os.Geteuid() {
		return errHeld
	}
	// flock needs a descriptor opened for reading; the owner may have
	// taken that permission from the directory.
	lock, err := openDir(unix.AT_FDCWD, dir, true)
	if err != nil {
		return err
	}
	defer unix.Close(lock)
	if unix.Flock(lock, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return errHeld
	}
	return removeIn(dir)
}

// watchScratch measures dir until ctx ends and calls over, once, with the
// bound passed (its setting) and a description, when dir holds more than
// maxBytes or limits.RunTmpInodes entries.
func watchScratch(ctx context.Context, dir string, maxBytes int64, over func(bound, why string)) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	bound := usage{bytes: maxBytes, entries: limits.RunTmpInodes}
	wait := limits.RunScratchCheckEvery
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		start := time.Now()
		var u usage
		measure(fd, 0, &u, bound)
		switch {
		case u.bytes > bound.bytes:
			over(fmt.Sprintf("run.tmp_bytes=%d", bound.bytes), fmt.Sprintf("its private /tmp held more than %s ([run] tmp_bytes)", limits.Bytes(bound.bytes)))
			return
		case u.entries > bound.entries:
			over(fmt.Sprintf("run.tmp_entries=%d", bound.entries), fmt.Sprintf("its private /tmp held more than %s entries", limits.Count(bound.entries)))
			return
		}
		wait = max(limits.RunScratchCheckEvery, 20*time.Since(start))
	}
}
