package tools

import (
	"bytes"

	"github.com/capkit/capkit/limits"
)

// shortLines numbers the whole lines at the start of c that the general
// path (lines, appendText, endLine) would show unchanged: window lines of
// ASCII text too short to cut whose number and text fit the budget. It
// returns out with them appended and the bytes of c consumed, and stops at
// the first line that needs more care, which the general path then
// takes. c must be ASCII, and the file's first line already read (its
// line ending is noted apart).
//
// Why: most of a large read is such lines, and taking each through the
// general path's calls and checks was most of numbering's cost.
func (w *window) shortLines(out, c []byte) ([]byte, int) {
	done := 0
	for {
		line := w.newlines + 1
		if line > w.last {
			break
		}
		i := bytes.IndexByte(c[done:], '\n')
		if i < 0 || i > limits.ReadMaxLineRunes {
			break
		}
		num := w.number(line)
		// As lines checks it: the number and the text with its \r, before
		// the newline.
		if int64(len(out)+len(num)+i) > w.budget {
			break
		}
		text := c[done : done+i]
		if i > 0 && text[i-1] == '\r' {
			text = text[:i-1]
		}
		out = append(out, num...)
		out = append(out, text...)
		out = append(out, '\n')
		w.newlines++
		w.lastLine, w.lastEnd = line, len(out)
		done += i + 1
	}
	return out, done
}
