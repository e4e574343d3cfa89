package tools

import (
	"errors"
	"regexp"
	"strings"
	"unicode/utf8"
)

// A glob is compiled to one RE2 regular expression, so matching a name
// costs time linear in the name whatever the pattern: a backtracking
// matcher takes exponential time on patterns such as {a,*}{a,*}…x, and no
// context can interrupt a single call into it.
//
// The syntax is doublestar's: * matches within a path element, ** as a
// whole element any number of elements (a trailing /** what is inside
// the directory, as in gitignore), ? one character, [abc] [a-z] [!abc] [^abc] a class (never
// /), {a,b} alternatives (nested), and \ escapes the next character.

// errGlobSyntax is the error of a pattern that does not parse.
var errGlobSyntax = errors.New("syntax error in glob")

// globSyntax is one dialect of glob.
type globSyntax struct {
	// braces enables {a,b}; gitignore patterns have none.
	braces bool
}

var (
	doublestarSyntax = globSyntax{braces: true}
	gitignoreSyntax  = globSyntax{}
)

// compileGlob compiles pattern to a regular expression anchored at both
// ends that matches exactly the slash-separated names the glob matches.
func compileGlob(pattern string, syn globSyntax) (*regexp.Regexp, error) {
	expr, err := globExpr(pattern, syn)
	if err != nil {
		return nil, err
	}
	return regexp.Compile(expr)
}

// globExpr translates pattern into RE2 syntax.
func globExpr(pattern string, syn globSyntax) (string, error) {
	t := globTranslator{p: pattern, syn: syn}
	t.b.WriteString(`(?s)^`)
	if err := t.sequence(0); err != nil {
		return "", err
	}
	if t.i < len(t.p) { // a } or , outside braces ends the sequence early
		return "", errGlobSyntax
	}
	t.b.WriteString(`$`)
	return t.b.String(), nil
}

type globTranslator struct {
	p   string
	i   int
	syn globSyntax
	b   strings.Builder
}

// sequence translates up to the end of the pattern or, inside braces
// (depth > 0), up to the next unescaped , or }.
func (t *globTranslator) sequence(depth int) error {
	for t.i < len(t.p) {
		c := t.p[t.i]
		switch {
		case c == '*':
			t.star()
		case c == '?':
			t.b.WriteString(`[^/]`)
			t.i++
		case c == '[':
			if err := t.class(); err != nil {
				return err
			}
		case c == '\\':
			if t.i+1 >= len(t.p) {
				return errGlobSyntax
			}
			t.i++
			t.literal()
		case c == '{' && t.syn.braces:
			if err := t.alternatives(depth + 1); err != nil {
				return err
			}
		case (c == ',' || c == '}') && t.syn.braces:
			if depth == 0 {
				if c == '}' {
					return errGlobSyntax
				}
				t.literal()
				continue
			}
			return nil
		default:
			t.literal()
		}
	}
	if depth > 0 {
		return errGlobSyntax // unclosed {
	}
	return nil
}

func (t *globTranslator) literal() {
	r, n := utf8.DecodeRuneInString(t.p[t.i:])
	if r == utf8.RuneError && n == 1 {
		// RE2 reads names as UTF-8, each invalid byte as U+FFFD: an
		// invalid byte of the pattern matches any invalid byte.
		t.b.WriteString(`\x{FFFD}`)
	} else {
		t.b.WriteString(regexp.QuoteMeta(t.p[t.i : t.i+n]))
	}
	t.i += n
}

// star translates * and **. ** is a globstar only as a whole path
// element; elsewhere it is *.
func (t *globTranslator) star() {
	start := t.i
	for t.i < len(t.p) && t.p[t.i] == '*' {
		t.i++
	}
	if t.i-start == 1 || !t.elementStart(start) {
		t.b.WriteString(`[^/]*`)
		return
	}
	switch {
	case t.i == len(t.p) || t.boundary(t.p[t.i]):
		// ** at the end: everything below (a/** is "a/" then anything).
		t.b.WriteString(`.*`)
	case t.p[t.i] == '/':
		t.i++ // **/ is zero or more whole elements
		t.b.WriteString(`(?:.*/)?`)
	default:
		t.b.WriteString(`[^/]*`)
	}
}

// elementStart reports whether position i starts a path element.
func (t *globTranslator) elementStart(i int) bool {
	return i == 0 || t.p[i-1] == '/' || (t.syn.braces && (t.p[i-1] == '{' || t.p[i-1] == ',') && !escaped(t.p, i-1))
}

func (t *globTranslator) boundary(c byte) bool {
	return t.syn.braces && (c == ',' || c == '}')
}

// escaped reports whether the byte at i is escaped by a backslash.
func escaped(p string, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && p[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// alternatives translates {a,b,...}.
func (t *globTranslator) alternatives(depth int) error {
	t.i++ // {
	if t.i < len(t.p) && t.p[t.i] == '}' {
		return errGlobSyntax // {} has no alternative
	}
	t.b.WriteString(`(?:`)
	for {
		if err := t.sequence(depth); err != nil {
			return err
		}
		if t.i >= len(t.p) {
			return errGlobSyntax
		}
		if t.p[t.i] == '}' {
			t.i++
			t.b.WriteString(`)`)
			return nil
		}
		t.i++ // ,
		t.b.WriteString(`|`)
	}
}

// class translates [...], which never matches /.
func (t *globTranslator) class() error {
	t.i++ // [
	t.b.WriteString(`[`)
	if t.i < len(t.p) && (t.p[t.i] == '!' || t.p[t.i] == '^') {
		t.b.WriteString(`^/`)
		t.i++
	}
	n := 0
	for ; t.i < len(t.p) && t.p[t.i] != ']'; n++ {
		if t.p[t.i] == '\\' {
			t.i++
			if t.i >= len(t.p) {
				return errGlobSyntax
			}
		}
		r, size := utf8.DecodeRuneInString(t.p[t.i:])
		if r == utf8.RuneError && size == 1 {
			return errGlobSyntax
		}
		if r == '/' {
			return errGlobSyntax // a class never matches a separator
		}
		switch {
		case r == '-' && n > 0 && t.i+1 < len(t.p) && t.p[t.i+1] != ']':
			t.b.WriteString(`-`) // a range
		case r == '-':
			t.b.WriteString(`\-`) // QuoteMeta leaves - alone
		default:
			t.b.WriteString(regexp.QuoteMeta(string(r)))
		}
		t.i += size
	}
	if t.i >= len(t.p) || n == 0 {
		return errGlobSyntax
	}
	t.i++ // ]
	t.b.WriteString(`]`)
	return nil
}

// globBase splits a pattern into the directory it starts in (its leading
// elements without any metacharacter) and the rest, as doublestar's
// SplitPattern does.
func globBase(pattern string) (base, rest string) {
	last := -1
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '*', '?', '[', '{', '\\':
			if last < 0 {
				return ".", pattern
			}
			return pattern[:last], pattern[last+1:]
		case '/':
			last = i
		}
	}
	if last < 0 {
		return ".", pattern
	}
	return pattern[:last], pattern[last+1:]
}
