package local

import (
	"context"
	"os"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/internal/atfile"
)

// newFileMode is the mode of a file Write creates.
const newFileMode = 0o644

// Write atomically creates or replaces name with data (atfile.Dir.Replace).
// See the package comment for what it guarantees.
func (p *Provider) Write(ctx context.Context, root, name string, data []byte, opts *files.WriteOptions) (files.Version, error) {
	if err := ctx.Err(); err != nil {
		return files.Version{}, fault.As(err)
	}
	if err := checkName(name); err != nil {
		return files.Version{}, err
	}
	if name == "." {
		return files.Version{}, fault.New(fault.InvalidInput, "the root itself is a directory, not a file")
	}
	var o files.WriteOptions
	if opts != nil {
		o = *opts
	}
	r, release, err := p.root(root)
	if err != nil {
		return files.Version{}, err
	}
	defer release()
	d, base, err := p.makeParent(r, root, name)
	if err != nil {
		return files.Version{}, err
	}
	defer d.Close()
	if err := atfile.CheckOpened([]string{root}, root, d, base, name, p.protected.CheckWrite); err != nil {
		return files.Version{}, err
	}
	ro := &atfile.ReplaceOptions{Role: name, Mode: newFileMode, NoReplace: o.Guard && o.Expect.IsZero()}
	if o.Guard {
		ro.Check = func(exists bool, cur atfile.Stat) error { return checkGuard(ctx, d, base, name, o.Expect, exists, cur) }
	}
	write := func(f *os.File) error { _, err := f.Write(data); return err }
	if err := d.Replace(ctx, base, write, ro); err != nil {
		if fault.CodeOf(err) == fault.Conflict && ro.NoReplace {
			return files.Version{}, createdMeanwhile(name)
		}
		return files.Version{}, err
	}
	return files.VersionOf(data), nil
}

// checkGuard is a guarded write's precondition (files.Guard.Holds); a
// file of another size than expected is not read.
func checkGuard(ctx context.Context, d *atfile.Dir, base, name string, expect files.Version, exists bool, cur atfile.Stat) error {
	g := files.Guard{Enabled: true, Version: expect}
	return g.Holds(name, exists, func() (files.Version, error) {
		if cur.Size != expect.Size() {
			return files.Version{}, nil
		}
		return version(ctx, d, base, name)
	})
}

// createdMeanwhile is the conflict of a create-only write whose target
// appeared: the zero guard's refusal of an existing file.
func createdMeanwhile(name string) error {
	return files.Guard{Enabled: true}.Holds(name, true, nil)
}

// version reads the regular file base in d, never following a symlink or
// blocking on anything else, and returns its version.
func version(ctx context.Context, d *atfile.Dir, base, name string) (files.Version, error) {
	f, _, err := d.OpenRegular(base, name)
	if err != nil {
		return files.Version{}, err
	}
	defer f.Close()
	v, err := files.ReadVersion(ctx, f)
	if err != nil {
		return files.Version{}, atfile.Fault(err, name)
	}
	return v, nil
}
