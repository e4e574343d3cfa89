package zipfile

import (
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files/fileio"
)

// Sentinels, matched with errors.Is on the *fault.Error every function
// returns. Each failure about one member also carries a *MemberError naming
// it.
var (
	// ErrMalformed: the bytes are not a well-formed, single-disk ZIP
	// archive that starts at offset 0.
	ErrMalformed = fault.NewMark("zipfile: malformed archive")
	// ErrEncrypted: a member is encrypted.
	ErrEncrypted = fault.NewMark("zipfile: encrypted member")
	// ErrSpecialFile: a member is a symlink, device, FIFO or socket.
	ErrSpecialFile = fault.NewMark("zipfile: special file member")
	// ErrMethod: a member uses a compression method other than store or deflate.
	ErrMethod = fault.NewMark("zipfile: unsupported compression method")
	// ErrUnsafeName: a member name is absolute, climbs with "..", contains a
	// backslash, a control character or invalid UTF-8, or is otherwise not a
	// plain relative slash-separated path.
	ErrUnsafeName = fault.NewMark("zipfile: unsafe member name")
	// ErrDuplicateName: two members have names equal after NFC normalisation
	// and case folding, or one name is both a file and a directory.
	ErrDuplicateName = fault.NewMark("zipfile: duplicate member name")
	// ErrOverlap: two members share compressed data (a quine or overlap bomb).
	ErrOverlap = fault.NewMark("zipfile: overlapping member data")
	// ErrUnexpectedMember: a member the caller did not expect.
	ErrUnexpectedMember = fault.NewMark("zipfile: unexpected member")
	// ErrMissingMember: an expected member is absent.
	ErrMissingMember = fault.NewMark("zipfile: missing member")
	// ErrDigest: a member's SHA-256 differs from the expected digest.
	ErrDigest = fault.NewMark("zipfile: digest mismatch")
	// ErrSize: a member's data is not the size its header declares.
	ErrSize = fault.NewMark("zipfile: size mismatch")
	// ErrChanged: a file changed while it was being archived. It is
	// fileio.ErrChanged: Create reads its sources with fileio's stable read.
	ErrChanged = fileio.ErrChanged
)

// MemberError names the member a failure is about.
type MemberError struct {
	Name string
	Err  error
}

func (e *MemberError) Error() string { return e.Err.Error() + ": " + e.Name }

// Unwrap returns the sentinel.
func (e *MemberError) Unwrap() error { return e.Err }

func memberFault(code fault.Code, name string, sentinel error, format string, args ...any) *fault.Error {
	return fault.Wrap(code, &MemberError{Name: name, Err: sentinel}, format, args...)
}

func malformed(format string, args ...any) *fault.Error {
	return fault.Wrap(fault.InvalidInput, ErrMalformed, "not a valid ZIP archive: "+format, args...)
}
