package passages

import (
	"cmp"
	"context"
	"slices"

	"github.com/capkit/capkit/fault"
)

// mapRegions checks regions and turns them into byte spans in source
// order. No regions means one span over the whole source, region 0.
func mapRegions(ctx context.Context, src []byte, regions []Region) ([]span, error) {
	if len(regions) == 0 {
		return []span{{start: 0, end: len(src), index: 0}}, nil
	}
	order := make([]int, len(regions))
	for i, r := range regions {
		switch {
		case r.Start < 0:
			return nil, fault.New(fault.InvalidInput, "region %d starts at %d: offsets are code points from 0", i, r.Start)
		case r.End <= r.Start:
			return nil, fault.New(fault.InvalidInput, "region %d [%d, %d) is empty or reversed: a region needs start < end", i, r.Start, r.End)
		}
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(regions[a].Start, regions[b].Start) })
	spans := make([]span, len(order))
	pos, cp := 0, int64(0)
	for k, i := range order {
		if k%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		r := regions[i]
		if k > 0 {
			if p := order[k-1]; r.Start < regions[p].End {
				return nil, fault.New(fault.InvalidInput, "regions %d [%d, %d) and %d [%d, %d) overlap: regions must not share a character", p, regions[p].Start, regions[p].End, i, r.Start, r.End)
			}
		}
		start, err := advance(src, &pos, &cp, r.Start, i)
		if err != nil {
			return nil, err
		}
		end, err := advance(src, &pos, &cp, r.End, i)
		if err != nil {
			return nil, err
		}
		spans[k] = span{start: start, end: end, cpStart: r.Start, index: i}
	}
	return spans, nil
}

// advance moves (pos, cp) forward to code point target and returns its
// byte offset; a target past the source's end fails.
func advance(src []byte, pos *int, cp *int64, target int64, region int) (int, error) {
	off, short := skipRunes(src, *pos, target-*cp)
	if short > 0 {
		total := *cp + countRunes(src[*pos:])
		return 0, fault.New(fault.InvalidInput, "region %d reaches past the end of the source, which has %d characters", region, total)
	}
	*pos, *cp = off, target
	return off, nil
}
