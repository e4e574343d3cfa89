package atfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/capkit/capkit/fault"
)

// TestEscapes pins the text Escapes recognises against the running Go
// version: every way os.Root refuses to leave its root must be classified
// as denied, never as an i/o failure.
func TestEscapes(t *testing.T) {
	outside := t.TempDir()
	root := t.TempDir()
	must(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("x"), 0o600))
	must(t, os.Symlink(outside, filepath.Join(root, "out")))
	must(t, os.Symlink("../"+filepath.Base(outside)+"/secret", filepath.Join(root, "climb")))
	must(t, os.Mkdir(filepath.Join(root, "sub"), 0o700))
	r, err := os.OpenRoot(root)
	must(t, err)
	defer r.Close()
	for _, op := range []struct {
		name string
		do   func() error
	}{
		{"open ..", func() error { _, err := r.Open("../x"); return err }},
		{"open through an absolute symlink", func() error { _, err := r.Open("out/secret"); return err }},
		{"open a climbing symlink", func() error { _, err := r.Open("climb"); return err }},
		{"open root through a symlink", func() error { _, err := r.OpenRoot("out"); return err }},
		{"stat ..", func() error { _, err := r.Stat("sub/../../x"); return err }},
		{"rename out", func() error { return r.Rename("sub", "../sub") }},
		// MkdirAll wraps the refusal in a second PathError (mkdirat over
		// statat).
		{"mkdirall through an absolute symlink", func() error { return r.MkdirAll("out/a/b", 0o700) }},
		{"mkdirall of an absolute symlink", func() error { return r.MkdirAll("out/", 0o700) }},
	} {
		t.Run(op.name, func(t *testing.T) {
			err := op.do()
			if !Escapes(err) {
				t.Fatalf("Escapes(%v) = false", err)
			}
			if fe := Fault(err, "file"); fe.Code != fault.Denied || strings.Contains(fe.Message, root) {
				t.Fatalf("Fault = %q %q", fe.Code, fe.Message)
			}
		})
	}
	for _, err := range []error{
		nil,
		errors.New(pathEscapes),
		&fs.PathError{Op: "open", Path: "x", Err: syscall.ENOENT},
		&fs.PathError{Op: "open", Path: "x", Err: os.ErrClosed},
	} {
		if Escapes(err) {
			t.Errorf("Escapes(%v) = true", err)
		}
	}
}

func TestFault(t *testing.T) {
	pe := func(err error) error { return &fs.PathError{Op: "openat", Path: "/host/secret/path", Err: err} }
	cases := []struct {
		err  error
		code fault.Code
		is   error
	}{
		{pe(errors.New(pathEscapes)), fault.Denied, nil},
		{&os.LinkError{Op: "renameat", Old: "a", New: "../b", Err: errors.New(pathEscapes)}, fault.Denied, nil},
		{pe(syscall.ELOOP), fault.Denied, ErrSymlink},
		{pe(syscall.ENOENT), fault.NotFound, nil},
		{pe(syscall.ENOTDIR), fault.NotFound, nil},
		{pe(syscall.EEXIST), fault.Conflict, nil},
		{pe(syscall.ENOTEMPTY), fault.Conflict, nil},
		{pe(syscall.EACCES), fault.Denied, nil},
		{pe(syscall.EPERM), fault.Denied, nil},
		{pe(syscall.EROFS), fault.Denied, nil},
		{pe(syscall.EISDIR), fault.InvalidInput, nil},
		{pe(syscall.ENXIO), fault.InvalidInput, nil},
		{pe(syscall.ENAMETOOLONG), fault.InvalidInput, nil},
		{pe(syscall.EMFILE), fault.Unavailable, nil},
		{pe(syscall.ENOSPC), fault.Unavailable, nil},
		{pe(syscall.EIO), fault.IO, nil},
		{pe(os.ErrClosed), fault.IO, nil},
		{fault.New(fault.Limit, "x"), fault.Limit, nil},
	}
	for _, c := range cases {
		fe := Fault(c.err, "source")
		if fe.Code != c.code {
			t.Errorf("Fault(%v) = %q, want %q", c.err, fe.Code, c.code)
		}
		if c.is != nil && !errors.Is(fe, c.is) {
			t.Errorf("Fault(%v) is not %v", c.err, c.is)
		}
		if strings.Contains(fe.Message, "/host/") {
			t.Errorf("Fault(%v) message %q names the host path", c.err, fe.Message)
		}
	}
}
