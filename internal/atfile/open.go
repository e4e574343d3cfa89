package atfile

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
