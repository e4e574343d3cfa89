package state

import (
	"context"
	"os"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/internal/atfile"
	"github.com/capkit/capkit/limits"
)

// Replace atomically replaces the content of the state file at the
// absolute host path path with data, creating it if it does not exist.
// data may be at most limits.StateMaxBytes. See the package comment for
// the guarantees.
func Replace(ctx context.Context, path string, data []byte) error {
	if err := checkSize(len(data)); err != nil {
		return err
	}
	d, name, err := atfile.OpenParent(path)
	if err != nil {
		return err
	}
	defer d.Close()
	return replaceAt(ctx, d, name, data, nil)
}

func checkSize(n int) error {
	if n > limits.StateMaxBytes {
		return fault.LimitExceeded("state bytes", limits.StateMaxBytes, int64(n))
	}
	return nil
}

// replaceAt replaces name in d (atfile.Dir.Replace): a new state file is
// private (0600); an existing one keeps its permission bits.
func replaceAt(ctx context.Context, d *atfile.Dir, name string, data []byte, check func(exists bool, cur atfile.Stat) error) error {
	write := func(f *os.File) error { _, err := f.Write(data); return err }
	return d.Replace(ctx, name, write, &atfile.ReplaceOptions{Role: "state file", Mode: 0o600, Check: check})
}

// replaceTool is state_replace: the replacement is offered to the file
// policy's write gate (ev) like write_file's, made under the guard the
// gate sets, and reported to its observers.
func replaceTool(ctx context.Context, s files.Session, roots []string, protected capability.Protected, in ReplaceArgs, ev *files.Events) (ReplaceResult, error) {
	if err := checkSize(len(in.Content)); err != nil {
		return ReplaceResult{}, err
	}
	root, rel, err := files.Resolve(roots, in.Path)
	if err != nil {
		return ReplaceResult{}, err
	}
	d, name, _, err := atfile.ResolveParent(roots, in.Path)
	if err != nil {
		return ReplaceResult{}, err
	}
	defer d.Close()
	if err := atfile.CheckOpened(roots, root, d, name, rel, protected.CheckWrite); err != nil {
		return ReplaceResult{}, err
	}
	e := &files.Expectation{Session: s, Op: files.OpWrite, Root: root, Name: rel}
	if ev != nil {
		if e.Exists, e.Current, err = current(ctx, d, name); err != nil {
			return ReplaceResult{}, err
		}
		if err := ev.ExpectWrite(ctx, e); err != nil {
			return ReplaceResult{}, err
		}
	}
	data := []byte(in.Content)
	check := func(exists bool, _ atfile.Stat) error {
		return e.Guard.Holds(rel, exists, func() (files.Version, error) {
			_, v, err := current(ctx, d, name)
			return v, err
		})
	}
	if err := replaceAt(ctx, d, name, data, check); err != nil {
		return ReplaceResult{}, err
	}
	if ev != nil {
		ev.Observed(ctx, files.Observation{Session: s, Op: files.OpWrite, Root: root, Name: rel, Version: files.VersionOf(data)})
	}
	return ReplaceResult{Bytes: len(in.Content)}, nil
}

// current reports whether the state file name in d exists and, if it
// does, its version. Anything but a regular file is refused.
func current(ctx context.Context, d *atfile.Dir, name string) (bool, files.Version, error) {
	f, _, err := d.OpenRegular(name, "state file")
	if fault.CodeOf(err) == fault.NotFound {
		return false, files.Version{}, nil
	}
	if err != nil {
		return false, files.Version{}, err
	}
	defer f.Close()
	v, err := files.ReadVersion(ctx, f)
	if err != nil {
		return false, files.Version{}, atfile.Fault(err, "state file")
	}
	return true, v, nil
}
