package state

import (
	"context"
	"os"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/internal/scope"
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
	t, err := scope.Host(path)
	if err != nil {
		return err
	}
	defer t.Close()
	return replaceAt(ctx, t, data, nil)
}

func checkSize(n int) error {
	if n > limits.StateMaxBytes {
		return fault.LimitExceeded("state bytes", limits.StateMaxBytes, int64(n))
	}
	return nil
}

// replaceAt replaces t (scope.Target.Replace): a new state file is
// private (0600); an existing one keeps its permission bits.
func replaceAt(ctx context.Context, t *scope.Target, data []byte, check func(exists bool, cur scope.Stat) error) error {
	write := func(f *os.File) error { _, err := f.Write(data); return err }
	return t.Replace(ctx, write, &scope.ReplaceOptions{Role: "state file", Mode: 0o600, Check: check})
}

// replaceTool is state_replace: the replacement is offered to the file
// policy's write gate (ev) like write_file's, made under the guard the
// gate sets, and reported to its observers.
func replaceTool(ctx context.Context, s files.Session, sc *scope.Scope, in ReplaceArgs, ev *files.Events) (ReplaceResult, error) {
	if err := checkSize(len(in.Content)); err != nil {
		return ReplaceResult{}, err
	}
	t, err := sc.Resolve(in.Path)
	if err != nil {
		return ReplaceResult{}, err
	}
	defer t.Close()
	if err := t.CheckWrite(); err != nil {
		return ReplaceResult{}, err
	}
	e := &files.Expectation{Session: s, Op: files.OpWrite, Root: t.Root(), Name: t.Name()}
	if ev != nil {
		if e.Exists, e.Current, err = current(ctx, t); err != nil {
			return ReplaceResult{}, err
		}
		if err := ev.ExpectWrite(ctx, e); err != nil {
			return ReplaceResult{}, err
		}
	}
	data := []byte(in.Content)
	check := func(exists bool, _ scope.Stat) error {
		return e.Guard.Holds(t.Name(), exists, func() (files.Version, error) {
			_, v, err := current(ctx, t)
			return v, err
		})
	}
	if err := replaceAt(ctx, t, data, check); err != nil {
		return ReplaceResult{}, err
	}
	if ev != nil {
		ev.Observed(ctx, files.Observation{Session: s, Op: files.OpWrite, Root: t.Root(), Name: t.Name(), Version: files.VersionOf(data)})
	}
	return ReplaceResult{Bytes: len(in.Content)}, nil
}

// current reports whether the state file t exists and, if it does, its
// version. Anything but a regular file is refused.
func current(ctx context.Context, t *scope.Target) (bool, files.Version, error) {
	f, _, err := t.OpenRegular("state file")
	if fault.CodeOf(err) == fault.NotFound {
		return false, files.Version{}, nil
	}
	if err != nil {
		return false, files.Version{}, err
	}
	defer f.Close()
	v, err := files.ReadVersion(ctx, f)
	if err != nil {
		return false, files.Version{}, scope.Fault(err, "state file")
	}
	return true, v, nil
}
