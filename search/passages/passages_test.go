package passages

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

func mustFind(t *testing.T, src, q string, o *Options) *Result {
	t.Helper()
	r, err := Find(context.Background(), []byte(src), q, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestFind(t *testing.T) {
	cases := []struct {
		name, src, q string
		o            *Options
		want         []Match
		total        int64
		matching     string
	}{
		{"code point offsets", "héllo, wörld; wörld!", "wörld", nil, []Match{
			{Start: 7, End: 12, Before: "héllo, ", Text: "wörld", After: "; wörld!"},
			{Start: 14, End: 19, Before: "héllo, wörld; ", Text: "wörld", After: "!"},
		}, 2, Exact},
		{"non-overlapping", "aaaaa", "aa", nil, []Match{
			{Start: 0, End: 2, Text: "aa", After: "aaa"},
			{Start: 2, End: 4, Before: "aa", Text: "aa", After: "a"},
		}, 2, Exact},
		{"exact is case sensitive", "Cat cat CAT", "cat", nil, []Match{
			{Start: 4, End: 7, Before: "Cat ", Text: "cat", After: " CAT"},
		}, 1, Exact},
		{"no normalisation", "cafe\u0301 café", "café", nil, []Match{
			{Start: 6, End: 10, Before: "cafe\u0301 ", Text: "café"},
		}, 1, Exact},
		{"folding", "Cat cat CAT", "cAt", &Options{IgnoreCase: true}, []Match{
			{Start: 0, End: 3, Text: "Cat", After: " cat CAT"},
			{Start: 4, End: 7, Before: "Cat ", Text: "cat", After: " CAT"},
			{Start: 8, End: 11, Before: "Cat cat ", Text: "CAT"},
		}, 3, SimpleFold},
		{"folding kelvin and sigma", "\u212Aelvin ΣΟΦΟΣ", "kelvin σοφος", &Options{IgnoreCase: true}, []Match{
			{Start: 0, End: 12, Text: "\u212Aelvin ΣΟΦΟΣ"},
		}, 1, SimpleFold},
		{"simple folding never expands", "STRASSE", "straße", &Options{IgnoreCase: true}, []Match{}, 0, SimpleFold},
		{"regions cut context and matches", "ab.cd|ef.cd|cd", "cd", &Options{Regions: []Region{{6, 12}, {0, 6}, {12, 14}}}, []Match{
			{Start: 3, End: 5, Region: 1, Before: "ab.", Text: "cd", After: "|"},
			{Start: 9, End: 11, Region: 0, Before: "ef.", Text: "cd", After: "|"},
			{Start: 12, End: 14, Region: 2, Text: "cd"},
		}, 3, Exact},
		{"a match across regions does not count", "xxab|yy", "ab|y", &Options{Regions: []Region{{0, 5}, {5, 7}}}, []Match{}, 0, Exact},
		{"text outside regions is not searched", "needle hay needle", "needle", &Options{Regions: []Region{{6, 11}}}, []Match{}, 0, Exact},
		{"a region ending at the source's end", "ab", "b", &Options{Regions: []Region{{1, 2}}}, []Match{
			{Start: 1, End: 2, Text: "b"},
		}, 1, Exact},
		{"a restart after a crossing match", "aaa", "aa", &Options{Regions: []Region{{0, 1}, {1, 3}}}, []Match{
			{Start: 1, End: 3, Region: 1, Text: "aa"},
		}, 1, Exact},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := mustFind(t, c.src, c.q, c.o)
			if r.Total != c.total || r.Matching != c.matching || !slices.Equal(r.Matches, c.want) {
				t.Fatalf("got total %d %s %+v\nwant total %d %s %+v", r.Total, r.Matching, r.Matches, c.total, c.matching, c.want)
			}
		})
	}
}

func TestContextBound(t *testing.T) {
	pad := strings.Repeat("é.", limits.PassagesContextRunes)
	src := pad + "x" + pad
	r := mustFind(t, src, "x", nil)
	m := r.Matches[0]
	want := strings.Repeat("é.", limits.PassagesContextRunes/2)
	if m.Before != want || m.After != want {
		t.Fatalf("context %q / %q, want %d characters of %q each", m.Before, m.After, limits.PassagesContextRunes, want)
	}
}

func TestLimits(t *testing.T) {
	src := strings.Repeat("ab", limits.PassagesMaxMatches+500)
	for _, c := range []struct {
		limit, got int
		code       fault.Code
	}{
		{0, limits.PassagesDefaultMatches, ""},
		{1, 1, ""},
		{limits.PassagesMaxMatches, limits.PassagesMaxMatches, ""},
		{limits.PassagesMaxMatches + 1, 0, fault.Limit},
		{-1, 0, fault.InvalidInput},
	} {
		r, err := Find(context.Background(), []byte(src), "b", &Options{Limit: c.limit})
		if fault.CodeOf(err) != c.code {
			t.Fatalf("limit %d: %v, want %q", c.limit, err, c.code)
		}
		if err == nil && (len(r.Matches) != c.got || r.Total != limits.PassagesMaxMatches+500 || !r.Truncated() || r.Limit != c.got) {
			t.Fatalf("limit %d: %d matches, total %d, limit %d", c.limit, len(r.Matches), r.Total, r.Limit)
		}
	}
}

func TestRefusals(t *testing.T) {
	ok := "abc"
	cases := []struct {
		name, src, q string
		o            *Options
		code         fault.Code
	}{
		{"empty query", ok, "", nil, fault.InvalidInput},
		{"query at its bound", ok, strings.Repeat("a", limits.PassagesMaxQueryBytes), nil, ""},
		{"query past its bound", ok, strings.Repeat("a", limits.PassagesMaxQueryBytes+1), nil, fault.Limit},
		{"query not UTF-8", ok, "a\xff", nil, fault.InvalidInput},
		{"source not UTF-8", "abc\xc3(", "a", nil, fault.InvalidInput},
		{"truncated character at the end", "abc\xe2\x82", "a", nil, fault.InvalidInput},
		{"overlapping regions", ok, "a", &Options{Regions: []Region{{1, 3}, {0, 2}}}, fault.InvalidInput},
		{"touching regions", ok, "a", &Options{Regions: []Region{{1, 3}, {0, 1}}}, ""},
		{"empty region", ok, "a", &Options{Regions: []Region{{1, 1}}}, fault.InvalidInput},
		{"reversed region", ok, "a", &Options{Regions: []Region{{2, 1}}}, fault.InvalidInput},
		{"negative region", ok, "a", &Options{Regions: []Region{{-1, 1}}}, fault.InvalidInput},
		{"region at the end", "aé", "a", &Options{Regions: []Region{{0, 2}}}, ""},
		{"region one past the end", "aé", "a", &Options{Regions: []Region{{0, 3}}}, fault.InvalidInput},
		{"region starting past the end", "aé", "a", &Options{Regions: []Region{{5, 6}}}, fault.InvalidInput},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Find(context.Background(), []byte(c.src), c.q, c.o)
			if fault.CodeOf(err) != c.code {
				t.Fatalf("%v, want %q", err, c.code)
			}
		})
	}
}

func TestInvalidOffsetNamed(t *testing.T) {
	src := append(bytes.Repeat([]byte("a"), 5<<20), 0xff)
	_, err := Find(context.Background(), src, "a", nil)
	if fault.CodeOf(err) != fault.InvalidInput || !strings.Contains(err.Error(), "offset 5242880") {
		t.Fatalf("%v", err)
	}
}

func TestSourceBound(t *testing.T) {
	src := bytes.Repeat([]byte("a"), limits.PassagesMaxSourceBytes+1)
	if _, err := Find(context.Background(), src, "b", nil); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("one past the bound: %v", err)
	}
	r, err := Find(context.Background(), src[:limits.PassagesMaxSourceBytes], "aab", nil)
	if err != nil || r.Total != 0 {
		t.Fatalf("at the bound: %v %+v", err, r)
	}
}

func TestManyRegions(t *testing.T) {
	// One region per character: no region-count cutoff.
	src := strings.Repeat("ab", 100_000)
	regions := make([]Region, len(src))
	for i := range regions {
		regions[len(regions)-1-i] = Region{int64(i), int64(i + 1)}
	}
	r := mustFind(t, src, "b", &Options{Regions: regions, Limit: 2})
	if r.Total != 100_000 || r.Matches[0].Region != len(src)-2 || r.Matches[0].Start != 1 {
		t.Fatalf("%d %+v", r.Total, r.Matches)
	}
}

func TestCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, o := range []*Options{nil, {IgnoreCase: true}} {
		if _, err := Find(ctx, []byte("abc"), "b", o); fault.CodeOf(err) != fault.Unavailable {
			t.Fatalf("%v", err)
		}
	}
}

// TestAgainstReference compares Find with a plain character-by-character
// search on random texts and regions.
func TestAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		src, q, o := randomCase(rng)
		check(t, src, q, o)
	}
}

var alphabet = []rune{'a', 'A', 'b', 'é', 'É', '.', ' ', 'ſ', 'S', 's', '\u212A', 'k', '日', '😀'}

func randomCase(rng *rand.Rand) (string, string, *Options) {
	src := make([]rune, rng.IntN(200))
	for i := range src {
		src[i] = alphabet[rng.IntN(len(alphabet))]
	}
	q := make([]rune, 1+rng.IntN(3))
	for i := range q {
		q[i] = alphabet[rng.IntN(4)]
	}
	o := &Options{IgnoreCase: rng.IntN(2) == 0, Limit: 1 + rng.IntN(10)}
	if rng.IntN(2) == 0 {
		for at := 0; at < len(src); {
			n := 1 + rng.IntN(20)
			if at+n > len(src) {
				break
			}
			if rng.IntN(3) > 0 {
				o.Regions = append(o.Regions, Region{int64(at), int64(at + n)})
			}
			at += n + rng.IntN(3)
		}
		rng.Shuffle(len(o.Regions), func(i, j int) { o.Regions[i], o.Regions[j] = o.Regions[j], o.Regions[i] })
	}
	return string(src), string(q), o
}

func check(t *testing.T, src, q string, o *Options) {
	t.Helper()
	got, err := Find(context.Background(), []byte(src), q, o)
	if err != nil {
		t.Fatalf("%q %q %+v: %v", src, q, o, err)
	}
	want := reference(src, q, o)
	if got.Total != want.Total || !slices.Equal(got.Matches, want.Matches) {
		t.Fatalf("%q in %q %+v:\ngot  %d %+v\nwant %d %+v", q, src, o, got.Total, got.Matches, want.Total, want.Matches)
	}
}

// reference is the obvious search over a slice of characters.
func reference(src, q string, o *Options) *Result {
	s, p := []rune(src), []rune(q)
	regions := o.Regions
	if len(regions) == 0 {
		regions = []Region{{0, int64(len(s))}}
	}
	order := make([]int, len(regions))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(regions[a].Start - regions[b].Start) })
	eq := func(a, b rune) bool { return a == b || o.IgnoreCase && fold(a) == fold(b) }
	res := &Result{Matches: []Match{}}
	for _, ri := range order {
		lo, hi := int(regions[ri].Start), int(regions[ri].End)
		for i := lo; i+len(p) <= hi; {
			if !slices.EqualFunc(s[i:i+len(p)], p, eq) {
				i++
				continue
			}
			res.Total++
			if len(res.Matches) < o.Limit {
				res.Matches = append(res.Matches, Match{
					Start: int64(i), End: int64(i + len(p)), Region: ri,
					Before: string(s[max(lo, i-limits.PassagesContextRunes):i]),
					Text:   string(s[i : i+len(p)]),
					After:  string(s[i+len(p) : min(hi, i+len(p)+limits.PassagesContextRunes)]),
				})
			}
			i += len(p)
		}
	}
	return res
}

// TestHalves checks the two-goroutine search of large sources against a
// plain count, for queries whose occurrences cannot overlap, at every
// split of matches between the halves.
func TestHalves(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, q := range []string{"ab", "日b", "xyz"} {
		src := make([]rune, 0, 2*parallelBytes)
		for len(src) < cap(src)/2 {
			src = append(src, alphabet[rng.IntN(len(alphabet))])
		}
		text := string(src)
		for _, limit := range []int{1, 7, limits.PassagesMaxMatches} {
			r, err := Find(context.Background(), []byte(text), q, &Options{Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			if want := int64(strings.Count(text, q)); r.Total != want {
				t.Fatalf("%q: total %d, want %d", q, r.Total, want)
			}
			want := reference(text, q, &Options{Limit: limit})
			if !slices.Equal(r.Matches, want.Matches) {
				t.Fatalf("%q limit %d: matches differ", q, limit)
			}
		}
	}
	if borderless("aa") || borderless("abab") || !borderless("abc") || !borderless("a") {
		t.Fatal("borderless")
	}
}
