package e2e

// The red-team suite: a hostile model drives `capkit serve` over MCP with
// every effect granted on one writable and one read-only root, plus a
// catalog and run_script, and throws path tricks at every argument that
// names a file, directory, archive, archive member, journal or staging
// directory. Whatever happens, nothing outside the granted roots is read
// or changed, the read-only root is never changed, no output carries host
// paths or system error text, every call ends within its deadline, and the
// audit log holds only tool names, outcomes and byte counts.

import (
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/limits"
)

// secretMarker is in every file outside the roots (and in the catalog file
// the model is not told about): it must never reach the model.
const secretMarker = "REDTEAM_SECRET_7c1e"

// osErrorText matches system error text that must never reach an
// untrusted caller: errno strings, syscall names and os.Root's wording.
var osErrorText = regexp.MustCompile(`(?i)no such file or directory|operation not permitted|openat|fstatat|unlinkat|renameat|mkdirat|readlinkat|linkat|lstat |statx|too many levels of symbolic links|path escapes from parent|: file exists|bad file descriptor|input/output error|file name too long|not a directory:|invalid argument([^s]|$)|errno|syscall|\S+: permission denied|goroutine \d|panic:`)

// world is the hostile file tree around the roots.
type world struct {
	dir, rw, ro, outside, evil string
	audit, detail              string
	goodZip                    string // a valid archive in rw, member a.txt
	goodSum                    string // SHA-256 of a.txt
}

func mkfile(t testing.TB, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mklink(t testing.TB, target, p string) {
	t.Helper()
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

func mkzip(t testing.TB, p string, members map[string]string, mod func(*zip.FileHeader)) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(members)) {
		h := &zip.FileHeader{Name: name, Method: zip.Deflate}
		if mod != nil {
			mod(h)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(members[name]))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	mkfile(t, p, buf.String())
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func newWorld(t testing.TB) *world {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := &world{dir: dir, rw: filepath.Join(dir, "rw"), ro: filepath.Join(dir, "ro"),
		outside: filepath.Join(dir, "outside"), evil: filepath.Join(dir, "rw_evil"),
		audit: filepath.Join(dir, "logs", "audit.jsonl"), detail: filepath.Join(dir, "logs", "detail.log")}
	files := map[string]string{
		"rw/notes.txt":       "one\ntwo\nthree\n",
		"rw/data.json":       `{"a": [1, 2, {"b": null}]}`,
		"rw/data.csv":        "name,n\nx,1\ny,2\n",
		"rw/page.html":       "<html><body><p>hello page</p></body></html>",
		"rw/feed.xml":        `<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><item><title>i</title><link>http://example.com/i</link></item></channel></rss>`,
		"rw/sub/inner.txt":   "inner\n",
		"rw/stage/f.txt":     "staged\n",
		"ro/ref.txt":         "reference\n",
		"ro/sub/deep.txt":    "deep\n",
		"ro/stage/f.txt":     "ro staged\n",
		"outside/secret.md":  secretMarker + "\n",
		"outside/hard.txt":   "hard link target\n",
		"outside/sub/x.txt":  secretMarker + " sub\n",
		"outside/stage/f.md": secretMarker + " stage\n",
		"rw_evil/secret.txt": secretMarker + " prefix sibling\n",
		"ro_evil/secret.txt": secretMarker + " prefix sibling\n",
		"cat/a.txt":          "catalog entry a\n",
		"cat/hidden.txt":     secretMarker + " not in the catalog\n",
		"logs/.keep":         "",
		"rw/jdir/.keep":      "",
	}
	for p, s := range files {
		mkfile(t, filepath.Join(dir, p), s)
	}
	// Symlinks out of the roots, chains, dangling links, links to the
	// read-only root, devices and /proc.
	links := map[string]string{
		"rw/link_abs":       filepath.Join(w.outside, "secret.md"),
		"rw/link_rel":       "../outside/secret.md",
		"rw/chain1":         "chain2",
		"rw/chain2":         "../outside/secret.md",
		"rw/dangling":       "../outside/created-through-link.txt",
		"rw/linkdir":        "../outside",
		"rw/link_evil":      "../rw_evil/secret.txt",
		"rw/link_ro":        "../ro/ref.txt",
		"rw/link_rodir":     "../ro",
		"rw/link_zero":      "/dev/zero",
		"rw/link_environ":   "/proc/self/environ",
		"rw/link_procroot":  "/proc/self/root",
		"rw/link_self":      "link_self",
		"rw/sub/up":         "../../outside",
		"ro/ro_link_out":    "../outside/secret.md",
		"ro/ro_linkdir":     "../outside",
		"rw/jdir/bad.jsonl": "../../outside/secret.md",
	}
	for p, target := range links {
		mklink(t, target, filepath.Join(dir, p))
	}
	if err := syscall.Mkfifo(filepath.Join(w.rw, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(w.ro, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Hard links to an outside file, as write targets: a plain file and
	// a journal in a private directory.
	if err := os.Link(filepath.Join(w.outside, "hard.txt"), filepath.Join(w.rw, "hard.txt")); err != nil {
		t.Fatal(err)
	}
	mkfile(t, filepath.Join(w.outside, "hl.jsonl"), "")
	if err := os.Chmod(filepath.Join(w.rw, "jdir"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(w.outside, "hl.jsonl"), filepath.Join(w.rw, "jdir", "hl.jsonl")); err != nil {
		t.Fatal(err)
	}
	// Archives: a good one, and hostile ones whose members try to leave
	// the destination.
	w.goodZip = filepath.Join(w.rw, "good.zip")
	mkzip(t, w.goodZip, map[string]string{"a.txt": "member a\n"}, nil)
	w.goodSum = sum("member a\n")
	mkzip(t, filepath.Join(w.ro, "ro.zip"), map[string]string{"a.txt": "member a\n"}, nil)
	return w
}

// config grants every effect on rw (writable) and ro (read-only), the
// catalog "notes" and run_script, with an audit log and a detail log.
func (w *world) config(t testing.TB, extra string) string {
	t.Helper()
	cfg := filepath.Join(w.dir, "capkit.toml")
	s := fmt.Sprintf(`audit_log = %q
log = %q
[[root]]
path = "rw"
[[root]]
path = "ro"
read_only = true
[actor.assistant]
effects = ["read_file", "write_file", "edit_file", "move_file", "list", "search", "parse", "tool_search",
  "state_write", "archive_read", "archive_write", "journal_read", "journal_write", "catalog_read", "run_script",
  "index_read", "index_write"]
resources = ["notes"]
[catalog.notes]
[catalog.notes.entries]
"a" = "cat/a.txt"
[script]
enabled = true
max_steps = 200000
timeout = "10s"
[tool.read_file]
max_output_bytes = 4096
[tool.write_file]
max_input_bytes = 2048
`, w.audit, w.detail) + extra
	if err := os.WriteFile(cfg, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// outcome is one probe's result.
type outcome struct {
	text string // everything the caller received, content and structured
	code string // fault code, "" on success
}

// probe calls a tool as the hostile model and checks what comes back:
// within the deadline, no marker, no host path it did not send, no system
// error text. A protocol error is reported as code "protocol".
func probe(t testing.TB, cs *mcp.ClientSession, w *world, tool string, args map[string]any) outcome {
	t.Helper()
	return probeOwn(t, cs, w, tool, args, argStrings(args), false)
}

// probeOwn is probe for a caller whose own strings (those it may have
// written into files earlier, and so may read back) are own. With
// splices, a splice of its own is no leak either: such a caller's files
// hold its strings as its edits left them, and an edit of one of its
// paths makes a path nobody has (see spliced).
func probeOwn(t testing.TB, cs *mcp.ClientSession, w *world, tool string, args map[string]any, own []string, splices bool) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if ctx.Err() != nil {
		t.Errorf("%s %.200v: no answer within the deadline (hang)", tool, args)
		return outcome{code: "hang"}
	}
	var o outcome
	if err != nil {
		o = outcome{text: err.Error(), code: "protocol"}
	} else {
		b, _ := json.Marshal(res)
		o.text = string(b)
		if res.IsError {
			m, _ := res.Meta["capkit/fault"].(map[string]any)
			o.code, _ = m["code"].(string)
			if o.code == "" {
				t.Errorf("%s %v: isError result without a fault code: %s", tool, args, o.text)
			}
		}
	}
	if strings.Contains(o.text, secretMarker) {
		t.Errorf("%s %v: content from outside the roots leaked: %.300s", tool, args, o.text)
	}
	// Host paths: anything under the test directory the caller did not
	// itself send (echoing the caller's own path is no leak).
	// The granted roots are no leak: the model is told them.
	if leak := hostPathLeak(o.text, w.dir, append(own, w.rw, w.ro), splices); leak != "" {
		t.Errorf("%s %.200v: host path %q leaked: %.400s", tool, args, leak, o.text)
	}
	if o.code != "" {
		if m := osErrorText.FindString(o.text); m != "" {
			t.Errorf("%s %v: system error text %q reached the caller: %.400s", tool, args, m, o.text)
		}
	}
	return o
}

// hostPathLeak returns a path under dir that text names and no argument
// contains (a caller's own path echoed back is no leak), or "". A path
// ends at a quote, space or punctuation that cannot end a root's name.
// With splices, a splice of the arguments (spliced) is no leak.
func hostPathLeak(text, dir string, args []string, splices bool) string {
	// Match and snippet markers a tool puts around what it found are not
	// part of a path.
	text = strings.NewReplacer("⟦", "", "⟧", "", "«", "", "»", "").Replace(text)
	for i := 0; ; {
		j := strings.Index(text[i:], dir)
		if j < 0 {
			return ""
		}
		start := i + j
		end := start + len(dir)
		for end < len(text) && !strings.ContainsRune("\"' :;,()}]\n\\\t`", rune(text[end])) {
			end++
		}
		token := text[start:end]
		owned := func(s string) bool {
			return slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, s) })
		}
		if !owned(token) && !(splices && spliced(token, owned)) {
			return token
		}
		i = end
	}
}

// spliced reports whether token is a path the caller made from its own:
// it names nothing on the host, in a directory the caller's own strings
// name, and is no staging name (one of those is gone once written).
func spliced(token string, owned func(string) bool) bool {
	p := strings.TrimRight(token, ".…")
	if strings.Contains(p, ".capkit-tmp-") {
		return false
	}
	if _, err := os.Lstat(p); err == nil {
		return false
	}
	return owned(filepath.Dir(p) + "/")
}

func argStrings(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case map[string]any:
		var out []string
		for k, x := range v {
			out = append(out, k)
			out = append(out, argStrings(x)...)
		}
		return out
	case []any:
		var out []string
		for _, x := range v {
			out = append(out, argStrings(x)...)
		}
		return out
	case []string:
		return v
	}
	return nil
}

// slot builds a tool's arguments with the hostile path p in one argument.
type slot struct {
	tool  string
	name  string // which argument: for messages
	write bool   // the slot names something the call would create or change
	args  func(p string) map[string]any
}

func (w *world) slots() []slot {
	one := func(tool, arg string, write bool, fixed map[string]any) slot {
		return slot{tool: tool, name: arg, write: write, args: func(p string) map[string]any {
			m := maps.Clone(fixed)
			if m == nil {
				m = map[string]any{}
			}
			m[arg] = p
			return m
		}}
	}
	expect := map[string]any{"a.txt": w.goodSum}
	return []slot{
		one("read_file", "path", false, nil),
		one("write_file", "path", true, map[string]any{"content": "pwned"}),
		one("edit_file", "path", true, map[string]any{"old_string": "e", "new_string": "pwned"}),
		one("list_dir", "path", false, nil),
		one("glob", "path", false, map[string]any{"pattern": "**"}),
		one("grep", "path", false, map[string]any{"pattern": "."}),
		one("move_file", "source", true, map[string]any{"destination": "moved-away"}),
		one("move_file", "destination", true, map[string]any{"source": "sub/inner.txt"}),
		one("text_validate", "path", false, nil),
		one("json_validate", "path", false, nil),
		one("json_canonical", "path", false, nil),
		one("csv_scan", "path", false, nil),
		one("html_extract", "path", false, map[string]any{"select": "text"}),
		one("feed_parse", "path", false, map[string]any{"url": "http://example.com/", "limit": 5}),
		one("sniff", "path", false, map[string]any{"expect": "json"}),
		one("file_digest", "path", false, nil),
		one("file_copy", "source", false, map[string]any{"destination": "copy-out"}),
		one("file_copy", "destination", true, map[string]any{"source": "notes.txt"}),
		one("tree_stamp", "path", false, nil),
		one("tree_list", "path", false, nil),
		one("state_replace", "path", true, map[string]any{"content": "pwned"}),
		one("dir_publish", "staging", true, map[string]any{"destination": "published"}),
		one("dir_publish", "destination", true, map[string]any{"staging": "stage"}),
		one("zip_create", "archive", true, map[string]any{"files": []any{"notes.txt"}}),
		one("zip_create", "dir", false, map[string]any{"archive": "zc.zip", "files": []any{"secret.md"}}),
		{tool: "zip_create", name: "files", args: func(p string) map[string]any {
			return map[string]any{"archive": "zf.zip", "files": []any{p}}
		}},
		one("zip_extract", "archive", false, map[string]any{"destination": "zx", "expect": expect}),
		one("zip_extract", "destination", true, map[string]any{"archive": "good.zip", "expect": expect}),
		one("zip_list", "archive", false, nil),
		one("zip_verify", "archive", false, map[string]any{"expect": expect}),
		one("journal_append", "dir", true, map[string]any{"name": "j", "event": map[string]any{"x": 1}}),
		// A journal name is a name, not a path: names such as "link_abs"
		// are valid and make link_abs.jsonl (checked below for names of
		// existing links).
		one("journal_append", "name", false, map[string]any{"dir": "jdir", "event": map[string]any{"x": 1}}),
		one("journal_verify", "dir", false, map[string]any{"name": "hl"}),
		one("journal_read", "dir", false, map[string]any{"name": "hl"}),
		one("notes", "id", false, nil),
		one("passages_find", "path", false, map[string]any{"query": "e"}),
		one("lexindex_update", "index", true, map[string]any{"mutations": []any{map[string]any{"ref": "r", "text": "pwned"}}}),
		one("lexindex_scope", "index", true, map[string]any{"name": "s", "refs": []any{"r"}}),
		one("lexindex_status", "index", false, nil),
		one("lexindex_search", "index", false, map[string]any{"query": "e"}),
		{tool: "lexindex_update", name: "mutations[0].path", args: func(p string) map[string]any {
			return map[string]any{"index": "ixp.db", "mutations": []any{map[string]any{"ref": "r", "path": p}}}
		}},
	}
}

// hostilePaths are refused by every slot: escapes by every route.
func (w *world) hostilePaths() []string {
	long := strings.Repeat("a/", 2100) + "x"
	return []string{
		"../outside/secret.md",
		"sub/../../outside/secret.md",
		"./../outside",
		"..",
		filepath.Join(w.outside, "secret.md"),
		w.outside,
		filepath.Join(w.rw, "..", "outside", "secret.md"),
		w.evil,
		filepath.Join(w.evil, "secret.txt"),
		w.dir + "/ro_evil/secret.txt",
		w.dir,
		"/",
		"/etc/passwd",
		"/proc/self/environ",
		"/proc/self/root" + w.outside + "/secret.md",
		"/dev/zero",
		"link_abs",
		"link_rel",
		"chain1",
		"linkdir",
		"linkdir/secret.md",
		"linkdir/sub",
		"sub/up/secret.md",
		"link_evil",
		"link_zero",
		"link_environ",
		"link_procroot" + w.outside + "/secret.md",
		"link_self",
		"fifo",
		"fifo/x",
		filepath.Join(w.ro, "fifo"),
		filepath.Join(w.ro, "ro_link_out"),
		filepath.Join(w.ro, "ro_linkdir", "secret.md"),
		"a\x00b",
		"notes.txt\x00.md",
		"~/secret.md",
		"~",
		"notes.txt ",
		"\"notes.txt\"",
		"'notes.txt'",
		"notes.txt\n",
		long,
	}
}

// roWritePaths are writes into the read-only root, directly and through
// links in the writable one.
func (w *world) roWritePaths() []string {
	return []string{
		filepath.Join(w.ro, "new.txt"),
		filepath.Join(w.ro, "ref.txt"),
		filepath.Join(w.ro, "sub", "deep.txt"),
		filepath.Join(w.ro, "stage"),
		filepath.Join(w.ro, "newdir"),
		w.ro,
		"link_ro",
		"link_rodir/new.txt",
		"link_rodir/ref.txt",
		"dangling",
		// The writable root itself is never replaced, moved or removed.
		".",
		"./",
		"sub/..",
		w.rw,
		w.rw + "/",
	}
}

// startRedteam serves a config over stdio and returns the client.
func startRedteam(t *testing.T, w *world, extra string) *mcp.ClientSession {
	t.Helper()
	return startRedteamAs(t, w, "assistant", extra)
}

func startRedteamAs(t *testing.T, w *world, actor, extra string) *mcp.ClientSession {
	t.Helper()
	cfg := w.config(t, extra)
	cmd := exec.Command(capkit, "serve", "--config", cfg, "--actor", actor)
	cmd.Stderr = &testWriter{t: t}
	c := connect(t, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second})
	return c.cs
}

// TestRedTeamPaths sends every hostile path through every path argument of
// every tool.
func TestRedTeamPaths(t *testing.T) {
	w := newWorld(t)
	guarded := []string{w.outside, w.ro, w.evil, filepath.Join(w.dir, "ro_evil"), filepath.Join(w.dir, "cat")}
	before := map[string]string{}
	for _, d := range guarded {
		before[d] = testkit.TreeDigest(t, d)
	}
	cs := startRedteam(t, w, "")

	codes := map[string]int{}
	for _, s := range w.slots() {
		paths := w.hostilePaths()
		if s.write {
			paths = append(paths, w.roWritePaths()...)
		}
		for _, p := range paths {
			o := probe(t, cs, w, s.tool, s.args(p))
			codes[o.code]++
			if s.write {
				checkGuarded(t, guarded, before, s.tool+" "+s.name+"="+p)
			}
			if o.code == "" && !allowedSuccess(s, p, o) {
				t.Errorf("%s %s=%.80q: succeeded: %.300s", s.tool, s.name, p, o.text)
			}
			if o.code == "io" || o.code == "internal" || o.code == "protocol" {
				t.Errorf("%s %s=%.80q: untyped failure %s: %.300s", s.tool, s.name, p, o.code, o.text)
			}
		}
		// Odd names that are legitimate file names: they may succeed, but
		// only inside the root.
		for _, p := range []string{"%2e%2e/outside/secret.md", "%2e%2e", "..%2f..%2foutside", "...", "notes.txt/.", "sub/./inner.txt"} {
			probe(t, cs, w, s.tool, s.args(p))
		}
	}
	// Hard links to an outside file: writing through the name may
	// replace the name, never the outside file's content.
	for _, s := range w.slots() {
		if s.write {
			probe(t, cs, w, s.tool, s.args("hard.txt"))
			checkGuarded(t, guarded, before, s.tool+" "+s.name+"=hard.txt")
		}
	}
	// Read it first, so edits and writes are allowed by the session's
	// observations: they still must not write through the link.
	probe(t, cs, w, "read_file", map[string]any{"path": "hard.txt"})
	probe(t, cs, w, "edit_file", map[string]any{"path": "hard.txt", "old_string": "target", "new_string": "pwned"})
	checkGuarded(t, guarded, before, "edit_file hard.txt after reading")
	probe(t, cs, w, "read_file", map[string]any{"path": "hard.txt"})
	probe(t, cs, w, "write_file", map[string]any{"path": "hard.txt", "content": "pwned"})
	checkGuarded(t, guarded, before, "write_file hard.txt after reading")
	for _, name := range []string{"hl", "bad"} {
		probe(t, cs, w, "journal_append", map[string]any{"dir": "jdir", "name": name, "event": map[string]any{"x": 1}})
		checkGuarded(t, guarded, before, "journal_append jdir/"+name)
	}
	t.Logf("fault codes: %v", codes)
	checkGuarded(t, guarded, before, "the whole run")
	checkAudit(t, w)
}

// checkGuarded fails the test when a guarded tree changed, once per tree.
func checkGuarded(t *testing.T, guarded []string, before map[string]string, after string) {
	t.Helper()
	for _, d := range guarded {
		if got := testkit.TreeDigest(t, d); got != before[d] {
			t.Errorf("%s changed after %.100q", d, after)
			before[d] = got
		}
	}
}

// allowedSuccess tells the hostile inputs a tool may accept without
// harm: tree_stamp describes a symlink or FIFO itself (never followed,
// never opened); a journal name such as "link_abs" names link_abs.jsonl,
// not the link.
func allowedSuccess(s slot, p string, o outcome) bool {
	switch {
	case s.tool == "tree_stamp":
		return stampsLinkItself(o.text)
	case s.tool == "journal_append" && s.name == "name":
		return true
	}
	return false
}

// stampsLinkItself reports whether a tree_stamp result describes a
// symlink or FIFO itself (never followed, never opened).
func stampsLinkItself(text string) bool {
	return strings.Contains(text, `"text":"symlink `) || strings.Contains(text, `"text":"fifo `)
}

var shapePattern = regexp.MustCompile(`^((string|array|object|undeclared):[0-9]+|number|boolean|null)$`)

// checkAudit reads the audit log: one JSON object per call with only the
// allowed keys, no marker, no path, no argument text.
func checkAudit(t testing.TB, w *world) {
	t.Helper()
	b, err := os.ReadFile(w.audit)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		t.Fatal("audit log is empty")
	}
	allowed := []string{"time", "level", "msg", "actor", "session", "request", "tool", "outcome", "policy", "calls_left",
		"in_bytes", "out_bytes", "duration_us", "shape"}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var rec struct {
			Event map[string]any `json:"event"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Event == nil {
			t.Fatalf("audit line is not a record: %q", line)
		}
		for k, v := range rec.Event {
			if !slices.Contains(allowed, k) {
				t.Errorf("audit line has key %q: %q", k, line)
			}
			// The shape names declared arguments and says their type and
			// length, never a value.
			if shape, ok := v.(map[string]any); ok && k == "shape" {
				for name, s := range shape {
					if str, _ := s.(string); !shapePattern.MatchString(str) {
						t.Errorf("shape member %s is %q: %q", name, s, line)
					}
				}
			}
		}
		// Tool names are registered names (never a path); no argument,
		// path or content appears anywhere.
		for _, bad := range []string{secretMarker, w.dir, "outside", "notes.txt", "pwned", "hidden", "/", "\\"} {
			if strings.Contains(line, bad) {
				t.Errorf("audit line carries %q: %q", bad, line)
			}
		}
	}
}

// TestRedTeamArchiveMembers extracts archives whose members try to leave
// the destination or are not plain files.
func TestRedTeamArchiveMembers(t *testing.T) {
	w := newWorld(t)
	guarded := []string{w.outside, w.ro}
	before := map[string]string{w.outside: testkit.TreeDigest(t, w.outside), w.ro: testkit.TreeDigest(t, w.ro)}
	const body = "evil member\n"
	symlink := func(h *zip.FileHeader) { h.SetMode(fs.ModeSymlink | 0o777) }
	fifo := func(h *zip.FileHeader) { h.SetMode(fs.ModeNamedPipe | 0o644) }
	cases := []struct {
		name    string
		members map[string]string
		mod     func(*zip.FileHeader)
	}{
		{"dotdot", map[string]string{"../outside-evil.txt": body}, nil},
		{"deep dotdot", map[string]string{"a/../../outside-evil.txt": body}, nil},
		{"absolute", map[string]string{"/tmp/abs-evil.txt": body}, nil},
		{"backslash", map[string]string{"..\\outside-evil.txt": body}, nil},
		{"NUL", map[string]string{"a\x00b.txt": body}, nil},
		{"symlink member", map[string]string{"link": "../../outside/secret.md"}, symlink},
		{"fifo member", map[string]string{"pipe": ""}, fifo},
		{"case collision", map[string]string{"A.txt": body, "a.txt": body}, nil},
		{"dir then file", map[string]string{"d/": "", "d": body}, nil},
	}
	cs := startRedteam(t, w, "")
	for _, c := range cases {
		archive := "evil-" + strings.ReplaceAll(c.name, " ", "-") + ".zip"
		mkzip(t, filepath.Join(w.rw, archive), c.members, c.mod)
		expect := map[string]any{}
		for n, b := range c.members {
			expect[n] = sum(b)
		}
		dest := "x-" + strings.ReplaceAll(c.name, " ", "-")
		o := probe(t, cs, w, "zip_extract", map[string]any{"archive": archive, "destination": dest, "expect": expect})
		if o.code == "" || o.code == "io" || o.code == "internal" {
			t.Errorf("%s: extract %q: %.300s", c.name, o.code, o.text)
		}
		if _, err := os.Lstat(filepath.Join(w.rw, dest)); err == nil {
			t.Errorf("%s: a failed extraction left %s behind", c.name, dest)
		}
		probe(t, cs, w, "zip_list", map[string]any{"archive": archive})
		probe(t, cs, w, "zip_verify", map[string]any{"archive": archive, "expect": expect})
		checkGuarded(t, guarded, before, c.name)
	}
	// zip_create may not name members outside dir.
	for _, f := range []string{"../outside/secret.md", w.outside + "/secret.md", "linkdir/secret.md", "link_abs", "fifo", "link_zero"} {
		o := probe(t, cs, w, "zip_create", map[string]any{"archive": "c.zip", "files": []any{"notes.txt", f}})
		if o.code == "" {
			t.Errorf("zip_create with %q succeeded", f)
		}
	}
	if _, err := os.Lstat(filepath.Join(w.rw, "c.zip")); err == nil {
		t.Error("a failed zip_create left its archive")
	}
	checkAudit(t, w)
}

// TestRedTeamSwap swaps a directory of the writable root with a symlink
// out of it while the reading and writing tools work inside it: whatever
// instant a swap lands on, nothing outside is read or changed.
func TestRedTeamSwap(t *testing.T) {
	w := newWorld(t)
	swap, real := filepath.Join(w.rw, "swap"), filepath.Join(w.rw, "swap.real")
	mkfile(t, filepath.Join(swap, "secret.md"), "inside\n")
	if err := os.Chmod(swap, 0o700); err != nil {
		t.Fatal(err)
	}
	guarded := []string{w.outside, w.ro}
	before := map[string]string{w.outside: testkit.TreeDigest(t, w.outside), w.ro: testkit.TreeDigest(t, w.ro)}
	cs := startRedteam(t, w, "")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if os.Rename(swap, real) == nil {
				os.Symlink(w.outside, swap)
				time.Sleep(50 * time.Microsecond)
				os.Remove(swap)
				os.Rename(real, swap)
			}
			time.Sleep(50 * time.Microsecond)
		}
	}()
	codes := map[string]int{}
	call := func(tool string, args map[string]any) {
		o := probe(t, cs, w, tool, args)
		codes[o.code]++
		if o.code == "io" || o.code == "internal" || o.code == "protocol" {
			t.Errorf("%s %v: untyped failure %s: %.300s", tool, args, o.code, o.text)
		}
	}
	for i := range 25 {
		n := fmt.Sprint(i)
		call("read_file", map[string]any{"path": "swap/secret.md"})
		call("edit_file", map[string]any{"path": "swap/secret.md", "old_string": "inside", "new_string": "inside"})
		call("write_file", map[string]any{"path": "swap/secret.md", "content": "inside\n"})
		call("write_file", map[string]any{"path": "swap/w" + n, "content": "x"})
		call("state_replace", map[string]any{"path": "swap/secret.md", "content": "inside\n"})
		call("file_digest", map[string]any{"path": "swap/secret.md"})
		call("file_copy", map[string]any{"source": "swap/secret.md", "destination": "swap/c" + n})
		call("zip_extract", map[string]any{"archive": "good.zip", "destination": "swap/x" + n, "expect": map[string]any{"a.txt": w.goodSum}})
		call("zip_create", map[string]any{"archive": "swap/z" + n + ".zip", "dir": "swap", "files": []any{"secret.md"}})
		call("journal_append", map[string]any{"dir": "swap", "name": "j", "event": i})
		call("grep", map[string]any{"pattern": "REDTEAM", "path": "swap"})
		call("tree_list", map[string]any{"path": "swap"})
	}
	close(stop)
	wg.Wait()
	t.Logf("fault codes: %v", codes)
	checkGuarded(t, guarded, before, "the swaps")
	checkAudit(t, w)
}

// TestRedTeamNoHostPaths calls every tool the ordinary way, with relative
// paths: no result or failure names the roots' host paths.
func TestRedTeamNoHostPaths(t *testing.T) {
	w := newWorld(t)
	cs := startRedteam(t, w, "")
	expect := map[string]any{"a.txt": w.goodSum}
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"list_dir", map[string]any{}},
		{"list_dir", map[string]any{"path": "sub"}},
		{"glob", map[string]any{"pattern": "**"}},
		{"grep", map[string]any{"pattern": "e"}},
		{"read_file", map[string]any{"path": "notes.txt"}},
		{"read_file", map[string]any{"path": "nope.txt"}},
		{"write_file", map[string]any{"path": "w/new.txt", "content": "x"}},
		{"edit_file", map[string]any{"path": "notes.txt", "old_string": "zzz", "new_string": "y"}},
		{"move_file", map[string]any{"source": "w/new.txt", "destination": "w/moved.txt"}},
		{"tree_stamp", map[string]any{"path": "."}},
		{"tree_list", map[string]any{"path": "."}},
		{"file_digest", map[string]any{"path": "notes.txt"}},
		{"file_copy", map[string]any{"source": "notes.txt", "destination": "w/copy.txt"}},
		{"file_copy", map[string]any{"source": "notes.txt", "destination": "w/copy.txt"}},
		{"state_replace", map[string]any{"path": "state.json", "content": "{}"}},
		{"dir_publish", map[string]any{"staging": "stage", "destination": "published"}},
		{"dir_publish", map[string]any{"staging": "stage", "destination": "published"}},
		{"zip_create", map[string]any{"archive": "n.zip", "files": []any{"notes.txt"}}},
		{"zip_list", map[string]any{"archive": "good.zip"}},
		{"zip_verify", map[string]any{"archive": "good.zip", "expect": expect}},
		{"zip_extract", map[string]any{"archive": "good.zip", "destination": "x", "expect": expect}},
		{"zip_extract", map[string]any{"archive": "good.zip", "destination": "x", "expect": expect}},
		{"journal_append", map[string]any{"dir": "jdir", "name": "ok", "event": 1}},
		{"journal_append", map[string]any{"name": "ok", "event": 1}},
		{"journal_read", map[string]any{"dir": "jdir", "name": "ok"}},
		{"journal_verify", map[string]any{"dir": "jdir", "name": "nope"}},
		{"json_validate", map[string]any{"path": "data.json"}},
		{"csv_scan", map[string]any{"path": "data.csv"}},
		{"html_extract", map[string]any{"path": "page.html", "select": "text"}},
		{"feed_parse", map[string]any{"path": "feed.xml", "url": "http://example.com/", "limit": 5}},
		{"sniff", map[string]any{"path": "feed.xml", "expect": "feed"}},
		{"notes", map[string]any{"id": "a"}},
		{"run_script", map[string]any{"source": `result = tool.call("list_dir", {})`}},
		{"run_script", map[string]any{"source": `result = tool.call("read_file", "nope")`}},
		{"tool_search", map[string]any{"query": "file"}},
	}
	for _, c := range calls {
		probe(t, cs, w, c.tool, c.args)
	}
	checkAudit(t, w)
}

// TestRedTeamScript runs hostile scripts as an actor granted only reading
// and run_script.
func TestRedTeamScript(t *testing.T) {
	w := newWorld(t)
	before := testkit.TreeDigest(t, w.outside)
	cs := startRedteamAs(t, w, "limited", `
[actor.limited]
effects = ["read_file", "list", "run_script", "tool_search", "catalog_read"]
[tool.file_digest]
max_calls = 3
[tool.list_dir]
max_calls = 3
`)
	run := func(src string) outcome {
		t.Helper()
		return probe(t, cs, w, "run_script", map[string]any{"source": src})
	}
	cases := []struct {
		name, src, code string
	}{
		{"ungranted write", `result = tool.call("write_file", {"path": "x.txt", "content": "x"})`, "denied"},
		{"ungranted zip", `result = tool.call("zip_list", {"archive": "good.zip"})`, "denied"},
		{"ungranted state", `result = tool.call("state_replace", {"path": "s", "content": "x"})`, "denied"},
		{"catalog without the resource", `result = tool.call("notes", "a")`, "denied"},
		{"unknown tool", `result = tool.call("no_such_tool", {})`, "not_found"},
		{"itself", `result = tool.call("run_script", {"source": "result = 1"})`, "denied"},
		{"escape", `result = tool.call("read_file", "../outside/secret.md")`, "denied"},
		{"escape by link", `result = tool.call("read_file", "linkdir/secret.md")`, "denied"},
		{"fifo", `result = tool.call("read_file", "fifo")`, ""},
		{"steps", "x = 0\nwhile True:\n    x += 1", "limit"},
		{"recursion", "def f(n):\n    return f(n + 1)\nresult = f(0)", "invalid_input"},
		{"huge string", `result = len("a" * 2000000000)`, ""},
		{"huge result", `result = "a" * 3000000`, "limit"},
		{"deep value", "x = []\nfor i in range(100000):\n    x = [x]\nresult = x", ""},
		{"budget", "for i in range(10):\n    tool.call(\"list_dir\", {})", "limit"},
		{"load", `load("os", "x")`, "invalid_input"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := run(c.src)
			if c.code != "" && o.code != c.code {
				t.Errorf("fault %q, want %q: %.300s", o.code, c.code, o.text)
			}
			if c.code == "" && (o.code == "" || o.code == "io" || o.code == "internal") {
				t.Errorf("fault %q: %.300s", o.code, o.text)
			}
		})
	}
	// The script's calls count against the session's own budget.
	if o := probe(t, cs, w, "list_dir", map[string]any{}); o.code != "limit" {
		t.Errorf("list_dir after a script spent its budget: %q", o.code)
	}
	if testkit.TreeDigest(t, w.outside) != before {
		t.Error("outside changed")
	}
	checkAudit(t, w)
}

// TestRedTeamCatalog: an identifier the model was not told about fails
// exactly as one that does not exist, whatever file lies beside the
// catalog's.
func TestRedTeamCatalog(t *testing.T) {
	w := newWorld(t)
	cs := startRedteam(t, w, "")
	if o := probe(t, cs, w, "notes", map[string]any{"id": "a"}); o.code != "" || !strings.Contains(o.text, "catalog entry a") {
		t.Fatalf("catalog read: %q %.200s", o.code, o.text)
	}
	var texts []string
	for _, id := range []string{"hidden", "hidden.txt", "zzz", "a.txt", "cat", "..", "-"} {
		o := probe(t, cs, w, "notes", map[string]any{"id": id})
		if o.code == "" {
			t.Fatalf("id %q read something: %.200s", id, o.text)
		}
		if o.code == "not_found" {
			texts = append(texts, o.text)
		}
	}
	for _, x := range texts[1:] {
		if x != texts[0] {
			t.Errorf("unknown identifiers fail differently:\n%s\n%s", texts[0], x)
		}
	}
	// The same through a script.
	texts = nil
	for _, id := range []string{"hidden", "zzz"} {
		o := probe(t, cs, w, "run_script", map[string]any{"source": `result = tool.call("notes", "` + id + `")`})
		if o.code != "not_found" {
			t.Fatalf("script reading %q: %q %.200s", id, o.code, o.text)
		}
		texts = append(texts, o.text)
	}
	for _, x := range texts[1:] {
		if x != texts[0] {
			t.Errorf("unknown identifiers fail differently:\n%s\n%s", texts[0], x)
		}
	}
	checkAudit(t, w)
}

// TestRedTeamDocuments sends hostile documents to the readers by path:
// each fails typed or succeeds bounded, and the server stays up.
func TestRedTeamDocuments(t *testing.T) {
	w := newWorld(t)
	docs := map[string]string{
		"deep.json":     strings.Repeat("[", 200000) + strings.Repeat("]", 200000),
		"dupkey.json":   `{"a":1,"a":2}`,
		"badutf8.json":  "\"\xff\xfe\"",
		"huge-num.json": "1" + strings.Repeat("0", 100000),
		"longline.csv":  "a,b\n" + strings.Repeat("x", 3<<20) + ",1\n",
		"quotes.csv":    "a,b\n\"" + strings.Repeat("x", 100000) + "\n",
		"deep.html":     strings.Repeat("<div>", 100000) + "x",
		"attrs.html":    "<p " + strings.Repeat("a=1 ", 200000) + ">x</p>",
		"laughs.xml": `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]><rss version="2.0"><channel><title>&lol3;</title></channel></rss>`,
		"xxe.xml":  `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "../../outside/secret.md">]><rss version="2.0"><channel><title>&x;</title></channel></rss>`,
		"deep.xml": `<rss version="2.0"><channel>` + strings.Repeat("<x>", 100000),
	}
	for name, body := range docs {
		mkfile(t, filepath.Join(w.rw, "docs", name), body)
	}
	// A gzip bomb for csv_scan: past the expanded bound, compressed ~1000:1.
	bomb := gzipZeros(t, limits.TabularMaxExpandedBytes/limits.MiB+16)
	mkfile(t, filepath.Join(w.rw, "docs", "bomb.csv.gz"), string(bomb))
	cs := startRedteam(t, w, "")
	tools := []struct {
		tool string
		args map[string]any
	}{
		{"json_validate", nil}, {"json_canonical", nil}, {"text_validate", nil}, {"csv_scan", nil},
		{"html_extract", map[string]any{"select": "article"}}, {"feed_parse", map[string]any{"url": "http://example.com/", "limit": 10}},
		{"sniff", map[string]any{"expect": "feed"}}, {"read_file", nil}, {"grep", map[string]any{"pattern": "lol"}},
	}
	wantDoc := map[string]string{
		"csv_scan bomb.csv.gz":      "limit",
		"csv_scan longline.csv":     "limit",
		"feed_parse laughs.xml":     "invalid_input",
		"feed_parse xxe.xml":        "invalid_input",
		"feed_parse deep.xml":       "limit",
		"json_validate deep.json":   "limit",
		"json_validate dupkey.json": "invalid_input",
		"html_extract deep.html":    "limit",
	}
	for _, name := range append(slices.Sorted(maps.Keys(docs)), "bomb.csv.gz") {
		for _, tl := range tools {
			args := maps.Clone(tl.args)
			if args == nil {
				args = map[string]any{}
			}
			args["path"] = "docs/" + name
			o := probe(t, cs, w, tl.tool, args)
			if o.code == "io" || o.code == "internal" || o.code == "protocol" {
				t.Errorf("%s on %s: %q: %.300s", tl.tool, name, o.code, o.text)
			}
			if want, ok := wantDoc[tl.tool+" "+name]; ok && o.code != want {
				t.Errorf("%s on %s: %q, want %q: %.300s", tl.tool, name, o.code, want, o.text)
			}
		}
	}
	if o := probe(t, cs, w, "read_file", map[string]any{"path": "notes.txt"}); o.code != "" {
		t.Fatalf("server no longer answers: %q", o.code)
	}
	checkAudit(t, w)
}

// gzipZeros is n MiB of zeros gzipped: one compressed MiB repeated as
// gzip members (a reader concatenates them), cheap to make.
func gzipZeros(t *testing.T, n int) []byte {
	t.Helper()
	var one bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&one, gzip.BestCompression)
	zw.Write(make([]byte, 1<<20))
	zw.Close()
	return bytes.Repeat(one.Bytes(), n)
}

// TestRedTeamBounds: oversize arguments fail before the handler runs;
// a read window past the output bound is reported as such, never
// truncated silently; tool_search never
// activates a tool the actor is not granted.
func TestRedTeamBounds(t *testing.T) {
	w := newWorld(t)
	mkfile(t, filepath.Join(w.rw, "big.txt"), strings.Repeat("0123456789abcdef\n", 1000))
	cs := startRedteamAs(t, w, "limited", `
[actor.limited]
effects = ["read_file", "write_file", "list", "tool_search"]
`)
	if o := probe(t, cs, w, "write_file", map[string]any{"path": "new.txt", "content": strings.Repeat("x", 4096)}); o.code != "limit" {
		t.Errorf("oversize write_file arguments: %q", o.code)
	}
	if _, err := os.Lstat(filepath.Join(w.rw, "new.txt")); err == nil {
		t.Error("oversize write_file wrote")
	}
	// Past the default input bound (1 MiB) of a tool with no override.
	if o := probe(t, cs, w, "list_dir", map[string]any{"path": strings.Repeat("a", 2<<20)}); o.code != "limit" {
		t.Errorf("oversize list_dir arguments: %q", o.code)
	}
	// A window past the output bound ends on a whole line within it and
	// says where to go on: a reported window, not a truncation.
	o := probe(t, cs, w, "read_file", map[string]any{"path": "big.txt"})
	if o.code != "" || len(o.text) > 4096 || !strings.Contains(o.text, "(lines 1–") || !strings.Contains(o.text, "to fit the output bound of 4096 bytes; continue with offset=") {
		t.Errorf("oversize read_file result: %q %d bytes, %.300s", o.code, len(o.text), o.text)
	}
	for _, q := range []string{"zip archive", "journal", "state replace publish", "run script starlark", "notes catalog", "edit", "move rename", "zip_extract"} {
		o := probe(t, cs, w, "tool_search", map[string]any{"query": q, "limit": 12})
		for _, n := range []string{"zip_", "journal_", "state_replace", "dir_publish", "run_script", "notes", "edit_file", "move_file"} {
			if strings.Contains(o.text, n) {
				t.Errorf("tool_search %q offered %s: %.300s", q, n, o.text)
			}
		}
	}
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		if !slices.Contains([]string{"read_file", "write_file", "list_dir", "glob", "list_roots", "tool_search", "file_digest", "file_copy", "tree_stamp", "tree_list", "text_validate"}, tl.Name) {
			t.Errorf("listed %s", tl.Name)
		}
	}
	for _, n := range []string{"zip_list", "journal_read", "edit_file", "run_script", "notes"} {
		o := probe(t, cs, w, n, map[string]any{})
		if o.code == "" {
			t.Errorf("ungranted %s answered", n)
		}
	}
	// A message past the server's own bound (a framing violation) ends the
	// connection with a protocol error: no crash, no hang.
	if o := probe(t, cs, w, "list_dir", map[string]any{"path": strings.Repeat("a", limits.MCPMaxMessageBytes+1)}); o.code != "protocol" {
		t.Errorf("a message past the server's bound: %q", o.code)
	}
}

// TestRedTeamHTTPSessions: concurrent sessions over HTTP share neither
// call budgets nor file observations.
func TestRedTeamHTTPSessions(t *testing.T) {
	w := newWorld(t)
	cfg := w.config(t, `
[tool.file_digest]
max_calls = 5
`)
	const token = "redteam-token-0123456789abcdef"
	tokenFile := filepath.Join(w.dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	endpoint, _ := httpServer(t, "--config", cfg, "--token-file", tokenFile)
	transport := func() mcp.Transport {
		return &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1}
	}
	const n = 4
	sessions := make([]*mcp.ClientSession, n)
	for i := range sessions {
		sessions[i] = connect(t, transport()).cs
		mkfile(t, filepath.Join(w.rw, fmt.Sprintf("s%d.txt", i)), "session file\n")
	}
	// Discovery in one session activates nothing in another.
	probe(t, sessions[0], w, "tool_search", map[string]any{"query": "zip archive journal", "limit": 12})
	if res, err := sessions[1].ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	} else {
		for _, tl := range res.Tools {
			if strings.HasPrefix(tl.Name, "zip_") || strings.HasPrefix(tl.Name, "journal_") {
				t.Errorf("session 1 lists %s, which only session 0 discovered", tl.Name)
			}
		}
	}
	var wg sync.WaitGroup
	oks := make([]int, n)
	for i, cs := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 8 {
				if o := probe(t, cs, w, "file_digest", map[string]any{"path": "notes.txt"}); o.code == "" {
					oks[i]++
				}
			}
			// Session i read only its own file.
			probe(t, cs, w, "read_file", map[string]any{"path": fmt.Sprintf("s%d.txt", i)})
		}()
	}
	wg.Wait()
	for i, ok := range oks {
		if ok != 5 {
			t.Errorf("session %d: %d digests succeeded, want its own budget of 5", i, ok)
		}
	}
	for i, cs := range sessions {
		other := fmt.Sprintf("s%d.txt", (i+1)%n)
		if o := probe(t, cs, w, "edit_file", map[string]any{"path": other, "old_string": "session", "new_string": "edited"}); o.code != "conflict" {
			t.Errorf("session %d edited %s, which only another session read: %q", i, other, o.code)
		}
		own := fmt.Sprintf("s%d.txt", i)
		if o := probe(t, cs, w, "edit_file", map[string]any{"path": own, "old_string": "session", "new_string": "edited"}); o.code != "" {
			t.Errorf("session %d could not edit its own read file: %q %.200s", i, o.code, o.text)
		}
	}
}

func TestHostPathLeak(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.txt")
	if err := os.WriteFile(secret, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	splice := filepath.Join(dir, "secretlinkdirtxt")
	own := []string{secret} // the caller wrote this path into a file
	staging := filepath.Join(dir, ".capkit-tmp-12345")
	for _, tc := range []struct {
		text    string
		own     []string
		splices bool
		want    string
	}{
		{`"at ` + secret + `"`, nil, false, secret},
		{`"at ` + secret + `"`, nil, true, secret},
		{`"at ` + secret + `"`, own, false, ""},
		{`"at ⟦` + secret + `⟧"`, own, false, ""},
		{`"at ` + splice + `"`, own, false, splice},
		{`"at ` + splice + `"`, own, true, ""},
		// Not splices: in a directory the caller never named, a real
		// path followed by punctuation, a path cut short, a staging name.
		{`"at ` + splice + `"`, nil, true, splice},
		{"open " + secret + ".", nil, true, secret + "."},
		{"open " + secret + "\tx", nil, true, secret},
		{"open `" + secret + "`", nil, true, secret},
		{"path " + secret[:len(secret)-3] + "…", nil, true, secret[:len(secret)-3] + "…"},
		{"was " + staging + " gone", own, true, staging},
	} {
		if got := hostPathLeak(tc.text, dir, tc.own, tc.splices); got != tc.want {
			t.Errorf("hostPathLeak(%q, own %q, splices %v) = %q, want %q", tc.text, tc.own, tc.splices, got, tc.want)
		}
	}
}
