package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLink matches a Markdown link's target; mdCode matches code, fenced or
// inline, where brackets and parentheses are not links.
var (
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdCode = regexp.MustCompile("(?s)```.*?```|`[^`\n]*`")
)

// TestDocLinks fails on a link in README.md or docs/ that leaves the
// repository, or names a file that is not in it. Web addresses are left
// alone: they are examples or references, not files.
func TestDocLinks(t *testing.T) {
	root := repoRoot(t)
	pages, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	pages = append(pages, filepath.Join(root, "README.md"))
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, page)
		for _, m := range mdLink.FindAllStringSubmatch(mdCode.ReplaceAllString(string(data), ""), -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			abs := filepath.Join(filepath.Dir(page), target)
			if r, err := filepath.Rel(root, abs); err != nil || r == ".." || strings.HasPrefix(r, "../") {
				t.Errorf("%s links to %s, outside the repository", name, m[1])
			} else if _, err := os.Stat(abs); err != nil {
				t.Errorf("%s links to %s, which is not in the repository", name, m[1])
			}
		}
	}
}
