package passages

import (
	"context"
	"testing"
	"unicode/utf8"
)

// FuzzFind checks Find against the reference search on arbitrary text,
// queries and regions; regions are decoded from pairs of bytes of spec.
func FuzzFind(f *testing.F) {
	f.Add("héllo, wörld; wörld!", "wörld", []byte{0, 5, 7, 9}, false)
	f.Add("aaaaa", "aa", []byte{}, true)
	f.Add("\u212Aelvin ΣΟΦΟΣ ſ", "KELVIN", []byte{0, 20}, true)
	f.Add("ab.cd|ef.cd|cd", "cd", []byte{6, 6, 0, 6, 12, 2}, false)
	f.Fuzz(func(t *testing.T, src, q string, spec []byte, fold bool) {
		o := &Options{IgnoreCase: fold, Limit: 7}
		n := int64(utf8.RuneCountInString(src))
		for i := 0; i+1 < len(spec); i += 2 {
			// start delta and length from one byte each, so regions are
			// mostly valid and non-overlapping.
			at := int64(0)
			if len(o.Regions) > 0 {
				at = o.Regions[len(o.Regions)-1].End
			}
			r := Region{at + int64(spec[i]%4), at + int64(spec[i]%4) + 1 + int64(spec[i+1]%16)}
			o.Regions = append(o.Regions, r)
		}
		if len(spec)%2 == 1 && len(o.Regions) > 1 {
			o.Regions[0], o.Regions[1] = o.Regions[1], o.Regions[0]
		}
		_, err := Find(context.Background(), []byte(src), q, o)
		valid := q != "" && len(q) <= 1024 && utf8.ValidString(q) && utf8.ValidString(src)
		for _, r := range o.Regions {
			valid = valid && r.End <= n
		}
		if !valid {
			if err == nil {
				t.Fatalf("accepted %q %q %+v", src, q, o.Regions)
			}
			return
		}
		check(t, src, q, o)
	})
}
