package lexindex

import (
	"strings"
	"unicode/utf8"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/limits"
)

// The explicit query language is FTS5's own. It is checked here, before
// SQLite sees it, so that a malformed query fails with the position of
// the first thing wrong in it; SQLite's own message names at most a
// token. The checker accepts exactly what FTS5's grammar accepts (a fuzz
// test holds it to SQLite), except that it refuses, as too deep, nesting
// past limits.LexMaxQueryDepth and expressions past maxQueryHeight.

// tokKind is a token of FTS5's query language.
type tokKind int

const (
	tEOF tokKind = iota
	tString
	tLP
	tRP
	tLCP
	tRCP
	tColon
	tComma
	tPlus
	tStar
	tMinus
	tCaret
	tAnd
	tOr
	tNot
)

type token struct {
	kind tokKind
	text string // the token as written; a quoted string keeps its quotes
	pos  int    // byte offset in the query
}

// maxQueryHeight bounds the height of the expression tree (SQLite refuses
// 256).
const maxQueryHeight = 64

// columns are the indexed table's columns, the names a column filter may
// use.
var columns = []string{"body"}

// checkFTS checks an explicit FTS5 query.
func checkFTS(q string) error {
	if err := checkQueryText(q); err != nil {
		return err
	}
	if q[0] == '*' {
		return queryError(q, 0, "a query cannot start with *")
	}
	toks, err := lex(q)
	if err != nil {
		return err
	}
	p := &parser{q: q, toks: toks}
	h, err := p.or(0)
	if err != nil {
		return err
	}
	if t := p.peek(); t.kind != tEOF {
		return p.unexpected(t)
	}
	if h > maxQueryHeight {
		return fault.New(fault.InvalidInput, "fts5 query: the expression is too deep (more than %d levels of operators)", maxQueryHeight)
	}
	return nil
}

func checkQueryText(q string) error {
	switch {
	case strings.TrimLeft(q, " \t\r\n") == "":
		return fault.New(fault.InvalidInput, "the query is empty")
	case len(q) > limits.LexMaxQueryBytes:
		return fault.LimitExceeded("query bytes", limits.LexMaxQueryBytes, int64(len(q)))
	case !utf8.ValidString(q):
		return fault.New(fault.InvalidInput, "the query is not valid UTF-8")
	}
	if i := strings.IndexByte(q, 0); i >= 0 {
		return queryError(q, i, "NUL character")
	}
	return nil
}

// queryError names the position of a fault at byte offset at of q as a
// 1-based character number.
func queryError(q string, at int, format string, args ...any) error {
	msg := fault.New(fault.InvalidInput, format, args...).Message
	return fault.New(fault.InvalidInput, "fts5 query: %s at character %d", msg, utf8.RuneCountInString(q[:at])+1)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// isBare reports whether c may appear in an unquoted string: ASCII
// letters and digits, '_', 0x1A, and every byte of a non-ASCII character.
func isBare(c byte) bool {
	return c >= 0x80 || c == '_' || c == 0x1a || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

var punct = map[byte]tokKind{
	'(': tLP, ')': tRP, '{': tLCP, '}': tRCP, ':': tColon, ',': tComma,
	'+': tPlus, '*': tStar, '-': tMinus, '^': tCaret,
}

func lex(q string) ([]token, error) {
	var toks []token
	for i := 0; ; {
		for i < len(q) && isSpace(q[i]) {
			i++
		}
		if i == len(q) {
			return append(toks, token{kind: tEOF, pos: i}), nil
		}
		start := i
		c := q[i]
		if k, ok := punct[c]; ok {
			toks = append(toks, token{kind: k, text: q[i : i+1], pos: i})
			i++
			continue
		}
		switch {
		case c == '"':
			for i++; ; i++ {
				if i == len(q) {
					return nil, queryError(q, start, "unterminated string")
				}
				if q[i] == '"' {
					if i+1 < len(q) && q[i+1] == '"' {
						i++
						continue
					}
					i++
					break
				}
			}
			toks = append(toks, token{kind: tString, text: q[start:i], pos: start})
		case isBare(c):
			for i < len(q) && isBare(q[i]) {
				i++
			}
			t := token{kind: tString, text: q[start:i], pos: start}
			switch t.text {
			case "AND":
				t.kind = tAnd
			case "OR":
				t.kind = tOr
			case "NOT":
				t.kind = tNot
			}
			toks = append(toks, t)
		default:
			r, _ := utf8.DecodeRuneInString(q[i:])
			return nil, queryError(q, i, "unexpected %q (quote it, or leave it out)", r)
		}
	}
}

// parser is a recursive-descent recogniser for FTS5's grammar; each rule
// returns the height of the expression it read.
type parser struct {
	q    string
	toks []token
	i    int
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) peekAt(n int) token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}
func (p *parser) next() token { t := p.toks[p.i]; p.i++; return t }

func (p *parser) unexpected(t token) error {
	if t.kind == tEOF {
		return queryError(p.q, t.pos, "the query ends too early")
	}
	return queryError(p.q, t.pos, "unexpected %q", clip.Text(t.text))
}

func (p *parser) expect(k tokKind) (token, error) {
	if t := p.peek(); t.kind != k {
		return t, p.unexpected(t)
	}
	return p.next(), nil
}

// binary reads operands joined by op, each read by sub. AND and OR
// chains are flattened into one node, as FTS5 does; NOT is not.
func (p *parser) binary(op tokKind, depth int, sub func(int) (int, error)) (int, error) {
	h, err := sub(depth)
	if err != nil || p.peek().kind != op {
		return h, err
	}
	for p.peek().kind == op {
		p.next()
		r, err := sub(depth)
		if err != nil {
			return 0, err
		}
		if op == tNot {
			h = 1 + max(h, r)
		} else {
			h = max(h, r)
		}
	}
	if op != tNot {
		h++
	}
	return h, nil
}

func (p *parser) or(depth int) (int, error)  { return p.binary(tOr, depth, p.and) }
func (p *parser) and(depth int) (int, error) { return p.binary(tAnd, depth, p.not) }
func (p *parser) not(depth int) (int, error) { return p.binary(tNot, depth, p.primary) }

// primary is a parenthesised expression, with or without a column
// filter, or a run of phrases and NEAR groups (an implicit AND).
func (p *parser) primary(depth int) (int, error) {
	if t := p.peek(); t.kind == tLP || p.colsetThenParen() {
		if depth >= limits.LexMaxQueryDepth {
			return 0, queryError(p.q, t.pos, "parentheses nest deeper than %d levels", limits.LexMaxQueryDepth)
		}
		if t.kind != tLP {
			if err := p.colset(); err != nil {
				return 0, err
			}
			p.next() // the colon
		}
		p.next() // the parenthesis
		h, err := p.or(depth + 1)
		if err != nil {
			return 0, err
		}
		_, err = p.expect(tRP)
		return h, err
	}
	n := 0
	for startsNearset(p.peek().kind) {
		if err := p.cnearset(); err != nil {
			return 0, err
		}
		n++
	}
	if n == 0 {
		return 0, p.unexpected(p.peek())
	}
	if n > 1 {
		return 2, nil
	}
	return 1, nil
}

func startsNearset(k tokKind) bool {
	return k == tString || k == tCaret || k == tLCP || k == tMinus
}

// colsetThenParen reports whether a column filter followed by ":(" is
// next.
func (p *parser) colsetThenParen() bool {
	n := 0
	if p.peekAt(n).kind == tMinus {
		n++
	}
	switch p.peekAt(n).kind {
	case tString:
		n++
	case tLCP:
		for n++; p.peekAt(n).kind == tString; n++ {
		}
		if p.peekAt(n).kind != tRCP {
			return false
		}
		n++
	default:
		return false
	}
	return p.peekAt(n).kind == tColon && p.peekAt(n+1).kind == tLP
}

// cnearset is a phrase or NEAR group, optionally behind a column filter.
func (p *parser) cnearset() error {
	t := p.peek()
	if t.kind == tMinus || t.kind == tLCP || t.kind == tString && p.peekAt(1).kind == tColon {
		if err := p.colset(); err != nil {
			return err
		}
		if _, err := p.expect(tColon); err != nil {
			return err
		}
	}
	return p.nearset()
}

// colset is a column name, or names in braces, optionally negated.
func (p *parser) colset() error {
	if p.peek().kind == tMinus {
		p.next()
	}
	if p.peek().kind != tLCP {
		t, err := p.expect(tString)
		if err != nil {
			return err
		}
		return p.column(t)
	}
	p.next()
	for {
		t, err := p.expect(tString)
		if err != nil {
			return err
		}
		if err := p.column(t); err != nil {
			return err
		}
		if p.peek().kind == tRCP {
			p.next()
			return nil
		}
	}
}

func (p *parser) column(t token) error {
	name := dequote(t.text)
	for _, c := range columns {
		if strings.EqualFold(name, c) {
			return nil
		}
	}
	return queryError(p.q, t.pos, "no column %q (the indexed column is %q)", clip.Text(name), columns[0])
}

func dequote(s string) string {
	if len(s) < 2 || s[0] != '"' {
		return s
	}
	return strings.ReplaceAll(s[1:len(s)-1], `""`, `"`)
}

// nearset is "^" and a phrase, a phrase, or NEAR(phrase... [, N]).
func (p *parser) nearset() error {
	t := p.peek()
	if t.kind == tCaret {
		p.next()
		return p.phrase()
	}
	if t.kind != tString || p.peekAt(1).kind != tLP {
		return p.phrase()
	}
	if t.text != "NEAR" {
		return queryError(p.q, t.pos, "%q before \"(\" is not NEAR", clip.Text(t.text))
	}
	p.next()
	p.next()
	if err := p.phrase(); err != nil {
		return err
	}
	for p.peek().kind == tString {
		if err := p.phrase(); err != nil {
			return err
		}
	}
	if p.peek().kind == tComma {
		p.next()
		d, err := p.expect(tString)
		if err != nil {
			return err
		}
		if strings.Trim(d.text, "0123456789") != "" || len(d.text) > 9 {
			return queryError(p.q, d.pos, "NEAR distance %q is not a number of at most 9 digits", clip.Text(d.text))
		}
	}
	_, err := p.expect(tRP)
	return err
}

// phrase is strings joined by "+", each optionally followed by "*".
func (p *parser) phrase() error {
	for {
		if _, err := p.expect(tString); err != nil {
			return err
		}
		if p.peek().kind == tStar {
			p.next()
		}
		if p.peek().kind != tPlus {
			return nil
		}
		p.next()
	}
}

// phraseQuery is q as one FTS5 phrase.
func phraseQuery(q string) (string, error) {
	if err := checkQueryText(q); err != nil {
		return "", err
	}
	return quote(q), nil
}

// termsQuery is each whitespace-separated term of q as a phrase of its
// own, all required.
func termsQuery(q string) (string, error) {
	if err := checkQueryText(q); err != nil {
		return "", err
	}
	terms := strings.Fields(q)
	for i, t := range terms {
		terms[i] = quote(t)
	}
	return strings.Join(terms, " "), nil
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
