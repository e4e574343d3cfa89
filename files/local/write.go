package local

import (
	"context"
	"os"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/internal/scope"
)

// newFileMode is the mode of a file Write creates.
const newFileMode = 0o644

// Write atomically creates or replaces the file t names with data
// (scope.Target.Replace, making missing parents). See the package comment
// for what it guarantees.
func (p *Provider) Write(ctx context.Context, t *scope.Target, data []byte, opts *files.WriteOptions) (files.Version, error) {
	if err := ctx.Err(); err != nil {
		return files.Version{}, fault.As(err)
	}
	name := t.Name()
	if name == "." {
		return files.Version{}, fault.New(fault.InvalidInput, "the root itself is a directory, not a file")
	}
	var o files.WriteOptions
	if opts != nil {
		o = *opts
	}
	ro := &scope.ReplaceOptions{Role: name, Mode: newFileMode, NoReplace: o.Guard && o.Expect.IsZero(), MakeParents: true}
	if o.Guard {
		ro.Check = func(exists bool, cur scope.Stat) error { return checkGuard(ctx, t, o.Expect, exists, cur) }
	}
	write := func(f *os.File) error { _, err := f.Write(data); return err }
	if err := t.Replace(ctx, write, ro); err != nil {
		if fault.CodeOf(err) == fault.Conflict && ro.NoReplace {
			return files.Version{}, createdMeanwhile(name)
		}
		return files.Version{}, err
	}
	return files.VersionOf(data), nil
}

// checkGuard is a guarded write's precondition (files.Guard.Holds); a
// file of another size than expected is not read.
func checkGuard(ctx context.Context, t *scope.Target, expect files.Version, exists bool, cur scope.Stat) error {
	g := files.Guard{Enabled: true, Version: expect}
	return g.Holds(t.Name(), exists, func() (files.Version, error) {
		if cur.Size != expect.Size() {
			return files.Version{}, nil
		}
		return version(ctx, t)
	})
}

// createdMeanwhile is the conflict of a create-only write whose target
// appeared: the zero guard's refusal of an existing file.
func createdMeanwhile(name string) error {
	return files.Guard{Enabled: true}.Holds(name, true, nil)
}

// version reads the regular file t names, never following a symlink or
// blocking on anything else, and returns its version.
func version(ctx context.Context, t *scope.Target) (files.Version, error) {
	f, _, err := t.OpenRegular(t.Name())
	if err != nil {
		return files.Version{}, err
	}
	defer f.Close()
	v, err := files.ReadVersion(ctx, f)
	if err != nil {
		return files.Version{}, scope.Fault(err, t.Name())
	}
	return v, nil
}
