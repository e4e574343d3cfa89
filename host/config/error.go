package config

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	toml "github.com/pelletier/go-toml/v2"
)

// Error is one configuration mistake, located: the file (empty for a
// configuration built from command-line flags), the 1-based line (0 when
// unknown) and the field, written as a dotted path ("actor.assistant.effects",
// "root[0].path") or, for flags, as the flag ("--root").
type Error struct {
	File    string
	Line    int
	Field   string
	Message string
}

// Error formats e as file:line: field: message, leaving out what is unknown.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// Errors returns the located errors err holds (one, or several joined), in
// order. Other errors yield nil.
func Errors(err error) []*Error {
	var out []*Error
	var walk func(error)
	walk = func(err error) {
		var e *Error
		if multi, ok := err.(interface{ Unwrap() []error }); ok {
			for _, x := range multi.Unwrap() {
				walk(x)
			}
		} else if errors.As(err, &e) {
			out = append(out, e)
		}
	}
	walk(err)
	return out
}

// errorList collects errors in the order they are found.
type errorList []error

func (l *errorList) add(e *Error) { *l = append(*l, e) }

func (l errorList) err() error { return errors.Join(l...) }

// decodeErrors converts go-toml's errors (syntax, types, unknown keys) into
// located Errors.
func decodeErrors(file string, err error) error {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) {
		var l errorList
		for i := range strict.Errors {
			e := &strict.Errors[i]
			line, _ := e.Position()
			l.add(&Error{File: file, Line: line, Field: keyPath(e.Key()), Message: "unknown key"})
		}
		return l.err()
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, _ := de.Position()
		return &Error{File: file, Line: line, Field: keyPath(de.Key()), Message: decodeMessage(de.Error())}
	}
	return &Error{File: file, Message: err.Error()}
}

func keyPath(k toml.Key) string { return strings.Join(k, ".") }

var typeMismatch = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^cannot decode TOML (\w+) into .* of type (.+)$`) })

// decodeMessage rewrites go-toml's messages for a person who has not read
// this package's source: no Go type names.
func decodeMessage(msg string) string {
	msg = strings.TrimPrefix(msg, "toml: ")
	if m := typeMismatch().FindStringSubmatch(msg); m != nil {
		want := m[2]
		switch {
		case strings.HasPrefix(want, "int"), strings.HasPrefix(want, "uint"):
			want = "an integer"
		case want == "bool":
			want = "true or false"
		case want == "string", strings.HasSuffix(want, "Effect"):
			want = "a string"
		case strings.HasPrefix(want, "[]"):
			want = "an array"
		case strings.HasPrefix(want, "map["), strings.HasPrefix(want, "config."):
			want = "a table"
		}
		return fmt.Sprintf("got a TOML %s, want %s", m[1], want)
	}
	return msg
}
