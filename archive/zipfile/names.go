package zipfile

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// maxElementBytes is the longest path element Linux filesystems accept.
const maxElementBytes = 255

// checkName reports why name is not a safe member name, or nil. A
// directory member's name ends in one "/", which isDir strips first.
func checkName(name string, maxDepth int) *fault.Error {
	bad := func(why string) *fault.Error {
		return memberFault(fault.InvalidInput, name, ErrUnsafeName, "member name %q is refused: %s", name, why)
	}
	switch {
	case name == "":
		return bad("empty name")
	case len(name) > limits.PathMaxBytes:
		return memberFault(fault.Limit, name, ErrUnsafeName, "member name of %d bytes exceeds the limit of %d", len(name), limits.PathMaxBytes)
	case !utf8.ValidString(name):
		return bad("not valid UTF-8")
	case strings.ContainsRune(name, '\\'):
		return bad("backslash (not a ZIP path separator; a Windows path trick)")
	case name[0] == '/':
		return bad("absolute path")
	case len(name) >= 2 && name[1] == ':' && (name[0]|0x20 >= 'a' && name[0]|0x20 <= 'z'):
		return bad("drive letter")
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return bad("control character")
		}
	}
	elems := strings.Split(name, "/")
	if len(elems) > maxDepth {
		return memberFault(fault.Limit, name, ErrUnsafeName, "member name %q has %d path elements, more than the limit of %d", name, len(elems), maxDepth)
	}
	for _, e := range elems {
		switch {
		case e == "":
			return bad("empty path element")
		case e == "." || e == "..":
			return bad(`"." or ".." path element`)
		case len(e) > maxElementBytes:
			return bad("path element longer than 255 bytes")
		}
	}
	return nil
}

// splitDir reports whether raw names a directory member and returns the name
// without its trailing slash.
func splitDir(raw string) (string, bool) {
	if strings.HasSuffix(raw, "/") {
		return raw[:len(raw)-1], true
	}
	return raw, false
}

// nameSet detects names that collide on any filesystem: equal after NFC
// normalisation and Unicode case folding, or used both as a file and as a
// directory (an ancestor of another member).
type nameSet struct {
	fold     cases.Caser
	kinds    map[string]bool // folded name -> is a directory
	explicit map[string]bool // folded names of directory members
}

func newNameSet() *nameSet {
	return &nameSet{fold: cases.Fold(), kinds: map[string]bool{}, explicit: map[string]bool{}}
}

func (s *nameSet) key(name string) string {
	return norm.NFC.String(s.fold.String(norm.NFC.String(name)))
}

// add records a file (dir false) or directory name and its ancestors.
func (s *nameSet) add(name string, dir bool) *fault.Error {
	dup := func() *fault.Error {
		return memberFault(fault.InvalidInput, name, ErrDuplicateName,
			"member name %q collides with another member (names equal after Unicode normalisation and case folding, or a name that is both a file and a directory)", name)
	}
	k := s.key(name)
	if isDir, seen := s.kinds[k]; seen && (!dir || !isDir || s.explicit[k]) {
		return dup()
	}
	s.kinds[k] = dir
	if dir {
		s.explicit[k] = true
	}
	for i := len(k) - 1; i > 0; i-- {
		if k[i] != '/' {
			continue
		}
		if isDir, seen := s.kinds[k[:i]]; seen {
			if !isDir {
				return dup()
			}
			break // its ancestors were recorded with it
		}
		s.kinds[k[:i]] = true
	}
	return nil
}
