package testkit

import "strings"

// Repeated returns a clause (a part between ": " separators, at least a
// few words long) that msg says more than once, or "": a failure says its
// cause once.
func Repeated(msg string) string {
	for _, c := range strings.Split(msg, ": ") {
		c = strings.TrimSpace(c)
		if len(c) >= 12 && strings.Count(msg, c) > 1 {
			return c
		}
	}
	return ""
}
