package tools

import (
	"bytes"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/capkit/capkit/limits"
)

// ignoreRule is one line of a .gitignore, compiled once.
type ignoreRule struct {
	negate  bool
	dirOnly bool
	// anchored rules match the path relative to the declaring directory;
	// the others match the base name.
	anchored bool
	// exact is set for a rule without metacharacters, which is compared
	// as a string, suffix for a rule *suffix; re otherwise, with lit a
	// text every name it matches contains ("" if none), which most names
	// a walk asks about do not: a substring search rules them out before
	// the regexp runs.
	exact  string
	suffix string
	re     *regexp.Regexp
	lit    string
}

// ignoreFile is the compiled rules of one directory's .gitignore.
type ignoreFile struct {
	dir   string // root-relative; "." for the root
	rules []ignoreRule
	// exact and anchored index the rules without metacharacters by their
	// text (base-name rules, anchored rules), so most rules cost a map
	// lookup; globs lists the others' indexes.
	exact    map[string][]int
	anchored map[string][]int
	globs    []int
}

// parseIgnore compiles the rules of data, declared in dir. Rules longer
// than limits.GitignoreMaxRuleBytes or that do not parse are not kept and
// are counted in dropped. It stops, with f nil, at the first rule past
// room: a file is honoured whole or not at all.
func parseIgnore(dir string, data []byte, room int) (f *ignoreFile, dropped int) {
	if countRules(data) > room {
		return nil, 0 // decided before compiling any
	}
	f = &ignoreFile{dir: dir}
	for len(data) > 0 {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		r, ok, valid := parseIgnoreLine(line)
		switch {
		case !valid:
			dropped++
		case ok:
			f.add(r)
		}
	}
	return f, dropped
}

// countRules counts the lines of data that are neither blank nor
// comments: at least the rules it declares.
func countRules(data []byte) int {
	n := 0
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimRight(line, " \r")
		if len(line) > 0 && line[0] != '#' {
			n++
		}
	}
	return n
}

// parseIgnoreLine compiles one line; ok is false for blanks and comments,
// valid false for a rule that is not honoured.
func parseIgnoreLine(line []byte) (r ignoreRule, ok, valid bool) {
	s := strings.TrimSuffix(string(line), "\r")
	s = trimUnescapedSpace(s)
	if s == "" || s[0] == '#' {
		return r, false, true
	}
	if len(s) > limits.GitignoreMaxRuleBytes {
		return r, false, false
	}
	if s[0] == '!' {
		r.negate, s = true, s[1:]
	}
	if strings.HasSuffix(s, "/") && !escaped(s, len(s)-1) {
		r.dirOnly, s = true, strings.TrimRight(s, "/")
	}
	if s == "" {
		return r, false, true
	}
	if strings.Contains(s, "/") {
		r.anchored, s = true, strings.TrimPrefix(s, "/")
	}
	if !strings.ContainsAny(s, `*?[\`) {
		r.exact = s
		return r, true, true
	}
	if ext, ok := strings.CutPrefix(s, "*"); ok && !r.anchored && !strings.ContainsAny(ext, `*?[\`) {
		r.suffix = ext // *.ext: the commonest glob rule, compared as a string
		return r, true, true
	}
	re, err := compileGlob(s, gitignoreSyntax)
	if err != nil {
		return r, false, false
	}
	r.re, r.lit = re, requiredText(re)
	return r, true, true
}

// requiredText returns a text every match of re contains (the longest
// literal requiredLiteral finds, up to an invalid byte's U+FFFD), or "".
func requiredText(re *regexp.Regexp) string {
	parsed, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return ""
	}
	lit, fold, _ := requiredLiteral(parsed.Simplify())
	if fold {
		return ""
	}
	if i := slices.Index(lit, utf8.RuneError); i >= 0 {
		lit = lit[:i]
	}
	return string(lit)
}

// trimUnescapedSpace drops trailing spaces unless escaped with \.
func trimUnescapedSpace(s string) string {
	for strings.HasSuffix(s, " ") && !escaped(s, len(s)-1) {
		s = s[:len(s)-1]
	}
	return s
}

func (f *ignoreFile) add(r ignoreRule) {
	i := len(f.rules)
	f.rules = append(f.rules, r)
	if r.re != nil || r.suffix != "" {
		f.globs = append(f.globs, i)
		return
	}
	m := &f.exact
	if r.anchored {
		m = &f.anchored
	}
	if *m == nil {
		*m = map[string][]int{}
	}
	(*m)[r.exact] = append((*m)[r.exact], i)
}

// match reports whether the rules decide rel (relative to f.dir): decided
// is false when no rule matches, ignored is the last matching rule's say.
func (f *ignoreFile) match(rel string, isDir bool) (ignored, decided bool) {
	base := rel[strings.LastIndexByte(rel, '/')+1:]
	best := max(f.lastExact(f.exact, base, isDir), f.lastExact(f.anchored, rel, isDir))
	for j := len(f.globs) - 1; j >= 0 && f.globs[j] > best; j-- {
		r := &f.rules[f.globs[j]]
		if r.dirOnly && !isDir {
			continue
		}
		subject := base
		if r.anchored {
			subject = rel
		}
		if r.re == nil && strings.HasSuffix(subject, r.suffix) || r.re != nil && strings.Contains(subject, r.lit) && r.re.MatchString(subject) {
			best = f.globs[j]
			break
		}
	}
	if best < 0 {
		return false, false
	}
	return !f.rules[best].negate, true
}

// lastExact returns the index of the last exact rule for key that applies,
// or -1.
func (f *ignoreFile) lastExact(m map[string][]int, key string, isDir bool) int {
	idx := m[key]
	for j := len(idx) - 1; j >= 0; j-- {
		if !f.rules[idx[j]].dirOnly || isDir {
			return idx[j]
		}
	}
	return -1
}

// ignoreChain is the .gitignore files in force in one directory of a
// walk: its own, then its parents' up to the search's root. Rules are
// scoped to their directory: only the chains of the directories below it
// hold them. A chain never changes, so the directories of a walk, listed
// on several goroutines, share their parents' (nil: no file in force).
type ignoreChain struct {
	f      *ignoreFile
	parent *ignoreChain
	rules  int // in force along the chain, at most limits.GitignoreMaxRules
}

// with is c with f, the rules of a directory below c's (parseIgnore
// kept them within room), in force; an empty f records that its
// directory was checked.
func (c *ignoreChain) with(f *ignoreFile) *ignoreChain {
	return &ignoreChain{f: f, parent: c, rules: c.inForce() + len(f.rules)}
}

func (c *ignoreChain) inForce() int {
	if c == nil {
		return 0
	}
	return c.rules
}

// room is how many more rules may be in force.
func (c *ignoreChain) room() int { return limits.GitignoreMaxRules - c.inForce() }

// ignored reports whether the root-relative name, in the directory of c
// or below it, is ignored: the deepest directory with a matching rule
// decides.
func (c *ignoreChain) ignored(name string, isDir bool) bool {
	for ; c != nil; c = c.parent {
		f := c.f
		if len(f.rules) == 0 {
			continue // a directory without a .gitignore
		}
		rel := name
		if f.dir != "." {
			if !under(name, f.dir) {
				continue
			}
			rel = name[len(f.dir)+1:]
		}
		if ig, ok := f.match(rel, isDir); ok {
			return ig
		}
	}
	return false
}

// under reports whether name lies below dir (both root-relative).
func under(name, dir string) bool {
	return len(name) > len(dir) && name[len(dir)] == '/' && strings.HasPrefix(name, dir)
}
