package textarchive

import (
	"mime"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/limits"
)

// checkText refuses s unless it is valid UTF-8 of at most max bytes
// without control characters (C0, DEL, C1); empty when !required.
func checkText(what, s string, max int, required bool) error {
	switch {
	case s == "" && required:
		return fault.New(fault.InvalidInput, "the %s is empty", what)
	case len(s) > max:
		return fault.LimitExceeded(what+" bytes", int64(max), int64(len(s)))
	case !utf8.ValidString(s):
		return fault.New(fault.InvalidInput, "the %s is not valid UTF-8", what)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return fault.New(fault.InvalidInput, "the %s %q holds the control character U+%04X", what, clip.Text(s), r)
		}
	}
	return nil
}

// checkCollection checks a collection name: a name without "/", which
// separates it from the rest of an index ref.
func checkCollection(c string) error {
	if err := checkText("collection", c, limits.ArchiveMaxNameBytes, true); err != nil {
		return err
	}
	if strings.Contains(c, "/") {
		return fault.New(fault.InvalidInput, "the collection %q holds a \"/\"", clip.Text(c))
	}
	return nil
}

func checkItem(i string) error {
	return checkText("item", i, limits.ArchiveMaxNameBytes, true)
}

func checkRequest(r string) error {
	return checkText("request identity", r, limits.ArchiveMaxNameBytes, true)
}

// checkSourceURL checks a provenance URL: absolute, of at most
// limits.FetchMaxURLBytes.
func checkSourceURL(s string) error {
	if s == "" {
		return nil
	}
	if err := checkText("source URL", s, limits.FetchMaxURLBytes, true); err != nil {
		return err
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || (u.Host == "" && u.Opaque == "" && u.Path == "") {
		return fault.New(fault.InvalidInput, "the source URL %q is not an absolute URL", clip.Text(s))
	}
	return nil
}

// checkMediaType checks a media type such as "application/pdf".
func checkMediaType(t string) error {
	if err := checkText("media type", t, limits.ArchiveMaxLabelBytes, true); err != nil {
		return err
	}
	mt, _, err := mime.ParseMediaType(t)
	if err != nil || !strings.Contains(mt, "/") {
		return fault.New(fault.InvalidInput, "the media type %q is not a type/subtype such as application/pdf", clip.Text(t))
	}
	return nil
}

// checkFileName checks a file's name: one path element.
func checkFileName(n string) error {
	if err := checkText("file name", n, limits.ArchiveMaxNameBytes, true); err != nil {
		return err
	}
	if strings.ContainsAny(n, `/\`) || n == "." || n == ".." {
		return fault.New(fault.InvalidInput, "the file name %q is not one path element", clip.Text(n))
	}
	return nil
}
