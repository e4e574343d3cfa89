package zipfile

import (
	"archive/zip"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"slices"
	"sync/atomic"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/scope"
)

// Record layouts of the ZIP format (APPNOTE.TXT 4.3.12-4.3.16).
const (
	dirHeaderLen  = 46
	eocdLen       = 22
	eocdSig       = 0x06054b50
	loc64Len      = 20
	loc64Sig      = 0x07064b50
	end64Len      = 56
	end64Sig      = 0x06064b50
	localHdrLen   = 30
	maxCommentLen = 0xffff

	// Flag bits that mean the member or the directory is encrypted:
	// traditional/AES (bit 0), strong encryption (bit 6), masked local
	// headers (bit 13).
	encryptedFlags = 0x1 | 0x40 | 0x2000
)

// directoryEnd is what the end-of-central-directory records declare.
type directoryEnd struct {
	endOffset int64 // where the central directory must end: the EOCD or zip64 EOCD record
	records   uint64
	size      uint64
	offset    uint64
}

// readEnd finds and checks the end-of-central-directory record the same way
// archive/zip finds it (the last signature whose comment fits, in the last
// 1 KiB, then the last 65 KiB), before archive/zip is trusted with the
// directory it points to.
func readEnd(r io.ReaderAt, size int64, lim Limits) (*directoryEnd, *fault.Error) {
	var buf []byte
	var at int64 = -1
	for _, n := range []int64{1024, 65 * 1024} {
		n = min(n, size)
		buf = make([]byte, n)
		if _, err := r.ReadAt(buf, size-n); err != nil && err != io.EOF {
			return nil, fault.Wrap(fault.IO, err, "reading the archive failed")
		}
		if p := findEnd(buf); p >= 0 {
			buf, at = buf[p:], size-n+int64(p)
			break
		}
		if n == size {
			break
		}
	}
	if at < 0 {
		return nil, malformed("no end-of-central-directory record")
	}
	le := binary.LittleEndian
	disk, dirDisk := le.Uint16(buf[4:]), le.Uint16(buf[6:])
	d := &directoryEnd{
		endOffset: at,
		records:   uint64(le.Uint16(buf[10:])),
		size:      uint64(le.Uint32(buf[12:])),
		offset:    uint64(le.Uint32(buf[16:])),
	}
	thisDisk := uint64(le.Uint16(buf[8:]))
	// archive/zip looks for zip64 records when any of these hold (its size
	// test is against 0xffff); so must this check.
	if d.records == 0xffff || d.size == 0xffff || d.size == 0xffffffff || d.offset == 0xffffffff {
		at32 := d.endOffset
		if err := readEnd64(r, d); err != nil {
			return nil, err
		}
		if d.endOffset != at32 {
			thisDisk = d.records // readEnd64 checked the zip64 per-disk count
		}
	}
	if disk != 0 || dirDisk != 0 || thisDisk != d.records {
		return nil, malformed("multi-disk archives are not supported")
	}
	if d.records > uint64(lim.MaxFiles) {
		fe := fault.New(fault.Limit, "archive declares %d members, more than the limit of %d", d.records, lim.MaxFiles)
		return nil, fe
	}
	if d.size > uint64(lim.MaxCentralDirectoryBytes) {
		return nil, fault.New(fault.Limit, "archive's central directory of %d bytes exceeds the limit of %d", d.size, lim.MaxCentralDirectoryBytes)
	}
	if d.offset > uint64(d.endOffset) || d.offset+d.size != uint64(d.endOffset) {
		return nil, malformed("the central directory is not where its end record says (prefixed or damaged archive)")
	}
	if d.size < d.records*dirHeaderLen {
		return nil, malformed("the central directory is too small for the %d members it declares", d.records)
	}
	return d, nil
}

func findEnd(b []byte) int {
	for i := len(b) - eocdLen; i >= 0; i-- {
		if binary.LittleEndian.Uint32(b[i:]) == eocdSig {
			n := int(binary.LittleEndian.Uint16(b[i+eocdLen-2:]))
			if n+eocdLen+i > len(b) {
				return -1
			}
			return i
		}
	}
	return -1
}

// readEnd64 reads the zip64 locator and record, following archive/zip's
// rules exactly (a missing or multi-disk locator means "not zip64"), so both
// see the same directory.
func readEnd64(r io.ReaderAt, d *directoryEnd) *fault.Error {
	le := binary.LittleEndian
	if d.endOffset < loc64Len {
		return nil
	}
	var loc [loc64Len]byte
	if _, err := r.ReadAt(loc[:], d.endOffset-loc64Len); err != nil {
		return malformed("truncated zip64 locator")
	}
	if le.Uint32(loc[0:]) != loc64Sig || le.Uint32(loc[4:]) != 0 || le.Uint32(loc[16:]) != 1 {
		return nil
	}
	p := le.Uint64(loc[8:])
	if p > uint64(d.endOffset) {
		return malformed("zip64 end record out of place")
	}
	var rec [end64Len]byte
	if _, err := r.ReadAt(rec[:], int64(p)); err != nil {
		return malformed("truncated zip64 end record")
	}
	if le.Uint32(rec[0:]) != end64Sig {
		return malformed("bad zip64 end record signature")
	}
	if le.Uint32(rec[16:]) != 0 || le.Uint32(rec[20:]) != 0 || le.Uint64(rec[24:]) != le.Uint64(rec[32:]) {
		return malformed("multi-disk archives are not supported")
	}
	d.endOffset = int64(p)
	d.records = le.Uint64(rec[32:])
	d.size = le.Uint64(rec[40:])
	d.offset = le.Uint64(rec[48:])
	return nil
}

// budgetReader fails reads once a byte budget is spent while armed.
// archive/zip's NewReader keeps reading directory headers until one fails,
// beyond the size the end record declares, so the budget (not the
// declaration) is what bounds the memory it spends.
type budgetReader struct {
	r      io.ReaderAt
	armed  atomic.Bool
	budget atomic.Int64
}

var errBudget = errors.New("zipfile: central directory read budget exceeded")

func (b *budgetReader) ReadAt(p []byte, off int64) (int, error) {
	if b.armed.Load() && b.budget.Add(-int64(len(p))) < 0 {
		return 0, errBudget
	}
	return b.r.ReadAt(p, off)
}

// member is one checked entry of the central directory.
type member struct {
	zf   *zip.File
	name string // without a directory's trailing slash
	dir  bool
	size int64 // declared uncompressed size, within bounds
}

// archive is an opened archive whose central directory passed every check.
type archive struct {
	members []member
	total   int64 // declared bytes of all members
}

// openArchive checks f (an open regular file of the given size) as a ZIP
// archive within lim and returns its members. Nothing is decompressed.
func openArchive(ctx context.Context, f io.ReaderAt, size int64, lim Limits) (*archive, error) {
	end, ferr := readEnd(f, size, lim)
	if ferr != nil {
		return nil, ferr
	}
	br := &budgetReader{r: f}
	// What archive/zip reads before the directory (two tail windows, the
	// zip64 records, one probe header with its variable fields), the
	// directory itself and a bufio window past it.
	br.budget.Store(66*1024 + loc64Len + end64Len + dirHeaderLen + 3*0xffff + int64(end.size) + 8192)
	br.armed.Store(true)
	zr, err := zip.NewReader(br, size)
	br.armed.Store(false)
	switch {
	case errors.Is(err, errBudget):
		return nil, fault.Wrap(fault.Limit, err, "archive's central directory is larger than its end record declares (limit %d bytes)", lim.MaxCentralDirectoryBytes)
	case err != nil:
		fe := malformed("%v", err)
		return nil, fe
	}
	if uint64(len(zr.File)) != end.records {
		return nil, malformed("the central directory holds %d members but declares %d", len(zr.File), end.records)
	}
	a := &archive{members: make([]member, 0, len(zr.File))}
	names := newNameSet()
	type span struct {
		start, end int64
		name       string
	}
	spans := make([]span, 0, len(zr.File))
	for i, zf := range zr.File {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fault.As(err)
			}
		}
		m, ferr := checkMember(zf, lim)
		if ferr != nil {
			return nil, ferr
		}
		if ferr := names.add(m.name, m.dir); ferr != nil {
			return nil, ferr
		}
		a.total += m.size
		if a.total > lim.MaxTotalBytes {
			return nil, memberFault(fault.Limit, m.name, ErrSize, "archive declares more than %d bytes in all (at member %q)", lim.MaxTotalBytes, m.name)
		}
		off, err := zf.DataOffset()
		if err != nil {
			return nil, malformed("member %q has a bad local header", m.name)
		}
		stop := off + int64(zf.CompressedSize64)
		if off < localHdrLen || zf.CompressedSize64 > uint64(end.offset) || stop > int64(end.offset) {
			return nil, malformed("member %q's data lies outside the archive's data area", m.name)
		}
		spans = append(spans, span{off, stop, m.name})
		a.members = append(a.members, m)
	}
	slices.SortFunc(spans, func(x, y span) int { return cmp.Compare(x.start, y.start) })
	for i := 1; i < len(spans); i++ {
		if spans[i].start < spans[i-1].end {
			return nil, memberFault(fault.InvalidInput, spans[i].name, ErrOverlap, "member %q shares data with member %q (overlapping members are refused)", spans[i].name, spans[i-1].name)
		}
	}
	return a, nil
}

func checkMember(zf *zip.File, lim Limits) (member, *fault.Error) {
	name, dir := splitDir(zf.Name)
	m := member{zf: zf, name: name, dir: dir}
	if zf.Flags&encryptedFlags != 0 {
		return m, memberFault(fault.InvalidInput, zf.Name, ErrEncrypted, "member %q is encrypted; encrypted archives are not supported", zf.Name)
	}
	if ferr := checkName(name, lim.MaxPathDepth); ferr != nil {
		return m, ferr
	}
	if zf.Method != zip.Store && zf.Method != zip.Deflate {
		return m, memberFault(fault.InvalidInput, name, ErrMethod, "member %q uses compression method %d; only store (0) and deflate (8) are supported", name, zf.Method)
	}
	mode := zf.Mode()
	want := os.FileMode(0)
	if dir {
		want = os.ModeDir
	}
	if mode.Type() != want {
		kind := scope.Kind(mode)
		if mode.IsDir() {
			kind = "a directory by its attributes, without a trailing slash"
		}
		return m, memberFault(fault.InvalidInput, name, ErrSpecialFile, "member %q is %s, not a regular file or directory; special files are refused", name, kind)
	}
	if zf.UncompressedSize64 > uint64(lim.MaxMemberBytes) {
		return m, memberFault(fault.Limit, name, ErrSize, "member %q declares %d bytes, more than the limit of %d per member", name, zf.UncompressedSize64, lim.MaxMemberBytes)
	}
	if dir && zf.UncompressedSize64 != 0 {
		return m, malformed("directory member %q has data", name)
	}
	m.size = int64(zf.UncompressedSize64)
	return m, nil
}
