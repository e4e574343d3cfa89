package tools

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/limits"
)

var readDescription = fmt.Sprintf(`Reads a text file as numbered lines: limit lines (default %d) from offset (default 1), or the last N with tail (up to %d). The result names the lines shown and the offset to read on from. Lines over %d characters are cut, marked [cut: …]. PNG, JPEG, GIF and WebP files (up to %s) come back as images; other binary files and text that is not UTF-8 are refused.`,
	limits.ReadDefaultLines, limits.ReadTailMaxLines, limits.ReadMaxLineRunes, limits.Bytes(limits.ReadImageMaxBytes))

// ReadArgs are read_file's arguments.
type ReadArgs struct {
	Path   string `json:"path"`
	Offset int    `json:"offset,omitempty"`
	Limit  int    `json:"limit,omitempty"`
	Tail   int    `json:"tail,omitempty"`
}

// ReadResult describes the window read_file returned; the numbered lines
// (or, for an image, a line that describes it) are its text.
type ReadResult struct {
	Path string `json:"path"`
	// StartLine and EndLine are the lines shown (1-based, inclusive); both
	// are 0 for an empty file, an image, or a tail whose lines could not
	// be counted.
	StartLine int `json:"start_line"`
	EndLine   int `json:"end_line"`
	// TotalLines is the file's line count where it was counted (the whole
	// file was read); 0 when it was not.
	TotalLines int `json:"total_lines,omitempty"`
	// NextOffset is the offset that reads on after this window; 0 at the
	// end of the file.
	NextOffset int `json:"next_offset,omitempty"`
	// UnnumberedLines counts the lines of a tail of a file too large to
	// count its lines: they are shown without numbers, which would not be
	// line numbers.
	UnnumberedLines int `json:"unnumbered_lines,omitempty"`
	// CutLines counts shown lines cut at limits.ReadMaxLineRunes.
	CutLines int `json:"cut_lines"`
	// CRLF reports that the file's first line ends with \r\n.
	CRLF bool `json:"crlf"`
	// Bytes is the file's size.
	Bytes int64 `json:"bytes"`
	// MediaType is set for an image, sniffed from its bytes.
	MediaType string `json:"media_type,omitempty"`

	text  []byte
	image []byte
	lease outLease
}

// ToolText is the numbered window and a line that says what it is. The
// buffer is not copied: it is not modified until Release.
func (r ReadResult) ToolText() string { return unsafe.String(unsafe.SliceData(r.text), len(r.text)) }

// ToolImage is the image read_file returned, if any (see kernel.Imager).
func (r ReadResult) ToolImage() (string, []byte) { return r.MediaType, r.image }

// Release gives the text's buffer back for another read (see
// kernel.Releaser): the text must not be used after it. Only the first
// Release of a result counts.
func (r ReadResult) Release() { r.lease.release() }

var readBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// cutMarker is appended to a line cut at limits.ReadMaxLineRunes.
const cutMarker = " … [cut: "

// textBudget is the room for a window's text under an output bound.
func textBudget(maxOutput int64) int64 {
	return max(maxOutput-limits.ToolTextReserveBytes, maxOutput/2)
}

// readBudget is the room for the lines of a read_file window of the file
// named name: textBudget, and never more than the bound leaves once the
// frame and the name, as JSON escapes it at worst, are kept free.
func readBudget(maxOutput int64, name string) int64 {
	escaped := int64(0)
	for i := range len(name) {
		switch c := name[i]; {
		case c < 0x20 || c == '"' || c == '\\':
			escaped += 6
		case c >= 0x80:
			escaped += 3 // a byte of invalid UTF-8 becomes U+FFFD
		default:
			escaped++
		}
	}
	return min(textBudget(maxOutput), maxOutput-limits.ReadFrameBytes-escaped)
}

func (in ReadArgs) check() error {
	switch {
	case in.Offset < 0 || in.Limit < 0 || in.Tail < 0:
		return fault.New(fault.InvalidInput, "offset, limit and tail must not be negative")
	case in.Tail > 0 && (in.Offset > 0 || in.Limit > 0):
		return fault.New(fault.InvalidInput, "tail reads the last lines; give it without offset and limit")
	case in.Limit > limits.ReadMaxLines:
		return fault.LimitExceeded("limit (lines)", limits.ReadMaxLines, int64(in.Limit))
	case in.Tail > limits.ReadTailMaxLines:
		return fault.LimitExceeded("tail (lines)", limits.ReadTailMaxLines, int64(in.Tail))
	}
	return nil
}

func (x *executor) readFile(ctx context.Context, req request, in ReadArgs) (ReadResult, error) {
	if err := in.check(); err != nil {
		return ReadResult{}, err
	}
	t, err := x.resolve(req.caps, capability.ReadFile, in.Path)
	if err != nil {
		return ReadResult{}, err
	}
	defer t.Close()
	f, err := x.provider.Open(ctx, t.Target)
	if err != nil {
		return ReadResult{}, where(err, req.caps, in.Path, t)
	}
	defer f.Close()
	if res, ok, err := x.readImage(ctx, req, t, f); ok || err != nil {
		return res, err
	}
	var res ReadResult
	if in.Tail > 0 {
		res, err = readTail(ctx, req, t, f, in.Tail)
	} else {
		first, limit := max(in.Offset, 1), in.Limit
		if limit == 0 {
			limit = limits.ReadDefaultLines
		}
		w := newWindow(first, first+limit-1, req, f.Info().Size, readBudget(req.maxOutput, t.display))
		res, err = w.result(ctx, f, t.display)
	}
	if err != nil {
		return ReadResult{}, err
	}
	if v, ok := f.Version(); ok {
		x.events.Observed(ctx, files.Observation{Session: req.session, Op: files.OpRead, Root: t.root, Name: t.name, Version: v})
	}
	return res, nil
}

// newWindow is a window of lines first..last of a file of size bytes
// under the request's output bound, its text within budget.
func newWindow(first, last int, req request, size, budget int64) *window {
	return &window{
		first: first, last: last, req: req, budget: budget, size: size,
		countAll: size <= limits.ReadVersionMaxBytes,
	}
}

// result scans r and renders the window as a result named name.
func (w *window) result(ctx context.Context, r io.Reader, name string) (ReadResult, error) {
	kept := false
	defer func() {
		if !kept {
			w.lease.release()
		}
	}()
	if err := w.scan(ctx, r, name); err != nil {
		return ReadResult{}, err
	}
	res := ReadResult{Path: name, CutLines: w.cut, CRLF: w.crlf, Bytes: w.size}
	if w.tail != nil {
		res.Bytes += w.tail.start
	}
	if w.eof && (w.tail == nil || w.tail.counted) {
		res.TotalLines = w.total + w.numBase
	}
	switch {
	case w.eof && w.total == 0:
		w.out = append(w.out, "(empty file: 0 lines)\n"...)
	case w.eof && w.first > w.total:
		return ReadResult{}, fault.New(fault.InvalidInput, "offset %d is past the end of %s, which has %d lines", w.first, name, w.total)
	case w.unnumbered:
		res.UnnumberedLines = w.shownLast()
		w.out = w.tailFooter(res)
	case w.tail != nil:
		res.StartLine, res.EndLine = w.first+w.numBase, w.shownLast()+w.numBase
		w.out = w.tailFooter(res)
	default:
		res.StartLine, res.EndLine = w.first, w.shownLast()
		if !w.eof || res.EndLine < w.total {
			res.NextOffset = res.EndLine + 1
		}
		w.out = w.footer(res)
	}
	if int64(len(w.out)) > w.req.maxOutput {
		return ReadResult{}, w.tooBig()
	}
	w.lease.keep(w.out)
	res.text, res.lease, kept = w.out, w.lease, true
	return res, nil
}

// shownLast is the last line the window shows.
func (w *window) shownLast() int {
	if w.eof {
		return min(w.last, w.total)
	}
	return w.last
}

// window numbers the lines first..last of a file in one streaming pass
// into one pre-sized buffer. A file of at most limits.ReadVersionMaxBytes
// is read to its end and its lines counted (countAll); a larger one only
// as far as the window. Memory is the read buffer plus the output, which
// is bounded by the text budget.
type window struct {
	first, last int
	req         request // its output bound
	budget      int64   // room for the window's text
	size        int64
	countAll    bool
	numBase     int       // added to the line numbers shown (a tail's offset)
	unnumbered  bool      // no line numbers: a tail of a file whose lines were not counted
	tail        *tailSpan // set for a tail read
	general     bool      // no shortLines (tests compare the two paths)

	out   []byte
	lease outLease // of out's buffer
	total int      // lines seen, once eof
	eof   bool
	cut   int  // lines cut
	crlf  bool // first line ends in \r\n
	read  int64
	// why the window ended before its last line, if it did
	fitted   bool // the output budget
	longLine bool // a line longer than limits.ReadMaxLineScanBytes

	// the last whole window line: its number and where it ends in out
	lastLine int
	lastEnd  int
	// stopAt is how much of the current chunk the window consumed
	stopAt int

	// the window line being built
	inLine    bool
	lineStart int   // index in out where the line's text starts
	lineOff   int64 // file offset of the line's first byte
	lineCut   bool
	lineASCII bool  // the line's bytes so far are ASCII, so valid UTF-8
	hidden    int64 // bytes of the line not shown
	prev      byte  // last byte before the current chunk
	newlines  int   // '\n' seen
	num       lineNo
}

// errWindowDone ends a scan that has read what the window needs.
var errWindowDone = errors.New("window done")

func (w *window) scan(ctx context.Context, r io.Reader, name string) error {
	bp := readBufs.Get().(*[]byte)
	defer readBufs.Put(bp)
	buf := *bp
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if w.out == nil {
				w.out, w.lease = leaseOut(w.estimate(buf[:n]))
			}
			ferr := w.chunk(buf[:n], name)
			w.read += int64(n)
			if ferr == errWindowDone {
				return w.endWindow(name)
			}
			if ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return fault.As(err)
		}
	}
	if w.out == nil {
		w.out = make([]byte, 0, 64)
	}
	w.eof = true
	w.total = w.newlines
	if w.read > 0 && w.prev != '\n' {
		w.total++ // a last line without a newline
		if w.inLine {
			return w.finishLine(name)
		}
	}
	return nil
}

// endWindow closes a window that stopped before the end of the file.
func (w *window) endWindow(name string) error {
	if w.inLine {
		return w.finishLine(name)
	}
	return nil
}

// finishLine ends the window line being built.
func (w *window) finishLine(name string) error {
	var err error
	w.out, err = w.endLine(w.out, name)
	return err
}

// estimate sizes the output from the file size and the line density of the
// first chunk, so the buffer rarely grows.
func (w *window) estimate(sample []byte) int {
	nl := bytes.Count(sample, []byte{'\n'}) + 1
	avg := float64(len(sample)) / float64(nl)
	// A shown line is cut at ReadMaxLineRunes runes (at most 4 bytes each)
	// plus its marker.
	shown := min(avg, 4*limits.ReadMaxLineRunes+48)
	lines := float64(w.last - w.first + 1)
	if fileLines := float64(w.size)/avg + 1; fileLines < lines {
		lines = fileLines
	}
	est := lines*(shown+8)*1.0625 + 512
	return int(min(est, float64(w.req.maxOutput)+1, float64(w.size)*2+lines*8+512))
}

// chunk takes the next chunk of the file. Only the bytes the window
// consumed are checked for NUL (binary): past a large file's window, the
// rest is not the window's to judge.
func (w *window) chunk(c []byte, name string) error {
	w.stopAt = len(c)
	err := w.lines(c, name)
	if i := bytes.IndexByte(c[:w.stopAt], 0); i >= 0 {
		return binaryFault(name, w.read+int64(i))
	}
	w.prev = c[len(c)-1]
	return err
}

// binaryFault refuses a file with a NUL byte at off.
func binaryFault(name string, off int64) error {
	return fault.New(fault.InvalidInput, "%s is binary (a NUL byte at offset %d); read_file shows text files and PNG, JPEG, GIF and WebP images", name, off)
}

// lines numbers the window's lines in c. The output slice lives in a
// local variable while it grows, so appending needs no write barrier.
func (w *window) lines(c []byte, name string) error {
	out := w.out
	base := w.read
	ascii := -1 // whether the rest of c is ASCII, once a window line needs it
	for len(c) > 0 {
		line := w.newlines + 1
		if line > w.last {
			if !w.countAll {
				w.out, w.stopAt = out, w.stopAt-len(c)
				return errWindowDone
			}
			// past the window: only count
			w.newlines += bytes.Count(c, []byte{'\n'})
			break
		}
		if line < w.first {
			i := bytes.IndexByte(c, '\n')
			if i < 0 {
				break
			}
			w.noteNewline(c, i)
			c, base = c[i+1:], base+int64(i+1)
			w.newlines++
			continue
		}
		if ascii < 0 {
			ascii = 0
			if isASCII(c) {
				ascii = 1
			}
		}
		if !w.inLine && ascii == 1 && w.newlines > 0 && !w.general {
			var n int
			if out, n = w.shortLines(out, c); n > 0 {
				c, base = c[n:], base+int64(n)
				continue
			}
		}
		if !w.inLine {
			out = append(out, w.number(line)...)
			w.inLine, w.lineStart, w.lineOff, w.lineCut, w.hidden = true, len(out), base, false, 0
			w.lineASCII = true
		}
		w.lineASCII = w.lineASCII && ascii == 1
		i := bytes.IndexByte(c, '\n')
		seg := c
		if i >= 0 {
			seg = c[:i]
		}
		out = w.appendText(out, seg)
		if int64(len(out)) > w.budget {
			if w.lastLine < w.first {
				w.out = out
				return w.tooBig()
			}
			// The window ends on the last whole line that fits.
			out, w.inLine, w.fitted, w.last = out[:w.lastEnd], false, true, w.lastLine
			continue
		}
		if w.hidden > limits.ReadMaxLineScanBytes {
			w.out, w.longLine, w.last = out, true, line
			return errWindowDone
		}
		if i < 0 {
			break
		}
		w.noteNewline(c, i)
		var err error
		if out, err = w.endLine(out, name); err != nil {
			w.out = out
			return err
		}
		c, base = c[i+1:], base+int64(i+1)
		w.newlines++
	}
	w.out = out
	return nil
}

// isASCII reports whether b is all ASCII, eight bytes at a time: checked
// once per chunk, it spares the per-line UTF-8 validation of ASCII text
// (a fifth of a large read's time).
func isASCII(b []byte) bool {
	var acc uint64
	for len(b) >= 32 {
		acc |= binary.LittleEndian.Uint64(b) | binary.LittleEndian.Uint64(b[8:]) |
			binary.LittleEndian.Uint64(b[16:]) | binary.LittleEndian.Uint64(b[24:])
		b = b[32:]
	}
	for _, c := range b {
		acc |= uint64(c)
	}
	return acc&0x8080808080808080 == 0
}

// noteNewline records whether the file's first line ends with \r\n.
func (w *window) noteNewline(c []byte, i int) {
	if w.newlines == 0 {
		w.crlf = i > 0 && c[i-1] == '\r' || i == 0 && w.prev == '\r'
	}
}

// appendText adds seg to the current line, cutting the line after
// limits.ReadMaxLineRunes runes.
func (w *window) appendText(out, seg []byte) []byte {
	if w.lineCut {
		w.hidden += int64(len(seg))
		return out
	}
	out = append(out, seg...)
	text := out[w.lineStart:]
	if len(text) <= limits.ReadMaxLineRunes {
		return out
	}
	if i := runeIndex(text, limits.ReadMaxLineRunes); i >= 0 {
		w.hidden += int64(len(text) - i)
		out = out[:w.lineStart+i]
		w.lineCut = true
	}
	return out
}

// runeIndex is the byte index just past the first n runes of b, or -1 when
// b has at most n runes.
func runeIndex(b []byte, n int) int {
	i := 0
	for ; n > 0 && i < len(b); n-- {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		_, size := utf8.DecodeRune(b[i:])
		i += size
	}
	if i >= len(b) {
		return -1
	}
	return i
}

func (w *window) endLine(out []byte, name string) ([]byte, error) {
	text := out[w.lineStart:]
	if !w.lineASCII && !utf8.Valid(text) {
		bad := 0
		for bad < len(text) {
			r, size := utf8.DecodeRune(text[bad:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			bad += size
		}
		return out, fault.New(fault.InvalidInput, "%s is not valid UTF-8: first invalid byte at offset %d (line %d); read_file shows text files only", name, w.lineOff+int64(bad), w.newlines+1)
	}
	if w.lineCut {
		w.cut++
		out = append(out, cutMarker...)
		out = strconv.AppendInt(out, w.hidden, 10)
		out = append(out, " more bytes]"...)
	} else if n := len(out); n > w.lineStart && out[n-1] == '\r' {
		out = out[:n-1]
	}
	w.inLine = false
	out = append(out, '\n')
	w.lastLine, w.lastEnd = w.newlines+1, len(out)
	return out, nil
}

// lineNo renders line numbers as cat -n does: right-aligned in 6 columns
// and a tab. Consecutive lines count up in place rather than being
// formatted one by one, which a large read spends much of its time on
// (BenchmarkReadFile4MiB).
type lineNo struct {
	d     [24]byte // the number right-aligned before a tab in d[23]
	start int      // where the rendering starts: at most 17 (six columns)
	n     int      // the number rendered; 0 before the first
}

// at returns the rendering of line n.
func (l *lineNo) at(n int) []byte {
	if l.n == 0 || n != l.n+1 {
		l.set(n)
		return l.d[l.start:]
	}
	l.n = n
	i := len(l.d) - 2
	for l.d[i] == '9' {
		l.d[i] = '0'
		i--
	}
	if l.d[i] == ' ' {
		l.d[i] = '1'
	} else {
		l.d[i]++
	}
	l.start = min(l.start, i)
	return l.d[l.start:]
}

func (l *lineNo) set(n int) {
	l.n = n
	for i := range l.d {
		l.d[i] = ' '
	}
	l.d[len(l.d)-1] = '\t'
	i := len(l.d) - 1
	for {
		i--
		l.d[i] = byte('0' + n%10)
		if n /= 10; n == 0 {
			break
		}
	}
	l.start = min(i, len(l.d)-7)
}

func (w *window) footer(r ReadResult) []byte {
	o := append(w.out, "(lines "...)
	o = strconv.AppendInt(o, int64(r.StartLine), 10)
	o = append(o, "–"...)
	o = strconv.AppendInt(o, int64(r.EndLine), 10)
	if w.eof {
		o = append(o, " of "...)
		o = strconv.AppendInt(o, int64(r.TotalLines), 10)
	} else {
		o = append(o, "; the file is "...)
		o = append(o, sizeText(w.size)...)
		o = append(o, ", more follows"...)
	}
	switch {
	case w.fitted:
		o = append(o, "; the window ends here to fit the output bound of "...)
		o = strconv.AppendInt(o, w.req.maxOutput, 10)
		o = append(o, " bytes"...)
	case w.longLine:
		o = append(o, "; line "...)
		o = strconv.AppendInt(o, int64(r.EndLine), 10)
		o = append(o, " is longer than "...)
		o = append(o, sizeText(limits.ReadMaxLineScanBytes)...)
		o = append(o, " and was not read to its end"...)
	}
	if r.NextOffset > 0 {
		o = append(o, "; continue with offset="...)
		o = strconv.AppendInt(o, int64(r.NextOffset), 10)
	}
	if r.CutLines > 0 {
		o = append(o, "; "...)
		o = strconv.AppendInt(o, int64(r.CutLines), 10)
		o = append(o, " lines longer than "...)
		o = strconv.AppendInt(o, limits.ReadMaxLineRunes, 10)
		o = append(o, " characters were cut, marked [cut: …]"...)
	}
	if r.CRLF {
		o = append(o, "; CRLF line endings, shown without \\r"...)
	}
	return append(o, ")\n"...)
}

func (w *window) tooBig() error {
	what := fmt.Sprintf("line %d", w.first+w.numBase)
	if w.unnumbered {
		what = "the first of the last lines"
	}
	return w.req.tooLarge(what, "a line is never shown in part")
}

// number is what line is shown after: its number and a tab, or nothing
// when the lines are unnumbered.
func (w *window) number(line int) []byte {
	if w.unnumbered {
		return nil
	}
	return w.num.at(line + w.numBase)
}

// sizeText renders a byte count for a person: "1.5 GiB", "512 bytes".
func sizeText(n int64) string {
	switch {
	case n >= limits.GiB:
		return strconv.FormatFloat(float64(n)/limits.GiB, 'f', 1, 64) + " GiB"
	case n >= limits.MiB:
		return strconv.FormatFloat(float64(n)/limits.MiB, 'f', 1, 64) + " MiB"
	case n >= limits.KiB:
		return strconv.FormatFloat(float64(n)/limits.KiB, 'f', 1, 64) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
