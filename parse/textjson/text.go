package textjson

import (
	"fmt"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// TextOptions configure DecodeText. The zero value is the default bound.
type TextOptions struct {
	// MaxBytes bounds the input: zero means limits.TextDefaultBytes; more
	// than limits.TextMaxBytes is refused.
	MaxBytes int64
}

// TextInfo describes a decoded text.
type TextInfo struct {
	// Bytes, Runes and Lines count the text; a final line without a
	// newline counts, an empty text has no lines.
	Bytes int64 `json:"bytes"`
	Runes int64 `json:"runes"`
	Lines int64 `json:"lines"`
}

// maxBytes resolves a configured bound against its default and hard limit.
func maxBytes(what string, configured, def, hard int64) (int64, error) {
	switch {
	case configured == 0:
		return def, nil
	case configured < 0:
		return 0, fault.New(fault.InvalidInput, "%s byte limit must be positive, got %d", what, configured)
	case configured > hard:
		return 0, fault.LimitExceeded(what+" byte limit", hard, configured)
	}
	return configured, nil
}

// DecodeText returns data as a string after checking that it is within the
// bound and is valid UTF-8. It fails with limit for a larger input and with
// invalid_input (a *SyntaxError wrapping ErrInvalidUTF8) at the first
// invalid byte. The text is otherwise exact: a byte order mark, NUL
// bytes and any line endings are kept as they are.
func DecodeText(data []byte, opts *TextOptions) (string, TextInfo, error) {
	var o TextOptions
	if opts != nil {
		o = *opts
	}
	max, err := maxBytes("text", o.MaxBytes, limits.TextDefaultBytes, limits.TextMaxBytes)
	if err != nil {
		return "", TextInfo{}, err
	}
	if int64(len(data)) > max {
		return "", TextInfo{}, fault.LimitExceeded("text input bytes", max, int64(len(data)))
	}
	if i := firstInvalidUTF8(data); i >= 0 {
		return "", TextInfo{}, newSyntaxError(data, int64(i), "text", ErrInvalidUTF8)
	}
	info := TextInfo{Bytes: int64(len(data))}
	for _, r := range string(data) {
		info.Runes++
		if r == '\n' {
			info.Lines++
		}
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		info.Lines++
	}
	return string(data), info, nil
}

// String renders the counts for people.
func (i TextInfo) String() string {
	return fmt.Sprintf("%d bytes, %d characters, %d lines", i.Bytes, i.Runes, i.Lines)
}
