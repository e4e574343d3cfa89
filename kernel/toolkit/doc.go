// Package toolkit is what the capability groups' tool adapters share: the
// document a reader tool was given (inline text or a path read through the
// host's FileReader, never both, bounded) and its options (ReaderOptions),
// tool text rendered within the output bound (ToolText), and windows over
// a result too large for one answer (lines, bytes, a prefix of units, each
// with the offset that continues).
package toolkit
