package linedfa

import (
	"bytes"
	"context"
)

// One automaton walk is a chain of dependent loads (a state's row, then
// the next), so it waits on memory at every byte. Lines searches a large
// text as a few streams of whole lines run in lockstep, whose chains
// overlap; lines are independent, so the result is the same. The
// matching lines a later stream meets are queued until the streams
// before it are done, so that lines are reported in order; when one
// stream is done or has a full queue, the rest is searched stream after
// stream.
const (
	streams = 4
	// minStreamBytes is the least bytes per stream worth the split.
	minStreamBytes = 2 << 10
)

// linesByStreams is Lines over data split into streams.
func (s *Searcher) linesByStreams(ctx context.Context, data []byte, hit func(start, end int) bool) error {
	var ss [streams]stream
	split(data, &ss)
	for k := range ss {
		s.live = append(s.live, &ss[k].st)
		s.queued[k] = s.queued[k][:0]
	}
	defer func() { s.live = s.live[:0] }()
	stopped, err := s.lockstep(ctx, data, &ss, hit)
	for k := range ss {
		for _, q := range s.queued[k] {
			if stopped || err != nil {
				return err
			}
			stopped = !hit(q[0], q[1])
		}
		if stopped || err != nil {
			return err
		}
		stopped, err = s.finish(ctx, data, &ss[k], hit)
	}
	return err
}

// split cuts data into streams of whole lines of about the same size.
func split(data []byte, ss *[streams]stream) {
	from := 0
	for k := range ss {
		end := len(data)
		if k < streams-1 {
			if p := max(from, (k+1)*len(data)/streams); p < len(data) {
				if i := bytes.IndexByte(data[p:], '\n'); i >= 0 {
					end = p + i + 1
				}
			}
		}
		ss[k] = newStream(data, from, end)
		from = end
	}
}

// maxQueued bounds the matching lines a later stream keeps until the
// streams before it are done; a stream with as many stops the lockstep.
const maxQueued = 256

// lockstep runs all streams together while none is done or has
// maxQueued lines queued; the first stream's matching lines are reported
// as met, the others' queued in s.queued.
func (s *Searcher) lockstep(ctx context.Context, data []byte, ss *[streams]stream, hit func(start, end int) bool) (stopped bool, err error) {
	cls := &s.l.classes
	deaths, advanced := 0, 0
	for {
		if deaths > 16 && deaths*deadSpan > advanced {
			return false, nil // lines die early: one stream skips them faster
		}
		n := checkBytes / streams
		for k := range ss {
			n = min(n, ss[k].end-ss[k].i)
		}
		if n == 0 {
			return false, nil
		}
		j := together(s.trans, cls, data, ss, n)
		s.scanned += streams * j
		advanced += streams * j
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if j == n {
			continue
		}
		for k := range ss {
			x := &ss[k]
			if s.trans[int(x.st)+int(cls[data[x.i]])] < special {
				continue // this stream was not the one stopped
			}
			at, what := s.stepOne(data, x)
			switch what {
			case runDead:
				deaths++
			case runThrash:
				s.slow = true
				return false, nil
			case runMatch, runInvalid:
				start, end := lineAround(data, x.start, at)
				x.past(end)
				if what == runInvalid && !s.matchInvalid(ctx, data[start:end]) {
					continue
				}
				switch {
				case k == 0:
					if !hit(start, end) {
						return true, nil
					}
				case len(s.queued[k]) == maxQueued-1:
					s.queued[k] = append(s.queued[k], [2]int{start, end})
					return false, nil
				default:
					s.queued[k] = append(s.queued[k], [2]int{start, end})
				}
			}
		}
		if err := s.checkBuilt(ctx); err != nil {
			return false, err
		}
	}
}

// together advances every stream by up to n bytes, stopping all of them
// before the first byte whose transition in any stream is not a state;
// it returns the bytes advanced. The hot loop of a large text.
func together(trans []uint32, cls *[256]uint8, data []byte, ss *[streams]stream, n int) int {
	a, b, c, d := ss[0].i, ss[1].i, ss[2].i, ss[3].i
	sa, sb, sc, sd := ss[0].st, ss[1].st, ss[2].st, ss[3].st
	da, db, dc, dd := data[a:a+n], data[b:b+n], data[c:c+n], data[d:d+n]
	j := 0
	for ; j < len(da) && j < len(db) && j < len(dc) && j < len(dd); j++ {
		ta := trans[int(sa)+int(cls[da[j]])]
		tb := trans[int(sb)+int(cls[db[j]])]
		tc := trans[int(sc)+int(cls[dc[j]])]
		td := trans[int(sd)+int(cls[dd[j]])]
		if ta|tb|tc|td >= special {
			break
		}
		sa, sb, sc, sd = ta, tb, tc, td
	}
	ss[0].i, ss[1].i, ss[2].i, ss[3].i = a+j, b+j, c+j, d+j
	ss[0].st, ss[1].st, ss[2].st, ss[3].st = sa, sb, sc, sd
	return j
}

// stepOne's results when the stream goes on: after a byte, or at the
// next line when the line died.
const (
	runStep = -1
	runDead = -2
)

// deadSpan is the bytes per dead line below which the lockstep stops: a
// single stream skips the rest of a dead line with bytes.IndexByte,
// faster than the streams stopping together at every line.
const deadSpan = 128

// stepOne takes stream x over its next byte, whose transition is not a
// built state: it builds it, or skips a dead line, or reports a match,
// an invalid line or a thrashing cache at byte at.
func (s *Searcher) stepOne(data []byte, x *stream) (at, what int) {
	k := int(s.l.classes[data[x.i]])
	t := s.trans[int(x.st)+k]
	if t == tUnknown {
		var ok bool
		if t, ok = s.compute(x.st, k); !ok {
			return x.i, runThrash
		}
	}
	switch t {
	case tMatch:
		return x.i, runMatch
	case tInvalid:
		return x.i, runInvalid
	case tDead:
		x.st = 0
		if i := bytes.IndexByte(data[x.i+1:x.end], '\n'); i >= 0 {
			x.i += i + 2
		} else {
			x.i, x.tail = x.end, false // the last line is decided
		}
		return 0, runDead
	default:
		x.st, x.i = t, x.i+1
	}
	return 0, runStep
}
