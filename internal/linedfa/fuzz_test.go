package linedfa

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// FuzzLines: for any pattern Go's regexp accepts and any text, the lines
// found are those regexp matches line by line (checkSame: with a full and
// a tiny state cache, in one stream and in several).
func FuzzLines(f *testing.F) {
	for _, s := range []struct{ expr, text string }{
		{`[A-Z][a-z]+[0-9]{3}[a-z]`, "Abc123d\nxAbc12d\nZz999zz"},
		{`(?m)^a`, "a\nba\n\na"},
		{`b$`, "ab\nb\r\nabb"},
		{`\bfoo\b`, "foo\nafoo\nfoo_\n(foo)"},
		{`\B`, "a\naéb\né\n"},
		{`(?i)straße`, "STRASSE\nStraße\nSTRAẞE"},
		{`(?i)k`, "\u212a\nK\n"},
		{`.`, "\xff\n\xe2\x82\n€"},
		{`\x{FFFD}`, "a\xffb\n\xef\xbf\xbd\nc"},
		{`[^a]`, "a\naa\n\xc0"},
		{``, "\n\n"},
		{`(?s).+`, "a\nb"},
		{`a*`, ""},
		{`\Aab\z`, "ab\nab\r\nxab"},
		{`(a|b)*a(a|b){12}`, "ababababababababababa\nbbbb"},
	} {
		f.Add(s.expr, []byte(s.text))
	}
	f.Fuzz(func(t *testing.T, expr string, text []byte) {
		if len(expr) > 200 || len(text) > 4096 {
			return
		}
		checkSame(t, expr, text)
	})
}

// TestAgreesWithRegexp generates patterns and texts from small alphabets,
// so that matches, near misses and every assertion are frequent.
func TestAgreesWithRegexp(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := 5000
	if testing.Short() {
		n = 500
	}
	for range n {
		expr := genPattern(rng, 3)
		if rng.IntN(3) == 0 {
			expr = "(?" + [...]string{"i", "m", "s", "im", "is"}[rng.IntN(5)] + ")" + expr
		}
		text := genText(rng)
		checkSame(t, expr, []byte(text))
	}
}

var atoms = []string{"a", "b", "é", "€", "K", "_", " ", ".", `\b`, `\B`, "^", "$", `\A`, `\z`, "[a-c]", "[^a]", `\w`, `\W`, `\d`, "[é-ü]", `\pL`, `\x{FFFD}`, `\n`, `\r`, "k", "ß", "(?i:s)", "(?-m:^)", "(?s:.)", ""}

func genPattern(rng *rand.Rand, depth int) string {
	if depth == 0 || rng.IntN(3) == 0 {
		return atoms[rng.IntN(len(atoms))]
	}
	a, b := genPattern(rng, depth-1), genPattern(rng, depth-1)
	switch rng.IntN(7) {
	case 0:
		return a + "|" + b
	case 1:
		return "(" + a + ")*"
	case 2:
		return "(?:" + a + ")+" + b
	case 3:
		return "(" + a + ")?" + b
	case 4:
		return "(?:" + a + "){1,3}"
	default:
		return a + b
	}
}

func genText(rng *rand.Rand) string {
	parts := []string{"a", "b", "é", "€", "K", "k", "\u212a", "_", " ", "\n", "\r\n", "ß", "s", "S", "\u017f", "\xff", "\xe2\x82", "\xc3", "\xef\xbf\xbd", "1", "\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80"}
	var b strings.Builder
	for range rng.IntN(30) {
		b.WriteString(parts[rng.IntN(len(parts))])
	}
	return b.String()
}
