// Package textjson turns caller-supplied bytes into bounded, strictly
// checked text and JSON.
//
// Text is explicit UTF-8: DecodeText accepts at most TextOptions.MaxBytes
// (default limits.TextDefaultBytes, at most limits.TextMaxBytes) and fails
// with the byte offset, line and column of the first invalid byte.
//
// JSON is stricter than RFC 8259 requires, because a value that two
// consumers read differently is an attack surface: Validate, Decode and
// Canonical reject duplicate object member names at any depth, invalid
// UTF-8 (also inside escapes: lone surrogates), a byte order mark, trailing
// data after the value, nesting deeper than limits.JSONMaxDepth, and numbers
// that are not finite as a 64-bit float (NaN and Infinity are not JSON at
// all; 1e999 would become +Inf in most consumers). Numbers are preserved
// exactly as written: Decode returns them as Number, the literal text, so a
// 20-digit integer is never rounded through float64. Inputs are bounded by
// JSONOptions.MaxBytes (default limits.JSONDefaultBytes, at most
// limits.JSONMaxBytes). Every rejection is a *fault.Error: invalid_input for
// malformed input and limit for a bound, carrying a *SyntaxError with the
// byte offset, line and column.
//
// Parsing is done by github.com/go-json-experiment/json/jsontext, a
// maintained parser that rejects duplicate names and invalid UTF-8 and
// reports byte offsets; this package adds the depth and finiteness checks,
// positions, value building and the canonical form. Nothing here parses
// untrusted JSON by hand. The one hand-written loop, measure, runs only on
// text jsontext has already accepted whole, to find depth and the numbers
// to check in one pass: jsontext has no depth option and its token API is
// slower than its value validator (bench/RESULTS.md).
//
// What it does not guarantee: messages and SyntaxError never include
// document content except the JSON Pointer field of SyntaxError, which
// names members of the caller's own document; hosts that log errors should
// log the message, not the pointer.
package textjson
