package zipfile

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/binary"
	"hash/crc32"
	"io/fs"
	"math"
)

// rawMember is one member of a hand-built archive: every field archive/zip's
// writer would compute or refuse can be set here.
type rawMember struct {
	name   string
	method uint16
	flags  uint16
	crc    uint32
	data   []byte // stored (possibly compressed) bytes
	usize  uint64 // declared uncompressed size
	made   uint16 // version made by: high byte is the host system
	ext    uint32 // external attributes
	sameAs int    // >0: point at the local header of member sameAs-1
}

type rawArchive struct {
	members []rawMember
	prefix  []byte // data before the archive (a self-extractor's stub)
	// records overrides the EOCD member count; cdSize its directory size.
	records *uint16
	cdSize  *uint32
	// extraHeaders repeats the last central-directory header this many
	// more times beyond what the EOCD record counts.
	extraHeaders int
}

const unixHost = 3 << 8

func unixAttrs(m fs.FileMode) uint32 {
	var t uint32
	switch {
	case m&fs.ModeSymlink != 0:
		t = 0o120000
	case m&fs.ModeDir != 0:
		t = 0o040000
	case m&fs.ModeNamedPipe != 0:
		t = 0o010000
	case m&fs.ModeDevice != 0 && m&fs.ModeCharDevice != 0:
		t = 0o020000
	case m&fs.ModeDevice != 0:
		t = 0o060000
	case m&fs.ModeSocket != 0:
		t = 0o140000
	default:
		t = 0o100000
	}
	return (t | uint32(m.Perm())) << 16
}

func stored(name string, content []byte) rawMember {
	return rawMember{name: name, data: content, usize: uint64(len(content)), crc: crc32.ChecksumIEEE(content),
		made: unixHost | 20, ext: unixAttrs(0o644)}
}

func deflated(name string, content []byte) rawMember {
	var b bytes.Buffer
	w, _ := flate.NewWriter(&b, flate.BestSpeed)
	w.Write(content)
	w.Close()
	m := stored(name, content)
	m.method, m.data = 8, b.Bytes()
	return m
}

// deflatedZeros is a deflate stream of n zero bytes, built without holding
// them all in memory.
func deflatedZeros(n int64) []byte {
	var b bytes.Buffer
	w, _ := flate.NewWriter(&b, flate.BestSpeed)
	chunk := make([]byte, 1<<20)
	for n > 0 {
		k := min(n, int64(len(chunk)))
		w.Write(chunk[:k])
		n -= k
	}
	w.Close()
	return b.Bytes()
}

func crcZeros(n int64) uint32 {
	c := uint32(0)
	chunk := make([]byte, 1<<20)
	for n > 0 {
		k := min(n, int64(len(chunk)))
		c = crc32.Update(c, crc32.IEEETable, chunk[:k])
		n -= k
	}
	return c
}

func (a rawArchive) bytes() []byte {
	var out bytes.Buffer
	le := binary.LittleEndian
	put16 := func(b *bytes.Buffer, v uint16) { b.Write(le.AppendUint16(nil, v)) }
	put32 := func(b *bytes.Buffer, v uint32) { b.Write(le.AppendUint32(nil, v)) }
	out.Write(a.prefix)
	offsets := make([]int64, len(a.members))
	z64 := func(m rawMember) []byte {
		if m.usize < math.MaxUint32 {
			return nil
		}
		e := le.AppendUint16(nil, 1)
		e = le.AppendUint16(e, 16)
		e = le.AppendUint64(e, m.usize)
		e = le.AppendUint64(e, uint64(len(m.data)))
		return e
	}
	u32 := func(m rawMember) (uint32, uint32) {
		if m.usize >= math.MaxUint32 {
			return math.MaxUint32, math.MaxUint32
		}
		return uint32(len(m.data)), uint32(m.usize)
	}
	for i, m := range a.members {
		if m.sameAs > 0 {
			offsets[i] = offsets[m.sameAs-1]
			continue
		}
		offsets[i] = int64(out.Len())
		cs, us := u32(m)
		extra := z64(m)
		put32(&out, 0x04034b50)
		put16(&out, 45)
		put16(&out, m.flags)
		put16(&out, m.method)
		put16(&out, 0)
		put16(&out, 0x21)
		put32(&out, m.crc)
		put32(&out, cs)
		put32(&out, us)
		put16(&out, uint16(len(m.name)))
		put16(&out, uint16(len(extra)))
		out.WriteString(m.name)
		out.Write(extra)
		out.Write(m.data)
	}
	cdStart := out.Len()
	header := func(i int) {
		m := a.members[i]
		cs, us := u32(m)
		extra := z64(m)
		put32(&out, 0x02014b50)
		put16(&out, m.made)
		put16(&out, 45)
		put16(&out, m.flags)
		put16(&out, m.method)
		put16(&out, 0)
		put16(&out, 0x21)
		put32(&out, m.crc)
		put32(&out, cs)
		put32(&out, us)
		put16(&out, uint16(len(m.name)))
		put16(&out, uint16(len(extra)))
		put16(&out, 0)
		put16(&out, 0)
		put16(&out, 0)
		put32(&out, m.ext)
		put32(&out, uint32(offsets[i]-int64(len(a.prefix))))
		out.WriteString(m.name)
		out.Write(extra)
	}
	for i := range a.members {
		header(i)
	}
	for range a.extraHeaders {
		header(len(a.members) - 1)
	}
	cdSize := uint32(out.Len() - cdStart)
	if a.cdSize != nil {
		cdSize = *a.cdSize
	}
	records := uint16(len(a.members))
	if a.records != nil {
		records = *a.records
	}
	put32(&out, 0x06054b50)
	put16(&out, 0)
	put16(&out, 0)
	put16(&out, records)
	put16(&out, records)
	put32(&out, cdSize)
	put32(&out, uint32(cdStart-len(a.prefix))) // offsets count from the archive's start, after any prefix
	put16(&out, 0)
	return out.Bytes()
}

// newZeroHash is the SHA-256 of n zero bytes.
func newZeroHash(n int64) Digest {
	h := sha256.New()
	chunk := make([]byte, 1<<20)
	for n > 0 {
		k := min(n, int64(len(chunk)))
		h.Write(chunk[:k])
		n -= k
	}
	var d Digest
	h.Sum(d[:0])
	return d
}
