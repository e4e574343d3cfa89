package htmldoc

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"golang.org/x/net/html/atom"
)

// Thresholds of the article checks. They are heuristics, not resource
// bounds, so they live here rather than in package limits.
const (
	// articleMinChars is the least text an article has (as readability
	// tools use).
	articleMinChars = 500
	// articleMaxLinkDensity is the largest share of an article's text
	// that may sit inside links.
	articleMaxLinkDensity = 0.5
	// proseChars is the least text of a paragraph counted as prose (it
	// must also end a sentence).
	proseChars = 80
	// indexTeasers is how many linked headings or nested <article>
	// elements make a candidate an index page, when it has fewer than two
	// prose paragraphs per teaser.
	indexTeasers = 3
	// shellChars: a page with less text than this and scripts needs the
	// scripts to render its content.
	shellChars = 200
)

var (
	positiveClass = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`article|body|content|entry|main|page|post|text|blog|story`)
	})
	negativeClass = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`comment|combx|contact|foot|masthead|media|meta|outbrain|promo|related|scroll|shoutbox|sidebar|sponsor|shopping|tags|tool|widget|nav|menu|share|social|advert|banner|cookie|consent|subscribe|paywall|newsletter|breadcrumb|pagination|popup|modal`)
	})
)

// chooseArticle picks the element most likely to be the page's article and
// says how. It returns nil and a reason when the page's structure shows it
// has none (an index of several articles).
func chooseArticle(root *node) (n *node, method string, noneReason string) {
	var bodies, articles, mains []*node
	walkVisible(root, func(n *node) {
		if ip, _ := n.attr("itemprop"); strings.Contains(ip, "articleBody") {
			bodies = append(bodies, n)
		}
		if n.a == atom.Article {
			articles = append(articles, n)
		}
		if role, _ := n.attr("role"); n.a == atom.Main || role == "main" {
			mains = append(mains, n)
		}
	})
	switch {
	case len(bodies) > 0:
		return largest(bodies), "itemprop=articleBody", ""
	case len(articles) == 1:
		return articles[0], "<article>", ""
	case len(articles) > 1:
		big := largest(articles)
		rest := 0
		for _, a := range articles {
			if a != big && !within(a, big) {
				rest += a.tlen
			}
		}
		if big.tlen > rest {
			return big, "<article> (largest)", ""
		}
		return big, "<article> (largest)", "the page holds " + strconv.Itoa(len(articles)) + " <article> elements of similar size: an index or listing page"
	case len(mains) == 1:
		return mains[0], "<main>", ""
	}
	if best := bestScored(root); best != nil {
		return best, "paragraph score", ""
	}
	return nil, "", "no element holds paragraphs of text"
}

// bestScored scores containers by the paragraphs they hold, as readability
// tools do: each paragraph adds to its parent and, halved, its grandparent;
// class names shift the score; links discount it.
func bestScored(root *node) *node {
	scores := map[*node]float64{}
	add := func(n *node, s float64) {
		if n == nil || n.isText() || n.a == atom.Html || n.name == "#document" {
			return
		}
		if _, ok := scores[n]; !ok {
			scores[n] = baseScore(n)
		}
		scores[n] += s
	}
	walkVisible(root, func(n *node) {
		if n.a != atom.P && n.a != atom.Pre {
			return
		}
		if n.tlen < 25 {
			return
		}
		s := 1 + float64(n.commas) + math.Min(float64(n.tlen/100), 3)
		add(n.parent, s)
		if n.parent != nil {
			add(n.parent.parent, s/2)
		}
	})
	var best *node
	bestScore := 0.0
	for n, s := range scores {
		s *= 1 - linkDensity(n)
		if best == nil || s > bestScore || s == bestScore && n.tlen > best.tlen {
			best, bestScore = n, s
		}
	}
	return best
}

func baseScore(n *node) float64 {
	s := 0.0
	switch n.a {
	case atom.Div:
		s = 5
	case atom.Pre, atom.Td, atom.Blockquote:
		s = 3
	case atom.Address, atom.Ol, atom.Ul, atom.Dl, atom.Dd, atom.Dt, atom.Li, atom.Form:
		s = -3
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6, atom.Th:
		s = -5
	}
	if ic := n.idClass(); ic != "" {
		if negativeClass().MatchString(ic) {
			s -= 25
		}
		if positiveClass().MatchString(ic) {
			s += 25
		}
	}
	return s
}

func linkDensity(n *node) float64 {
	if n.tlen == 0 {
		return 0
	}
	return float64(n.llen) / float64(n.tlen)
}

// checkArticle measures the chosen element and returns the reason it is not
// prose, or "".
func checkArticle(n *node, blocks []Block, info *ArticleInfo) string {
	longest := 0
	for _, b := range blocks {
		if (b.Kind == Paragraph || b.Kind == Quote) && isProse(b.Text) {
			info.Paragraphs++
			longest = max(longest, len([]rune(b.Text)))
		}
	}
	teasers := countTeasers(n)
	switch {
	case n.tlen < articleMinChars:
		return "it has only " + strconv.Itoa(n.tlen) + " characters of text (an article has at least " + strconv.Itoa(articleMinChars) + ")"
	case info.LinkDensity > articleMaxLinkDensity:
		return strconv.Itoa(int(info.LinkDensity*100)) + "% of its text is inside links: a navigation or index page"
	case teasers >= indexTeasers && info.Paragraphs < 2*teasers:
		return "it lists " + strconv.Itoa(teasers) + " linked headings or articles with little prose between them: an index page"
	case info.Paragraphs == 0 || info.Paragraphs == 1 && longest < articleMinChars:
		return "it has no paragraphs of prose (sentences of at least " + strconv.Itoa(proseChars) + " characters)"
	}
	return ""
}

// isProse reports whether a paragraph reads as sentences.
func isProse(s string) bool {
	if len([]rune(s)) < proseChars {
		return false
	}
	return strings.ContainsAny(s, ".!?…。！？")
}

// countTeasers counts linked headings and nested <article> elements.
func countTeasers(root *node) int {
	n := 0
	walkVisible(root, func(e *node) {
		switch {
		case e != root && e.a == atom.Article:
			n++
		case headings[e.a] && (hasDescendant(e, atom.A) || e.parent != nil && e.parent.a == atom.A):
			n++
		}
	})
	return n
}

func hasDescendant(n *node, a atom.Atom) bool {
	for _, k := range n.kids {
		if k.a == a || !k.isText() && hasDescendant(k, a) {
			return true
		}
	}
	return false
}

// walkVisible calls f for every visible element of the subtree, root
// included.
func walkVisible(n *node, f func(*node)) {
	if n.isText() || skipped[n.a] || hidden(n) {
		return
	}
	f(n)
	for _, k := range n.kids {
		walkVisible(k, f)
	}
}

func largest(ns []*node) *node {
	best := ns[0]
	for _, n := range ns[1:] {
		if n.tlen > best.tlen {
			best = n
		}
	}
	return best
}

func within(n, ancestor *node) bool {
	for p := n.parent; p != nil; p = p.parent {
		if p == ancestor {
			return true
		}
	}
	return false
}

// articleInfo identifies n. Names, ids and classes come from the page: they
// are cleaned to letters, digits, '-' and '_' and capped, so they cannot
// carry sentences into the result.
func articleInfo(n *node, method string, pageChars int) *ArticleInfo {
	el := cleanName(n.name, 32)
	if id, _ := n.attr("id"); id != "" {
		if c := cleanName(id, 64); c != "" {
			el += "#" + c
		}
	}
	if class, _ := n.attr("class"); class != "" {
		for i, c := range strings.Fields(class) {
			if i == 3 {
				break
			}
			if c = cleanName(c, 40); c != "" {
				el += "." + c
			}
		}
	}
	var path []string
	for p := n; p != nil && p.name != "#document"; p = p.parent {
		path = append(path, cleanName(p.name, 32))
	}
	if len(path) > 12 {
		path = append(path[:12], "…")
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	return &ArticleInfo{
		Element:       el,
		Path:          strings.Join(path, " > "),
		Method:        method,
		TextChars:     n.tlen,
		PageTextChars: pageChars,
		LinkDensity:   math.Round(linkDensity(n)*1000) / 1000,
	}
}

func cleanName(s string, maxRunes int) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == maxRunes {
			break
		}
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' {
			b.WriteRune(r)
			n++
		}
	}
	return b.String()
}
