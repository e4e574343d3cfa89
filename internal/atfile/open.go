package atfile

import (
	"os"
)

// OpenParent opens the directory holding the absolute host path path and
// returns it with the path's last element. Symlinks before the last
// element are followed (see OpenDir); the last element is for the caller
// to open with the no-follow methods of Dir.
func OpenParent(path string) (*Dir, string, error) {
	dir, name, err := SplitParent(path)
	if err != nil {
		return nil, "", err
	}
	d, err := OpenDir(dir)
	if err != nil {
		return nil, "", err
	}
	return d, name, nil
}

// OpenParentIn is OpenParent for a slash-separated name inside r.
func OpenParentIn(r *os.Root, rel string) (*Dir, string, error) {
	dir, name, err := SplitRel(rel)
	if err != nil {
		return nil, "", err
	}
	d, err := OpenDirIn(r, dir)
	if err != nil {
		return nil, "", err
	}
	return d, name, nil
}

// ResolveParent maps a caller's path onto roots with fs.Resolve and opens
// its parent through an os.Root on the chosen root, so no element of the
// path leads out of that root. It returns the parent, the last element
// and the root.
func ResolveParent(roots []string, path string) (d *Dir, name, root string, err error) {
	r, root, rel, err := ResolveRoot(roots, path)
	if err != nil {
		return nil, "", "", err
	}
	defer r.Close()
	d, name, err = OpenParentIn(r, rel)
	return d, name, root, err
}

// OpenTree opens the directory at the absolute host path path; a symlink
// as its last element is refused (see OpenParent).
func OpenTree(path string) (*Dir, Stat, error) {
	dir, name, err := SplitParent(path)
	if err != nil {
		if path == "/" {
			return openSelf(OpenDir("/"))
		}
		return nil, Stat{}, err
	}
	d, err := OpenDir(dir)
	if err != nil {
		return nil, Stat{}, err
	}
	defer d.Close()
	return d.OpenSubdir(name, "directory")
}

// ResolveTree opens the directory a caller's path names inside roots (the
// root itself for "."), never following a symlink as its last element.
func ResolveTree(roots []string, path string) (*Dir, Stat, error) {
	r, _, rel, err := ResolveRoot(roots, path)
	if err != nil {
		return nil, Stat{}, err
	}
	defer r.Close()
	if rel == "." {
		return openSelf(OpenDirIn(r, "."))
	}
	d, name, err := OpenParentIn(r, rel)
	if err != nil {
		return nil, Stat{}, err
	}
	defer d.Close()
	return d.OpenSubdir(name, "directory")
}

func openSelf(d *Dir, err error) (*Dir, Stat, error) {
	if err != nil {
		return nil, Stat{}, err
	}
	st, err := Fstat(d.f)
	if err != nil {
		d.Close()
		return nil, Stat{}, err
	}
	return d, st, nil
}
