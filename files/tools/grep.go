package tools

import (
	"bytes"
	"context"
	iofs "io/fs"
	"path"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/limits"
)

const grepDescription = `Searches file contents line by line for a regular expression (RE2 syntax, as Go's regexp; ^ and $ match at line boundaries), or for literal text with literal=true; ignore_case=true ignores case. path is a file or directory (default: the first writable root, where relative paths start; a path in any root may be given absolute); glob filters the files searched (e.g. "**/*.go"; a glob without / matches file names). Directories named .git and paths ignored by .gitignore files are skipped, as are binary files and files over 16 MiB. Shows at most max_results matching lines (default and at most 500) as path:line:text, lines cut at 500 characters; the result says how many more matched.
Example: {"pattern": "func (\\w+)Handler", "path": "src", "glob": "**/*.go"}`

// GrepArgs are grep's arguments.
type GrepArgs struct {
	Pattern    string `json:"pattern" jsonschema:"an RE2 regular expression, or literal text when literal is true"`
	Path       string `json:"path,omitempty" jsonschema:"a file or directory to search: relative to the first writable root (the default), or absolute inside any root (list_roots lists them)"`
	Glob       string `json:"glob,omitempty" jsonschema:"only search files whose path matches this glob, e.g. **/*.go"`
	Literal    bool   `json:"literal,omitempty" jsonschema:"match pattern as plain text"`
	IgnoreCase bool   `json:"ignore_case,omitempty" jsonschema:"ignore upper and lower case"`
	MaxResults int    `json:"max_results,omitempty" jsonschema:"most matching lines to show (default and at most 500)"`
}

// GrepResult reports a search; the matching lines are its text.
type GrepResult struct {
	Shown         int `json:"shown"`
	NotShown      int `json:"not_shown"`
	FilesSearched int `json:"files_searched"`
	// FilesSkipped counts binary files, files over limits.GrepMaxFileBytes
	// and files that could not be read.
	FilesSkipped int  `json:"files_skipped"`
	DirsSkipped  int  `json:"skipped_dirs"`
	Stopped      bool `json:"stopped"`

	text string
}

func (r GrepResult) ToolText() string { return r.text }

func (x *executor) grep(ctx context.Context, req request, in GrepArgs) (GrepResult, error) {
	if len(in.Pattern) > limits.GrepMaxPatternBytes {
		return GrepResult{}, fault.LimitExceeded("pattern bytes", limits.GrepMaxPatternBytes, int64(len(in.Pattern)))
	}
	if len(in.Glob) > limits.GrepMaxPatternBytes {
		return GrepResult{}, fault.LimitExceeded("glob bytes", limits.GrepMaxPatternBytes, int64(len(in.Glob)))
	}
	maxResults := in.MaxResults
	switch {
	case maxResults < 0:
		return GrepResult{}, fault.New(fault.InvalidInput, "max_results must not be negative")
	case maxResults == 0:
		maxResults = limits.GrepMaxMatches
	case maxResults > limits.GrepMaxMatches:
		return GrepResult{}, fault.LimitExceeded("max_results", limits.GrepMaxMatches, int64(maxResults))
	}
	if in.Pattern == "" {
		return GrepResult{}, fault.New(fault.InvalidInput, "pattern is empty")
	}
	expr := in.Pattern
	if in.Literal {
		expr = regexp.QuoteMeta(expr)
	}
	flags := "(?m)"
	if in.IgnoreCase {
		flags = "(?mi)"
	}
	re, err := regexp.Compile(flags + expr)
	if err != nil {
		return GrepResult{}, fault.New(fault.InvalidInput, "pattern is not a valid RE2 regular expression: %s (set literal=true to search for plain text)", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	if in.Glob != "" && !doublestar.ValidatePattern(in.Glob) {
		return GrepResult{}, fault.New(fault.InvalidInput, "glob %q is not a valid pattern", in.Glob)
	}
	dir := in.Path
	if dir == "" {
		dir = "."
	}
	caps := req.caps
	t, err := resolve(caps, capability.Search, dir)
	if err != nil {
		return GrepResult{}, err
	}
	s := &search{
		x: x, ctx: ctx, re: re, root: t.root, roots: caps.Roots(capability.Search), glob: in.Glob,
		max: maxResults, w: walker{base: t.name},
	}
	if err := s.loadParentIgnores(t.name); err != nil {
		return GrepResult{}, err
	}
	if err := x.provider.Walk(ctx, t.root, t.name, s.visit); err != nil {
		return GrepResult{}, err
	}
	s.res.Stopped = s.w.stopped
	s.out.WriteString(summary(s.res.Shown, s.res.NotShown, "matching lines", s.res.DirsSkipped, s.res.Stopped))
	if s.res.FilesSkipped > 0 {
		s.out.WriteString("(")
		s.out.WriteString(strconv.Itoa(s.res.FilesSkipped))
		s.out.WriteString(" files not searched: binary, over 16 MiB, or unreadable)\n")
	}
	if s.ignoreTooBig > 0 {
		s.out.WriteString("(")
		s.out.WriteString(strconv.Itoa(s.ignoreTooBig))
		s.out.WriteString(" .gitignore files over 1 MiB were not honoured)\n")
	}
	s.res.text = s.out.String()
	return s.res, nil
}

// search is one grep run.
type search struct {
	x            *executor
	ctx          context.Context
	re           *regexp.Regexp
	root         string
	roots        []string
	glob         string
	max          int
	w            walker
	ignore       []gitignore.Pattern
	ignoreTooBig int
	res          GrepResult
	out          strings.Builder
}

// loadParentIgnores reads the .gitignore files of the directories above
// the search base, inside the root, so a search of a subdirectory honours
// them too.
func (s *search) loadParentIgnores(base string) error {
	if base == "." {
		return nil
	}
	parts := strings.Split(base, "/")
	for i := range parts {
		if err := s.loadIgnore(path.Join(parts[:i]...)); err != nil {
			return err
		}
	}
	return nil
}

// loadIgnore reads dir/.gitignore, if there is one.
func (s *search) loadIgnore(dir string) error {
	if dir == "" {
		dir = "."
	}
	data, _, err := s.x.provider.ReadAll(s.ctx, s.root, path.Join(dir, ".gitignore"), limits.GitignoreMaxBytes)
	switch fault.CodeOf(err) {
	case "":
	case fault.Limit:
		s.ignoreTooBig++
		return nil
	case fault.Unavailable:
		return err
	default:
		return nil // no .gitignore, or not a regular file: nothing to honour
	}
	var domain []string
	if dir != "." {
		domain = strings.Split(dir, "/")
	}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s.ignore = append(s.ignore, gitignore.ParsePattern(line, domain))
	}
	return nil
}

func (s *search) ignored(name string, isDir bool) bool {
	if len(s.ignore) == 0 || name == "." {
		return false
	}
	return gitignore.NewMatcher(s.ignore).Match(strings.Split(name, "/"), isDir)
}

func (s *search) visit(info files.Info) error {
	rel, depth, skip := s.w.visit(info)
	if skip != nil {
		return skip
	}
	if s.ignored(info.Name, info.IsDir()) {
		if info.IsDir() {
			return iofs.SkipDir
		}
		return nil
	}
	if info.IsDir() {
		if depth >= limits.WalkMaxDepth {
			s.res.DirsSkipped++
			return iofs.SkipDir
		}
		return s.loadIgnore(info.Name)
	}
	if !info.IsRegular() {
		return nil
	}
	if s.glob != "" && rel != "" {
		subject := rel
		if !strings.Contains(s.glob, "/") {
			subject = path.Base(rel)
		}
		if ok, _ := doublestar.Match(s.glob, subject); !ok {
			return nil
		}
	}
	if info.Size > limits.GrepMaxFileBytes {
		s.res.FilesSkipped++
		return nil
	}
	data, _, err := s.x.provider.ReadAll(s.ctx, s.root, info.Name, limits.GrepMaxFileBytes)
	if err != nil {
		if c := fault.CodeOf(err); c == fault.Unavailable || s.ctx.Err() != nil {
			return err
		}
		s.res.FilesSkipped++ // changed or vanished since it was listed
		return nil
	}
	if bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
		s.res.FilesSkipped++
		return nil
	}
	s.res.FilesSearched++
	s.file(display(s.roots, s.root, info.Name), data)
	return nil
}

// file reports each line of data that has a match, once.
func (s *search) file(name string, data []byte) {
	line, lineAt := 1, 0
	for pos := 0; pos <= len(data); {
		loc := s.re.FindIndex(data[pos:])
		if loc == nil {
			return
		}
		at := pos + loc[0]
		start := bytes.LastIndexByte(data[:at], '\n') + 1
		end := bytes.IndexByte(data[at:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += at
		}
		line += bytes.Count(data[lineAt:start], []byte{'\n'})
		lineAt = start
		if s.res.Shown < s.max {
			s.res.Shown++
			s.writeMatch(name, line, data[start:end])
		} else {
			s.res.NotShown++
		}
		pos = end + 1
	}
}

func (s *search) writeMatch(name string, line int, text []byte) {
	text = bytes.TrimSuffix(text, []byte{'\r'})
	s.out.WriteString(name)
	s.out.WriteByte(':')
	s.out.WriteString(strconv.Itoa(line))
	s.out.WriteByte(':')
	cut := false
	if i := runeIndex(text, limits.GrepMaxLineRunes); i >= 0 {
		text, cut = text[:i], true
	}
	if utf8.Valid(text) {
		s.out.Write(text)
	} else {
		s.out.WriteString(strings.ToValidUTF8(string(text), "\uFFFD"))
	}
	if cut {
		s.out.WriteString(" … [cut]")
	}
	s.out.WriteByte('\n')
}
