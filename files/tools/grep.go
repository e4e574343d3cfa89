package tools

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

var grepDescription = fmt.Sprintf(`Searches files under path (a file or directory; default: the first root) for an RE2 regular expression, or plain text with literal; a match lies within one line unless multiline (files up to %s). glob and type (go, py, ts, …) select files; .git, what .gitignore ignores and binary files are skipped. output_mode: content (default; path:line:text, -A/-B/-C context up to %d lines), files_with_matches or count. head_limit (default %d, at most %d) entries from offset; the result gives the next offset. Lines are cut at %d characters.`,
	limits.Bytes(limits.GrepMultilineMaxFileBytes), limits.GrepMaxContextLines,
	limits.GrepMaxMatches, limits.GrepMaxHeadLimit, limits.GrepMaxLineRunes)

// GrepArgs are grep's arguments. The short names are those of ripgrep's
// flags, which models know from Claude Code's Grep tool.
type GrepArgs struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path,omitempty"`
	Glob       string `json:"glob,omitempty"`
	Type       string `json:"type,omitempty"`
	OutputMode string `json:"output_mode,omitempty"`
	Literal    bool   `json:"literal,omitempty"`
	IgnoreCase bool   `json:"-i,omitempty"`
	After      int    `json:"-A,omitempty"`
	Before     int    `json:"-B,omitempty"`
	Context    int    `json:"-C,omitempty"`
	LineNumber *bool  `json:"-n,omitempty" jsonschema:"line numbers (default true)"`
	Multiline  bool   `json:"multiline,omitempty"`
	HeadLimit  int    `json:"head_limit,omitempty"`
	Offset     int    `json:"offset,omitempty"`
}

// GrepResult reports a search; the entries are its text.
type GrepResult struct {
	// Total counts the entries (matching lines, or files with a match,
	// by output mode); Shown of them are in the text from Offset on,
	// and NextOffset is where the next page starts (0: none).
	Total      int `json:"total"`
	Shown      int `json:"shown"`
	NotShown   int `json:"not_shown"`
	Offset     int `json:"offset"`
	NextOffset int `json:"next_offset,omitempty"`
	// FilesMatched counts the files with a match.
	FilesMatched  int `json:"files_matched"`
	FilesSearched int `json:"files_searched"`
	// FilesSkipped counts binary files, files that could not be read and
	// (multiline) files over limits.GrepMultilineMaxFileBytes.
	FilesSkipped int `json:"files_skipped"`
	// LongLines counts lines longer than limits.GrepChunkBytes, searched
	// in pieces of that size (a match across two pieces is not found).
	LongLines   int  `json:"long_lines,omitempty"`
	DirsSkipped int  `json:"skipped_dirs"`
	Stopped     bool `json:"stopped"`
	// IgnoreSkipped counts .gitignore files and rules not honoured (over
	// limits.GitignoreMaxBytes, past limits.GitignoreMaxRules in force,
	// or not valid).
	IgnoreSkipped int `json:"ignore_skipped,omitempty"`

	text string
}

func (r GrepResult) ToolText() string { return r.text }

// grepPlan is a validated grep call.
type grepPlan struct {
	scan      scanOpts
	head      int
	offset    int
	glob      *globFilter
	types     []string
	context   bool
	numbered  bool
	maxOutput int // the bytes of entries collected at most
}

func (x *executor) grep(ctx context.Context, req request, in GrepArgs) (*grepPage, error) {
	plan, err := planGrep(in, req.maxOutput)
	if err != nil {
		return nil, err
	}
	dir := in.Path
	if dir == "" {
		dir = "."
	}
	t, err := x.resolve(req.caps, capability.Search, dir)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	g := newGrepRun(x, plan, t, req.caps.Roots(capability.Search))
	if err := g.run(ctx); err != nil {
		return nil, err
	}
	return g.page(), nil
}

func planGrep(in GrepArgs, maxOutput int64) (*grepPlan, error) {
	if len(in.Pattern) > limits.GrepMaxPatternBytes {
		return nil, fault.LimitExceeded("pattern bytes", limits.GrepMaxPatternBytes, int64(len(in.Pattern)))
	}
	if in.Pattern == "" {
		return nil, fault.New(fault.InvalidInput, "pattern is empty")
	}
	p := &grepPlan{numbered: in.LineNumber == nil || *in.LineNumber}
	var err error
	if p.head, err = bounded("head_limit", in.HeadLimit, limits.GrepMaxMatches, limits.GrepMaxHeadLimit); err != nil {
		return nil, err
	}
	if p.offset, err = bounded("offset", in.Offset, 0, limits.GrepMaxOffset); err != nil {
		return nil, err
	}
	if err := p.setMode(in.OutputMode); err != nil {
		return nil, err
	}
	if err := p.setContext(in); err != nil {
		return nil, err
	}
	if p.glob, err = newGlobFilter("glob", in.Glob); err != nil {
		return nil, err
	}
	if in.Type != "" {
		if p.types = fileTypes[in.Type]; p.types == nil {
			return nil, fault.New(fault.InvalidInput, "type %q is not known; known types: %s", in.Type, strings.Join(fileTypeNames(), ", "))
		}
	}
	m, err := compilePattern(in)
	if err != nil {
		return nil, err
	}
	p.scan.m, p.scan.multiline = m, in.Multiline
	if maxOutput <= 0 || maxOutput > limits.HardMaxOutputBytes {
		maxOutput = limits.HardMaxOutputBytes
	}
	p.maxOutput = int(maxOutput) // the tool leaves room for the summary when it cuts the page

	return p, nil
}

// bounded checks an optional count: 0 means def, negative is invalid,
// past most is a limit.
func bounded(name string, v, def, most int) (int, error) {
	switch {
	case v < 0:
		return 0, fault.New(fault.InvalidInput, "%s must not be negative", name)
	case v > most:
		return 0, fault.LimitExceeded(name, int64(most), int64(v))
	case v == 0:
		return def, nil
	}
	return v, nil
}

func (p *grepPlan) setMode(mode string) error {
	switch mode {
	case "", "content":
		p.scan.mode = modeContent
	case "files_with_matches":
		p.scan.mode = modeFiles
	case "count":
		p.scan.mode = modeCount
	default:
		return fault.New(fault.InvalidInput, "output_mode %q is not one of content, files_with_matches, count", mode)
	}
	return nil
}

func (p *grepPlan) setContext(in GrepArgs) error {
	for _, c := range []struct {
		name string
		v    int
	}{{"-A", in.After}, {"-B", in.Before}, {"-C", in.Context}} {
		if _, err := bounded(c.name, c.v, 0, limits.GrepMaxContextLines); err != nil {
			return err
		}
	}
	p.scan.before, p.scan.after = in.Context, in.Context
	if in.Before > 0 {
		p.scan.before = in.Before
	}
	if in.After > 0 {
		p.scan.after = in.After
	}
	if p.scan.mode != modeContent {
		p.scan.before, p.scan.after = 0, 0
	}
	p.context = p.scan.before > 0 || p.scan.after > 0
	return nil
}

// compilePattern compiles the pattern with its flags and builds its
// matcher.
func compilePattern(in GrepArgs) (*matcher, error) {
	expr := in.Pattern
	if in.Literal {
		expr = regexp.QuoteMeta(expr)
	}
	flags := "m"
	if in.IgnoreCase {
		flags += "i"
	}
	if in.Multiline {
		flags += "s"
	}
	expr = "(?" + flags + ")" + expr
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fault.New(fault.InvalidInput, "pattern is not a valid RE2 regular expression: %s (set literal=true to search for plain text)", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	m := newMatcher(re, expr, in.IgnoreCase)
	if in.Multiline {
		if m.cont, err = continuation(expr); err != nil {
			return nil, fault.Wrap(fault.Internal, err, "the pattern could not be prepared for multiline search")
		}
	}
	return m, nil
}

// fileTypes maps a type name to the file names it covers: "*.ext" by
// suffix, others exactly. The table is a small subset of ripgrep's.
var fileTypes = map[string][]string{
	"c":          {"*.c", "*.h"},
	"cpp":        {"*.cpp", "*.cc", "*.cxx", "*.hpp", "*.hh", "*.hxx", "*.h"},
	"cs":         {"*.cs"},
	"css":        {"*.css", "*.scss", "*.sass", "*.less"},
	"docker":     {"Dockerfile", "*.dockerfile"},
	"go":         {"*.go"},
	"html":       {"*.html", "*.htm"},
	"java":       {"*.java"},
	"js":         {"*.js", "*.mjs", "*.cjs", "*.jsx"},
	"json":       {"*.json", "*.jsonl"},
	"kotlin":     {"*.kt", "*.kts"},
	"make":       {"Makefile", "makefile", "GNUmakefile", "*.mk"},
	"md":         {"*.md", "*.markdown", "*.mdx"},
	"php":        {"*.php"},
	"proto":      {"*.proto"},
	"py":         {"*.py", "*.pyi"},
	"rb":         {"*.rb", "Gemfile", "Rakefile"},
	"rust":       {"*.rs"},
	"sh":         {"*.sh", "*.bash", "*.zsh"},
	"sql":        {"*.sql"},
	"swift":      {"*.swift"},
	"toml":       {"*.toml"},
	"ts":         {"*.ts", "*.tsx", "*.mts", "*.cts"},
	"txt":        {"*.txt"},
	"xml":        {"*.xml"},
	"yaml":       {"*.yaml", "*.yml"},
	"starlark":   {"*.star", "*.bzl", "BUILD", "BUILD.bazel", "WORKSPACE"},
	"typescript": {"*.ts", "*.tsx", "*.mts", "*.cts"},
	"python":     {"*.py", "*.pyi"},
	"markdown":   {"*.md", "*.markdown", "*.mdx"},
}

func fileTypeNames() []string {
	names := make([]string, 0, len(fileTypes))
	for n := range fileTypes {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// typeMatches reports whether base is one of the names of a type.
func typeMatches(types []string, base string) bool {
	for _, t := range types {
		if ext, ok := strings.CutPrefix(t, "*"); ok {
			if strings.HasSuffix(base, ext) {
				return true
			}
		} else if base == t {
			return true
		}
	}
	return false
}
