package tabular

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/capkit/capkit/internal/clip"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// Format is how the input is packaged.
type Format string

// The formats. FormatAuto detects gzip and ZIP by their signatures and
// takes anything else as CSV.
const (
	FormatAuto Format = ""
	FormatCSV  Format = "csv"
	FormatGzip Format = "gzip"
	FormatZip  Format = "zip"
)

// ParseFormat parses a format name; "" and "auto" mean FormatAuto.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(s)); f {
	case FormatAuto, "auto":
		return FormatAuto, nil
	case FormatCSV, FormatGzip, FormatZip:
		return f, nil
	}
	return "", fault.New(fault.InvalidInput, "unknown format %q: use csv, gzip or zip", clip.Text(s))
}

// sniffFormat names the packaging data's signature shows.
func sniffFormat(data []byte) Format {
	switch {
	case bytes.HasPrefix(data, []byte{0x1f, 0x8b}):
		return FormatGzip
	case bytes.HasPrefix(data, []byte("PK\x03\x04")), bytes.HasPrefix(data, []byte("PK\x05\x06")):
		return FormatZip
	}
	return FormatCSV
}

// ErrExpandedTooLarge and ErrRecordTooLarge are the streaming bounds'
// reasons, for errors.Is; Scan returns them inside a limit fault.
var (
	ErrExpandedTooLarge = fault.NewMark("expanded input exceeds the limit")
	ErrRecordTooLarge   = fault.NewMark("record exceeds the limit")
)

// boundedReader counts the bytes it delivers and fails, instead of
// delivering more, once they pass max or once the record being read (the
// bytes since recordStart, less what the buffer above may hold) passes
// the record bound. It checks what it delivers for valid UTF-8.
type boundedReader struct {
	r           io.Reader
	n, max      int64
	recordStart int64 // stream offset where the current record begins
	slack       int64 // bytes a buffer above may hold unread
	err         error
	utf8        *utf8Stream // checks what is delivered
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.n-b.recordStart > limits.TabularMaxRecordBytes+b.slack {
		b.err = fault.Wrap(fault.Limit, ErrRecordTooLarge, "a record exceeds the limit of %d bytes", limits.TabularMaxRecordBytes)
		return 0, b.err
	}
	if room := b.max + 1 - b.n; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	if b.n > b.max {
		b.err = fault.Wrap(fault.Limit, ErrExpandedTooLarge, "the expanded input exceeds the limit of %d bytes", b.max)
		return n - int(b.n-b.max), b.err
	}
	b.utf8.write(p[:n])
	if err == io.EOF {
		b.utf8.end()
	}
	return n, err
}

// open returns the CSV text stream inside data, a closer, and the ZIP
// member's name when there is one.
func open(data []byte, format Format) (io.Reader, func() error, string, error) {
	nop := func() error { return nil }
	sniffed := sniffFormat(data)
	if format == FormatAuto {
		format = sniffed
	} else if format != sniffed && sniffed != FormatCSV {
		return nil, nil, "", fault.New(fault.InvalidInput, "the input is %s-compressed but format %s was given", sniffed, format)
	}
	switch format {
	case FormatCSV:
		if int64(len(data)) > limits.TabularMaxExpandedBytes {
			return nil, nil, "", fault.LimitExceeded("CSV input bytes", limits.TabularMaxExpandedBytes, int64(len(data)))
		}
		return bytes.NewReader(data), nop, "", nil
	case FormatGzip:
		if int64(len(data)) > limits.TabularMaxCompressedBytes {
			return nil, nil, "", fault.LimitExceeded("compressed input bytes", limits.TabularMaxCompressedBytes, int64(len(data)))
		}
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, nil, "", fault.Wrap(fault.InvalidInput, err, "the input is not a valid gzip stream")
		}
		return zr, zr.Close, "", nil
	case FormatZip:
		if int64(len(data)) > limits.TabularMaxCompressedBytes {
			return nil, nil, "", fault.LimitExceeded("compressed input bytes", limits.TabularMaxCompressedBytes, int64(len(data)))
		}
		return openZip(data)
	}
	return nil, nil, "", fault.New(fault.InvalidInput, "unknown format %q", format)
}

// openZip opens the one file a ZIP holds.
func openZip(data []byte) (io.Reader, func() error, string, error) {
	if n, ok := zipEntryCount(data); ok && n > limits.TabularMaxZipEntries {
		return nil, nil, "", fault.New(fault.Limit, "the ZIP lists %d entries, over the limit of %d; exactly one CSV is required", n, limits.TabularMaxZipEntries)
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) { // names are never used as paths here
		return nil, nil, "", fault.Wrap(fault.InvalidInput, err, "the input is not a valid ZIP archive")
	}
	if len(zr.File) > limits.TabularMaxZipEntries {
		return nil, nil, "", fault.New(fault.Limit, "the ZIP lists %d entries, over the limit of %d; exactly one CSV is required", len(zr.File), limits.TabularMaxZipEntries)
	}
	var files []*zip.File
	for _, f := range zr.File {
		if !f.Mode().IsDir() {
			files = append(files, f)
		}
	}
	if len(files) != 1 {
		names := make([]string, 0, 3)
		for _, f := range files[:min(len(files), 3)] {
			names = append(names, fmt.Sprintf("%q", clip.Text(f.Name)))
		}
		return nil, nil, "", fault.New(fault.InvalidInput, "the ZIP holds %d files %s; exactly one CSV is required", len(files), strings.Join(names, ", "))
	}
	f := files[0]
	name := clip.Text(f.Name)
	switch {
	case f.Flags&0x1 != 0:
		return nil, nil, "", fault.New(fault.InvalidInput, "ZIP member %q is encrypted; encrypted archives are not supported", name)
	case !f.Mode().IsRegular():
		return nil, nil, "", fault.New(fault.InvalidInput, "ZIP member %q is not a regular file", name)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, nil, "", fault.Wrap(fault.InvalidInput, err, "ZIP member %q cannot be read (unsupported compression method?)", name)
	}
	return rc, rc.Close, name, nil
}

// zipEntryCount reads the entry count from the end-of-central-directory
// record (and its ZIP64 form), so an archive listing very many entries is
// refused before archive/zip allocates one structure per entry. ok is
// false when no record is found; archive/zip then reports the archive as
// invalid.
func zipEntryCount(data []byte) (n uint64, ok bool) {
	const eocdLen, maxComment = 22, 0xffff
	lo := max(0, len(data)-eocdLen-maxComment)
	i := bytes.LastIndex(data[lo:], []byte("PK\x05\x06"))
	if i < 0 || lo+i+eocdLen > len(data) {
		return 0, false
	}
	eocd := data[lo+i:]
	n = uint64(binary.LittleEndian.Uint16(eocd[10:]))
	if n != 0xffff {
		return n, true
	}
	// ZIP64: the locator sits just before the record and points at the
	// ZIP64 end-of-central-directory record.
	loc := lo + i - 20
	if loc < 0 || !bytes.HasPrefix(data[loc:], []byte("PK\x06\x07")) {
		return n, true
	}
	off := binary.LittleEndian.Uint64(data[loc+8:])
	if len(data) < 56 || off > uint64(len(data)-56) || !bytes.HasPrefix(data[off:], []byte("PK\x06\x06")) {
		return n, true
	}
	return binary.LittleEndian.Uint64(data[off+32:]), true
}

// decodeErr classifies a failure of the decompressor under the CSV reader.
func decodeErr(err error) error {
	var fe *fault.Error
	switch {
	case errors.As(err, &fe):
		return fe
	case errors.Is(err, gzip.ErrChecksum), errors.Is(err, zip.ErrChecksum):
		return fault.Wrap(fault.Integrity, err, "the compressed input's checksum does not match its content")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fault.Wrap(fault.InvalidInput, err, "the compressed input is truncated")
	}
	return fault.Wrap(fault.InvalidInput, err, "the compressed input is corrupt")
}
