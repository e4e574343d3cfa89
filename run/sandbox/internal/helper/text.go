package helper

import "errors"

// The few path and string operations the helper needs, so that it
// imports neither strings, path/filepath nor fmt (see the package
// comment). The paths it is given are clean and absolute (Run cleans
// them).

// wrap is err with context, as text: the parent reads it from the report.
func wrap(context string, err error) error {
	return errors.New(context + ": " + err.Error())
}

// join is dir/name for a clean dir and a single name.
func join(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// parent is the directory holding clean absolute path p ("/" for "/").
func parent(p string) string {
	i := lastSlash(p)
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

func lastSlash(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return i
		}
	}
	return -1
}

func countSlashes(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			n++
		}
	}
	return n
}

func hasPrefix(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }

// within reports whether p is root or lies under it.
func within(root, p string) bool {
	if root == "/" {
		return hasPrefix(p, "/")
	}
	return p == root || hasPrefix(p, root+"/")
}

// splitList splits a PATH value at its colons.
func splitList(path string) []string {
	var out []string
	for start, i := 0, 0; i <= len(path); i++ {
		if i == len(path) || path[i] == ':' {
			out = append(out, path[start:i])
			start = i + 1
		}
	}
	return out
}

// oneLine replaces the newlines of s with spaces.
func oneLine(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '\n' {
			b[i] = ' '
		}
	}
	return string(b)
}
