// Package sniff checks that a response body is the format a caller
// selected before a reader is pointed at it.
//
// Check takes the body, the expected Format (json, feed, html, pdf, csv)
// and the media type the body was declared with, and returns a Report of
// what the body is and explicit warnings, or rejects the body with the
// reason: a wrong-format body (HTML where JSON or a feed was expected, a
// PDF where CSV was), an empty body, and an access screen — a login wall,
// cookie/consent wall, bot challenge, paywall or an error page served with
// a success status — in whatever format was expected. Rejections are
// *RejectError, code integrity: the bytes are not the document they stand
// for. This is the code htmldoc uses for access screens, and the detection
// is htmldoc's, not a second implementation.
//
// What it does and does not examine: the first limits.SniffHeadBytes of
// the body classify it (with net/http's WHATWG content sniffing for binary
// types and a few leading XML tokens for the root element of XML); an HTML
// body is read whole by htmldoc (within its limits) for access screens and
// script-rendered shells. JSON, feeds and CSV are not validated here:
// textjson, feed and tabular do that. PDF is recognised by its signature
// (%PDF- in the first 1,024 bytes) and its %%EOF marker only: sniff is not
// a PDF parser, extracts no text and does no OCR, and a body with a PDF
// signature may still be a corrupt or hostile PDF.
package sniff
