package outbuf

import "io"

// Lines writes text line by line and keeps the first write error, so a
// renderer writes every line unconditionally and checks Err once at the
// end (a Buffer's ErrFull stops it at the output bound).
type Lines struct {
	w   io.Writer
	n   int64
	err error
}

// NewLines returns a Lines writing to w.
func NewLines(w io.Writer) *Lines { return &Lines{w: w} }

// Line writes parts, then a newline. After a failed write it does nothing.
func (l *Lines) Line(parts ...string) {
	for _, p := range parts {
		l.write(p)
	}
	l.write("\n")
}

func (l *Lines) write(s string) {
	if l.err != nil {
		return
	}
	n, err := io.WriteString(l.w, s)
	l.n += int64(n)
	l.err = err
}

// Written is the number of bytes written so far.
func (l *Lines) Written() int64 { return l.n }

// Err is the first write error, or nil.
func (l *Lines) Err() error { return l.err }
