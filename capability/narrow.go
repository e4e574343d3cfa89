package capability

import "slices"

// Narrow returns s restricted to within: each capability keeps its effects
// and resources, and its roots become their intersection with within
// (absolute, cleaned directories): a root inside (or equal to) some
// directory of within stays whole; a directory of within inside a root
// takes that root's place. Roots outside every directory of within are
// dropped. Narrow never adds a place s does not reach: every root of the
// result lies within a root of s.
func (s Set) Narrow(within []string) Set {
	out := make(Set, 0, len(s))
	for _, c := range s {
		n := c
		n.Effects = slices.Clone(c.Effects)
		n.Scope.Resources = slices.Clone(c.Scope.Resources)
		n.Scope.Roots = nil
		for _, r := range c.Scope.Roots {
			for _, w := range within {
				var keep string
				switch {
				case Within(w, r):
					keep = r
				case Within(r, w):
					keep = w
				default:
					continue
				}
				if !slices.Contains(n.Scope.Roots, keep) {
					n.Scope.Roots = append(n.Scope.Roots, keep)
				}
			}
		}
		out = append(out, n)
	}
	return out
}
