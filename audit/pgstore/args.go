package pgstore

import (
	"encoding/binary"
	"time"
)

// args encodes an insert's parameters in PostgreSQL's binary form (the
// stream and the host as text, then insertRows' arrays, a column at a
// time) into one buffer reused from batch to batch. pgx's own encoding
// of the sixteen arrays, element by element through its type map, cost
// more than the rest of the sender: 38 % of the bytes allocated an event
// and most of its 17 allocations (BenchmarkWrite).
type args struct {
	buf  []byte
	vals [insertParams][]byte
}

// insertParams are insertRows' parameters.
const insertParams = 16

// argsKeep is the largest buffer kept for the next batch: a batch of
// events of ordinary size fits; one of large events does not keep its
// buffer.
const argsKeep = 1 << 20

// binaryFormat: every parameter in binary form.
var binaryFormat = []int16{1}

// The element types of the arrays (pg_type's OIDs).
const (
	oidInt8        = 20
	oidText        = 25
	oidTimestamptz = 1184
)

// pgEpochMicros is 2000-01-01 UTC, where PostgreSQL's timestamps count
// from, in microseconds since 1970.
const pgEpochMicros = 946_684_800 * 1_000_000

// encode returns the parameters of rows, valid until the next encode.
func (a *args) encode(stream, host string, rows []row) [][]byte {
	var ends [insertParams]int
	b := append(a.buf[:0], stream...)
	ends[0] = len(b)
	b = append(b, host...)
	ends[1] = len(b)
	col := 2
	int8s := func(f func(*row) int64) {
		b = arrayHeader(b, oidInt8, len(rows))
		for i := range rows {
			b = binary.BigEndian.AppendUint32(b, 8)
			b = binary.BigEndian.AppendUint64(b, uint64(f(&rows[i])))
		}
		ends[col], col = len(b), col+1
	}
	texts := func(f func(*row) string) {
		b = arrayHeader(b, oidText, len(rows))
		for i := range rows {
			s := f(&rows[i])
			b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
			b = append(b, s...)
		}
		ends[col], col = len(b), col+1
	}
	int8s(func(r *row) int64 { return r.seq })
	texts(func(r *row) string { return r.prev })
	texts(func(r *row) string { return r.hash })
	b = arrayHeader(b, oidTimestamptz, len(rows))
	for i := range rows {
		b = binary.BigEndian.AppendUint32(b, 8)
		b = binary.BigEndian.AppendUint64(b, uint64(pgMicros(rows[i].at)))
	}
	ends[col], col = len(b), col+1
	texts(func(r *row) string { return r.msg })
	texts(func(r *row) string { return r.actor })
	texts(func(r *row) string { return r.tool })
	texts(func(r *row) string { return r.outcome })
	texts(func(r *row) string { return r.policy })
	int8s(func(r *row) int64 { return r.durationUS })
	int8s(func(r *row) int64 { return r.inBytes })
	int8s(func(r *row) int64 { return r.outBytes })
	int8s(func(r *row) int64 { return r.left })
	texts(func(r *row) string { return r.event })
	a.buf = b
	start := 0
	for i, end := range ends {
		a.vals[i] = b[start:end:end]
		start = end
	}
	return a.vals[:]
}

// release lets a large buffer go once its batch is sent.
func (a *args) release() {
	a.vals = [insertParams][]byte{}
	if cap(a.buf) > argsKeep {
		a.buf = nil
	}
}

// arrayHeader appends the header of a one-dimensional array of n
// elements of type elem, without nulls, counted from 1.
func arrayHeader(b []byte, elem uint32, n int) []byte {
	b = binary.BigEndian.AppendUint32(b, 1) // dimensions
	b = binary.BigEndian.AppendUint32(b, 0) // no nulls
	b = binary.BigEndian.AppendUint32(b, elem)
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	return binary.BigEndian.AppendUint32(b, 1) // lower bound
}

// pgMicros is t as a timestamptz holds it: microseconds since 2000,
// what is finer cut off (as pgx encodes a time).
func pgMicros(t time.Time) int64 {
	return t.Unix()*1_000_000 + int64(t.Nanosecond())/1000 - pgEpochMicros
}
