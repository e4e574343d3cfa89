package config

import (
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// locator maps the dotted path of every key, table and array element of a
// document to the line it starts on, so semantic errors found after
// decoding can name a line. Paths are written as errors name fields:
// "actor.assistant.effects", "root[1].path", "actor.assistant.effects[2]"
// (the third element). go-toml's decoder reports positions only for syntax
// and type errors; its unstable parser has the positions, so this walks its
// AST once.
type locator struct {
	lines map[string]int
	// nl holds the offset of every newline, for offset → line.
	nl []int
	// arrays is the current element path of each array of tables, by its
	// unindexed path: "[[a.b]]" belongs to the latest "[[a]]".
	arrays map[string]string
	// counts numbers the elements of each array of tables.
	counts map[string]int
}

// locate indexes data. A document the parser rejects yields the positions
// seen before the error; the decoder reports the error itself.
func locate(data []byte) *locator {
	l := &locator{lines: map[string]int{}, arrays: map[string]string{}, counts: map[string]int{}}
	for i, c := range data {
		if c == '\n' {
			l.nl = append(l.nl, i)
		}
	}
	var p unstable.Parser
	p.Reset(data)
	prefix := ""
	for p.NextExpression() {
		n := p.Expression()
		switch n.Kind {
		case unstable.Table:
			parts, line := l.keyParts(n.Key())
			prefix = l.qualify(parts)
			l.add(prefix, line)
		case unstable.ArrayTable:
			parts, line := l.keyParts(n.Key())
			parent := l.qualify(parts[:len(parts)-1])
			name := join(parent, parts[len(parts)-1])
			i := l.counts[name]
			l.counts[name] = i + 1
			l.add(name, line)
			prefix = name + "[" + strconv.Itoa(i) + "]"
			l.arrays[strings.Join(parts, ".")] = prefix
			l.add(prefix, line)
		case unstable.KeyValue:
			l.keyValue(prefix, n)
		}
	}
	return l
}

// line returns the line of path, or of its nearest enclosing table or
// array, or 0 when nothing of it is in the document.
func (l *locator) line(path string) int {
	for path != "" {
		if n, ok := l.lines[path]; ok {
			return n
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return 0
		}
		path = path[:i]
	}
	return 0
}

func (l *locator) add(path string, line int) {
	if _, ok := l.lines[path]; !ok {
		l.lines[path] = line
	}
}

// lineAt converts a byte offset to a 1-based line.
func (l *locator) lineAt(offset int) int {
	return sort.SearchInts(l.nl, offset) + 1
}

func (l *locator) nodeLine(n *unstable.Node, fallback int) int {
	if n.Raw.Length == 0 {
		return fallback
	}
	return l.lineAt(int(n.Raw.Offset))
}

// keyParts returns the parts of a key and the line of its first part.
func (l *locator) keyParts(it unstable.Iterator) ([]string, int) {
	var parts []string
	line := 0
	for it.Next() {
		k := it.Node()
		if line == 0 {
			line = l.nodeLine(k, 0)
		}
		parts = append(parts, string(k.Data))
	}
	return parts, line
}

// qualify writes a header's key as a path, indexing every prefix that is
// an array of tables with its current element.
func (l *locator) qualify(parts []string) string {
	path := ""
	for i, p := range parts {
		path = join(path, p)
		if el, ok := l.arrays[strings.Join(parts[:i+1], ".")]; ok {
			path = el
		}
	}
	return path
}

func (l *locator) keyValue(prefix string, n *unstable.Node) {
	parts, line := l.keyParts(n.Key())
	path := prefix
	for _, p := range parts {
		path = join(path, p)
		l.add(path, line)
	}
	l.value(path, n.Value(), line)
}

func (l *locator) value(path string, v *unstable.Node, line int) {
	switch v.Kind {
	case unstable.Array:
		i := 0
		for it := v.Children(); it.Next(); {
			el := it.Node()
			if el.Kind == unstable.Comment {
				continue
			}
			elPath := path + "[" + strconv.Itoa(i) + "]"
			elLine := l.nodeLine(el, line)
			l.add(elPath, elLine)
			l.value(elPath, el, elLine)
			i++
		}
	case unstable.InlineTable:
		for it := v.Children(); it.Next(); {
			if kv := it.Node(); kv.Kind == unstable.KeyValue {
				l.keyValue(path, kv)
			}
		}
	}
}

func join(prefix, part string) string {
	if prefix == "" {
		return part
	}
	return prefix + "." + part
}
