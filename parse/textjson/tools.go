package textjson

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/kernel/toolkit"
	"github.com/capkit/capkit/limits"
)

// ToolOptions configure RegisterTools: a toolkit.FileReader for path arguments
// and the policy bounds. A nil *ToolOptions means the zero value.
type ToolOptions = toolkit.ReaderOptions

// SourceArgs name the input of a tool: inline text or a file path.
type SourceArgs struct {
	Path     string `json:"path,omitempty" jsonschema:"file to read, relative to the first writable root or absolute inside any root (list_roots lists them); needs read_file on that root; give path or text, not both"`
	Text     string `json:"text,omitempty" jsonschema:"the input itself, inline; give path or text, not both"`
	MaxBytes int64  `json:"max_bytes,omitempty" jsonschema:"input byte limit; default and maximum are in the tool description"`
}

// TextResult is what text_validate returns.
type TextResult struct {
	TextInfo
}

// ToolText renders the counts.
func (r TextResult) ToolText() string { return "valid UTF-8 text: " + r.TextInfo.String() }

// JSONResult is what json_validate returns.
type JSONResult struct {
	Valid bool `json:"valid"`
	Stats
}

// ToolText renders the verdict and the counts.
func (r JSONResult) ToolText() string {
	return fmt.Sprintf("valid JSON: %s, %d bytes, %d values, depth %d", r.Kind, r.Bytes, r.Values, r.Depth)
}

// CanonicalArgs are json_canonical's arguments.
type CanonicalArgs struct {
	SourceArgs
	Offset int64 `json:"offset,omitempty" jsonschema:"byte offset in the canonical text where the shown window starts: the previous answer's next_offset; default 0"`
}

// CanonicalResult is what json_canonical returns: the counts in
// structured content and the canonical text (or the window of it that
// fits the output bound) as the tool text, so the document is not sent
// twice.
type CanonicalResult struct {
	Stats
	CanonicalBytes int64 `json:"canonical_bytes"`
	// Offset and ShownBytes are the window of the canonical text shown;
	// NextOffset is where the next starts (0: this one reaches the end).
	Offset     int64 `json:"offset,omitzero"`
	ShownBytes int64 `json:"shown_bytes"`
	NextOffset int64 `json:"next_offset,omitzero"`
	canonical  string
}

// ToolText is the canonical JSON; a window of it is followed by a line
// saying how to go on (canonical JSON holds no newline, so the first one
// ends the window).
func (r CanonicalResult) ToolText() string {
	if r.NextOffset == 0 {
		return r.canonical
	}
	return fmt.Sprintf("%s\n[bytes %d..%d of %d shown: the next window is json_canonical with offset=%d]", r.canonical, r.Offset, r.Offset+r.ShownBytes, r.CanonicalBytes, r.NextOffset)
}

// canonicalWindow is the result holding the window of out from offset on
// that fits the call's output bound: all of it when it fits.
func canonicalWindow(call *kernel.Call, out []byte, st Stats, offset int64) (CanonicalResult, error) {
	n := int64(len(out))
	if offset < 0 || (offset > 0 && offset >= n) {
		return CanonicalResult{}, fault.New(fault.InvalidInput, "offset %d is outside the canonical text, which has %d bytes", offset, n)
	}
	if offset < n && !utf8.RuneStart(out[offset]) {
		return CanonicalResult{}, fault.New(fault.InvalidInput, "offset %d is inside a UTF-8 character: pass an offset a previous answer gave (next_offset)", offset)
	}
	r := CanonicalResult{Stats: st, CanonicalBytes: n, Offset: offset, ShownBytes: n - offset, canonical: string(out[offset:])}
	all, err := kernel.Encode(r)
	if err != nil || all.Size() <= call.MaxOutputBytes {
		return r, err
	}
	frame, err := kernel.Encode(CanonicalResult{Stats: st, CanonicalBytes: n, Offset: offset, ShownBytes: n, NextOffset: n})
	if err != nil {
		return CanonicalResult{}, err
	}
	win, next := toolkit.ByteWindow(string(out), offset, call.MaxOutputBytes-frame.Size())
	if win == "" {
		return CanonicalResult{}, toolkit.UnitTooLarge(call, "the counts and one character of the canonical text", frame.Size(), "they alone nearly fill it")
	}
	r.canonical, r.ShownBytes, r.NextOffset = win, int64(len(win)), next
	return r, nil
}

// RegisterTools registers text_validate, json_validate and json_canonical
// (effect parse, deferred). opts may be nil.
func RegisterTools(b *kernel.Builder, opts *ToolOptions) error {
	o := opts.Value()
	for _, register := range []func(*kernel.Builder, ToolOptions) error{registerTextValidate, registerJSONValidate, registerJSONCanonical} {
		if err := register(b, o); err != nil {
			return err
		}
	}
	return nil
}

func registerTextValidate(b *kernel.Builder, o ToolOptions) error {
	return kernel.AddTool(b, o.Policy("text_validate", 0), kernel.Meta{
		Effect:  capability.Parse,
		Title:   "Validate text",
		Summary: "Check that a file or text is valid UTF-8 and count its bytes, characters and lines.",
		Description: fmt.Sprintf(`Checks that the input is valid UTF-8 text and counts bytes, characters and lines.
Input: path (a file under a readable root) or text (inline). Limit: max_bytes, default %s (%d bytes), at most %s; a larger input fails with limit.
Invalid UTF-8 fails with invalid_input naming the byte offset, line and column of the first bad byte.
Example: {"path": "notes/readme.txt"}`, limits.Bytes(limits.TextDefaultBytes), limits.TextDefaultBytes, limits.Bytes(limits.TextMaxBytes)),
	}, func(ctx context.Context, call *kernel.Call, in SourceArgs) (TextResult, error) {
		max, err := maxBytes("text", in.MaxBytes, limits.TextDefaultBytes, limits.TextMaxBytes)
		if err != nil {
			return TextResult{}, err
		}
		data, err := toolkit.Read(ctx, call, o.Files, in.Text, in.Path, max, "text")
		if err != nil {
			return TextResult{}, err
		}
		_, info, err := DecodeText(data, &TextOptions{MaxBytes: max})
		return TextResult{info}, err
	})
}

// jsonDesc is what the JSON tools share in their descriptions.
func jsonDesc(what string) string {
	return fmt.Sprintf(`%s
Input: path (a file under a readable root) or text (inline). Limit: max_bytes, default %s (%d bytes), at most %s; nesting depth at most %d.
Strict: duplicate member names at any depth, NaN/Infinity and numbers beyond the 64-bit float range, invalid UTF-8, a byte order mark and trailing data are rejected with invalid_input naming line, column and byte offset; numbers keep their exact digits.`,
		what, limits.Bytes(limits.JSONDefaultBytes), limits.JSONDefaultBytes, limits.Bytes(limits.JSONMaxBytes), limits.JSONMaxDepth)
}

func registerJSONValidate(b *kernel.Builder, o ToolOptions) error {
	return kernel.AddTool(b, o.Policy("json_validate", 0), kernel.Meta{
		Effect:      capability.Parse,
		Title:       "Validate JSON",
		Summary:     "Strictly validate a JSON file or text: duplicate keys, non-finite numbers, depth; errors with line and column.",
		Description: jsonDesc("Validates one JSON value strictly and reports its kind, size, value count and depth.") + "\nExample: {\"path\": \"config/settings.json\"}",
	}, func(ctx context.Context, call *kernel.Call, in SourceArgs) (JSONResult, error) {
		max, err := maxBytes("JSON", in.MaxBytes, limits.JSONDefaultBytes, limits.JSONMaxBytes)
		if err != nil {
			return JSONResult{}, err
		}
		data, err := toolkit.Read(ctx, call, o.Files, in.Text, in.Path, max, "JSON")
		if err != nil {
			return JSONResult{}, err
		}
		st, err := Validate(ctx, data, &JSONOptions{MaxBytes: max})
		if err != nil {
			return JSONResult{}, err
		}
		return JSONResult{Valid: true, Stats: st}, nil
	})
}

func registerJSONCanonical(b *kernel.Builder, o ToolOptions) error {
	return kernel.AddTool(b, o.Policy("json_canonical", 0), kernel.Meta{
		Effect:  capability.Parse,
		Title:   "Canonical JSON",
		Summary: "Validate JSON strictly and return its canonical form (sorted keys, no whitespace, exact numbers).",
		Description: jsonDesc("Validates one JSON value like json_validate and returns its canonical text: members sorted as RFC 8785 orders them, no whitespace, minimal string escapes, numbers exactly as written.") +
			fmt.Sprintf("\nThe canonical text is never longer than the input; past the output bound (%s unless the host sets another) it comes as a window of whole characters followed by a line naming next_offset, the offset of the next call.", limits.Bytes(limits.DefaultMaxOutputBytes)) +
			"\nExample: {\"text\": \"{\\\"b\\\": 1, \\\"a\\\": [true, null]}\"}",
	}, func(ctx context.Context, call *kernel.Call, in CanonicalArgs) (CanonicalResult, error) {
		max, err := maxBytes("JSON", in.MaxBytes, limits.JSONDefaultBytes, limits.JSONMaxBytes)
		if err != nil {
			return CanonicalResult{}, err
		}
		data, err := toolkit.Read(ctx, call, o.Files, in.Text, in.Path, max, "JSON")
		if err != nil {
			return CanonicalResult{}, err
		}
		out, st, err := Canonical(ctx, data, &JSONOptions{MaxBytes: max})
		if err != nil {
			return CanonicalResult{}, err
		}
		return canonicalWindow(call, out, st, in.Offset)
	})
}
