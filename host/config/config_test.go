package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// tree makes a directory with writable roots rw and rw2, a read-only root
// ro, a file, a symlink to rw and a logs directory, and returns its path.
func tree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"rw", "rw2", "ro", "logs", "rw/inner"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("rw", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	// Canonical: TempDir may itself sit behind a symlink (macOS /var).
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func parseIn(t *testing.T, dir, doc string) (*Config, error) {
	t.Helper()
	return Parse(filepath.Join(dir, "capkit.toml"), []byte(doc))
}

const roots = `
[[root]]
path = "rw"
[[root]]
path = "ro"
read_only = true
`

func TestParseErrors(t *testing.T) {
	dir := tree(t)
	cases := []struct {
		name string
		doc  string
		want []string // each must appear in one error, in order
	}{
		{"unknown effect", roots + `
[actor.assistant]
effects = ["read_file",
  "fly"]
`, []string{`capkit.toml:10: actor.assistant.effects: unknown effect "fly"`}},
		{"unknown keys", `
audit_logs = "x"
[[root]]
path = "rw"
readonly = true
`, []string{`capkit.toml:2: audit_logs: unknown key`, `capkit.toml:5: root.readonly: unknown key`}},
		{"syntax", "[[root]]\npath = 'rw\n", []string{`capkit.toml:2: `}},
		{"type", roots + "[tool.read_file]\nmax_calls = \"ten\"\n", []string{`capkit.toml:8: tool.read_file.max_calls: got a TOML string, want an integer`}},
		{"bad duration", roots + "[tool.read_file]\ntimeout = \"soon\"\n", []string{`capkit.toml:8: tool.read_file.timeout: invalid duration "soon"`}},
		{"max_calls zero", roots + "[tool.read_file]\nmax_calls = 0\n", []string{`capkit.toml:8: tool.read_file.max_calls: 0 is outside 1..`}},
		{"http sessions zero", roots + "[http]\nmax_sessions = 0\n", []string{`capkit.toml:8: http.max_sessions: 0 is outside 1..10000`}},
		{"http sessions past hard", roots + "[http]\nmax_sessions = 10001\n", []string{`http.max_sessions: 10001 is outside 1..10000`}},
		{"http in-flight below one message", roots + "[http]\nmax_in_flight_bytes = 67108863\n", []string{`http.max_in_flight_bytes: 67108863 is outside 67108864..`}},
		{"http in-flight past hard", roots + "[http]\nmax_in_flight_bytes = 4294967297\n", []string{`http.max_in_flight_bytes: 4294967297 is outside`}},
		{"http body timeout past hard", roots + "[http]\nbody_timeout = \"11m\"\n", []string{`http.body_timeout: 11m0s is outside (0, 10m0s]`}},
		{"http idle zero", roots + "[http]\nsession_idle = \"0s\"\n", []string{`http.session_idle: 0s is outside`}},
		{"http token of an unknown actor", roots + "[actor.bob]\n[http]\ntokens = { bob = \"logs/b\", eve = \"logs/e\" }\n", []string{`http.tokens.eve: no actor "eve" is configured (configured: bob)`}},
		{"http token of the implicit actor's other name", roots + "[http]\ntokens = { bob = \"logs/b\" }\n", []string{`http.tokens.bob: no actor "bob" is configured (configured: assistant)`}},
		{"http tokens empty", roots + "[http]\ntokens = {}\n", []string{`capkit.toml:8: http.tokens: empty`}},
		{"http token empty path", roots + "[http]\ntokens = { assistant = \"\" }\n", []string{`http.tokens.assistant: empty path`}},
		{"http token in a read-only root", roots + "[http]\ntokens = { assistant = \"ro/token\" }\n", []string{`http.tokens.assistant: ` + filepath.Join(dir, "ro/token") + ` lies inside root ` + filepath.Join(dir, "ro") + `: a model could read the token`}},
		{"http token through a link into a root", roots + "[http]\ntokens = { assistant = \"link/token\" }\n", []string{`http.tokens.assistant: ` + filepath.Join(dir, "link/token") + ` lies inside root ` + filepath.Join(dir, "rw")}},
		{"http one token file for two actors", roots + "[actor.a]\n[actor.b]\n[http]\ntokens = { a = \"logs/t\", b = \"logs/../logs/t\" }\n", []string{`http.tokens.b: ` + filepath.Join(dir, "logs/t") + ` is also actor a's token file`}},
		{"max_calls negative", roots + "[tool.read_file]\nmax_calls = -1\n", []string{`tool.read_file.max_calls: -1 is outside`}},
		{"max_calls past hard", roots + "[tool.read_file]\nmax_calls = 1000001\n", []string{`tool.read_file.max_calls: 1000001 is outside 1..1000000`}},
		{"input past hard", roots + "[tool.read_file]\nmax_input_bytes = 134217729\n", []string{`tool.read_file.max_input_bytes: 134217729 is outside`}},
		{"output past hard", roots + "[tool.read_file]\nmax_output_bytes = 134217729\n", []string{`tool.read_file.max_output_bytes`}},
		{"max_concurrent zero", roots + "[tool.read_file]\nmax_concurrent = 0\n", []string{`tool.read_file.max_concurrent: 0 is outside 1..4096`}},
		{"max_concurrent past hard", roots + "[tool.read_file]\nmax_concurrent = 4097\n", []string{`tool.read_file.max_concurrent: 4097 is outside 1..4096`}},
		{"timeout zero", roots + "[tool.read_file]\ntimeout = \"0s\"\n", []string{`capkit.toml:8: tool.read_file.timeout: 0s is outside`}},
		{"timeout past hard", roots + "[tool.read_file]\ntimeout = \"10m1s\"\n", []string{`tool.read_file.timeout: 10m1s is outside`}},
		{"bad tool name", roots + "[tool.Read]\nmax_calls = 1\n", []string{`capkit.toml:7: tool.Read: tool names must match`}},
		{"bad catalog name", roots + "[catalog.\"a b\"]\n", []string{`capkit.toml:7: catalog.a b: catalog names are tool names`}},
		{"bad actor name", roots + "[actor.Bob]\n", []string{`capkit.toml:7: actor.Bob: actor names must match`}},
		{"bad resource", roots + "[actor.bob]\nresources = [\"ok\", \"no/slash\"]\n", []string{`capkit.toml:8: actor.bob.resources: resource "no/slash" must match`}},
		{"empty audit log", `audit_log = ""` + roots, []string{`capkit.toml:1: audit_log: empty path`}},
		{"root missing path", "[[root]]\nread_only = true\n", []string{`capkit.toml:1: root[0].path: missing or empty`}},
		{"root does not exist", "[[root]]\npath = \"nope\"\n", []string{`capkit.toml:2: root[0].path: ` + filepath.Join(dir, "nope") + ` does not exist`}},
		{"root is a file", "[[root]]\npath = \"file\"\n", []string{`capkit.toml:2: root[0].path: ` + filepath.Join(dir, "file") + ` is not a directory`}},
		{"duplicate root through a symlink", roots + "[[root]]\npath = \"link\"\n", []string{`capkit.toml:8: root[2].path: ` + filepath.Join(dir, "rw") + ` is the same directory as root[0].path`}},
		{"read-only inside writable", roots + "[[root]]\npath = \"rw/inner\"\nread_only = true\n", []string{`capkit.toml:8: root[2].path: read-only root ` + filepath.Join(dir, "rw/inner") + ` lies inside writable root`}},
		{"audit log inside a writable root", `audit_log = "rw/audit.jsonl"` + roots, []string{`capkit.toml:1: audit_log: ` + filepath.Join(dir, "rw/audit.jsonl") + ` lies inside writable root`}},
		{"log in a missing directory", `log = "nodir/x.log"` + roots, []string{`capkit.toml:1: log: directory`}},
		{"actor root not configured", roots + "[actor.bob]\nroots = [\"rw\", \"rw2\"]\n", []string{`capkit.toml:8: actor.bob.roots: ` + filepath.Join(dir, "rw2") + ` is not a configured root`}},
		{"write on read-only roots", roots + "[actor.bob]\nroots = [\"ro\"]\neffects = [\"read_file\", \"write_file\", \"edit_file\"]\n", []string{
			`capkit.toml:9: actor.bob.effects: write_file is granted but every root of the actor is read-only`,
			`capkit.toml:9: actor.bob.effects: edit_file is granted`}},
		{"move without roots", "[actor.bob]\neffects = [\"move_file\"]\n", []string{`actor.bob.effects: move_file is granted but the actor has no root`}},
		{"unknown catalog key", roots + "[catalog.notes]\npath = \"x\"\n", []string{`capkit.toml:8: catalog.notes.path: unknown key`}},
		{"audit store not postgres", `audit_store = "mysql://x"` + roots, []string{`capkit.toml:1: audit_store: must be a postgres:// URL`}},
		{"audit spool without a store", `audit_spool = "logs/spool"` + roots, []string{`capkit.toml:1: audit_spool: applies to audit_store, which is not set`}},
		{"audit spool in a writable root", "audit_store = \"postgres://h/db\"\naudit_spool = \"rw/spool\"" + roots, []string{`capkit.toml:2: audit_spool: ` + filepath.Join(dir, "rw/spool") + ` lies inside writable root`}},
		{"audit spool below its least", "audit_store = \"postgres://h/db\"\naudit_spool_max_bytes = 1000" + roots, []string{`capkit.toml:2: audit_spool_max_bytes: 1000 is outside 1 MiB..16 GiB`}},
		{"audit max bytes without a log", `audit_max_bytes = 2097152` + roots, []string{`capkit.toml:1: audit_max_bytes: applies to audit_log, which is not set`}},
		{"audit max bytes below its least", "audit_log = \"logs/a.jsonl\"\naudit_max_bytes = 10" + roots, []string{`capkit.toml:2: audit_max_bytes: 10 is outside 1 MiB..16 GiB`}},
		{"otlp endpoint not a URL", roots + "[telemetry]\notlp_endpoint = \"127.0.0.1:4318\"\n", []string{`capkit.toml:8: telemetry.otlp_endpoint: want an http:// or https:// base URL`}},
		{"exporter without an endpoint", roots + "[telemetry]\nexporter = \"/bin/x\"\n", []string{`capkit.toml:8: telemetry.exporter: applies to otlp_endpoint, which is not set`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseIn(t, dir, c.doc)
			if err == nil {
				t.Fatal("no error")
			}
			errs := Errors(err)
			if len(errs) < len(c.want) {
				t.Fatalf("got %d located errors, want %d: %v", len(errs), len(c.want), err)
			}
			for i, w := range c.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("error %d = %q, want it to contain %q", i, errs[i].Error(), w)
				}
				if !strings.HasPrefix(errs[i].Error(), filepath.Join(dir, "capkit.toml")+":") {
					t.Errorf("error %d does not start with the file name: %q", i, errs[i])
				}
			}
		})
	}
}

func TestParseValid(t *testing.T) {
	dir := tree(t)
	c, err := parseIn(t, dir, `audit_log = "logs/audit.jsonl"
log = "`+filepath.Join(dir, "logs", "capkit.log")+`"
[[root]]
path = "ro"
read_only = true
[[root]]
path = "`+filepath.Join(dir, "link")+`"
[[root]]
path = "rw2"
[actor.bob]
[tool.read_file]
max_calls = 1000000
max_input_bytes = 134217728
max_output_bytes = 134217728
timeout = "10m"
max_concurrent = 4096
[catalog.notes]
[script]
`)
	if err != nil {
		t.Fatal(err)
	}
	if c.AuditLog != filepath.Join(dir, "logs/audit.jsonl") || c.Log != filepath.Join(dir, "logs/capkit.log") {
		t.Errorf("logs = %q, %q", c.AuditLog, c.Log)
	}
	if got := c.Roots[1].Dir; got != filepath.Join(dir, "rw") {
		t.Errorf("symlinked root resolved to %q", got)
	}
	tp := c.Tools["read_file"]
	if tp.MaxCalls != limits.HardMaxCalls || time.Duration(tp.Timeout) != limits.HardMaxTimeout || tp.MaxConcurrent != limits.HardMaxConcurrent {
		t.Errorf("tool policy = %+v", tp)
	}
	if _, ok := c.Catalogs["notes"]; !ok {
		t.Error("catalog table lost")
	}
	if c.File() != filepath.Join(dir, "capkit.toml") {
		t.Errorf("File() = %q", c.File())
	}
}

func TestCapabilities(t *testing.T) {
	dir := tree(t)
	rw, rw2, ro := filepath.Join(dir, "rw"), filepath.Join(dir, "rw2"), filepath.Join(dir, "ro")
	// ro is listed first: writable roots still come first in grants.
	base := "[[root]]\npath = \"ro\"\nread_only = true\n[[root]]\npath = \"rw\"\n[[root]]\npath = \"rw2\"\n"
	type grant struct {
		effects []capability.Effect
		roots   []string
		res     []string
	}
	E := func(es ...capability.Effect) []capability.Effect { return es }
	cases := []struct {
		name  string
		doc   string
		actor string
		want  []grant
	}{
		{"implicit default actor", base, DefaultActor, []grant{
			{E(capability.ReadFile, capability.List, capability.Search, capability.Parse, capability.ToolSearch), []string{rw, rw2, ro}, nil},
			{E(capability.WriteFile, capability.EditFile, capability.MoveFile), []string{rw, rw2}, nil},
		}},
		{"read-only scope gets reading defaults", base + "[actor.r]\nroots = [\"ro\"]\n", "r", []grant{
			{E(capability.ReadFile, capability.List, capability.Search, capability.Parse, capability.ToolSearch), []string{ro}, nil},
		}},
		{"explicit effects and resources", base + "[actor.w]\nroots = [\"rw2\", \"ro\"]\neffects = [\"read_file\", \"write_file\", \"catalog_read\"]\nresources = [\"notes\"]\n", "w", []grant{
			{E(capability.ReadFile, capability.CatalogRead), []string{rw2, ro}, []string{"notes"}},
			{E(capability.WriteFile), []string{rw2}, []string{"notes"}},
		}},
		{"no effects", base + "[actor.n]\neffects = []\n", "n", nil},
		{"no roots: only discovery", "[actor.x]\n", "x", []grant{{E(capability.ToolSearch), nil, nil}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := parseIn(t, dir, c.doc)
			if err != nil {
				t.Fatal(err)
			}
			caps, err := cfg.Capabilities(c.actor)
			if err != nil {
				t.Fatal(err)
			}
			var got []grant
			for _, cp := range caps {
				if cp.Actor != c.actor {
					t.Errorf("capability for %q", cp.Actor)
				}
				g := grant{cp.Effects, cp.Scope.Roots, cp.Scope.Resources}
				if len(g.roots) == 0 {
					g.roots = nil
				}
				if len(g.res) == 0 {
					g.res = nil
				}
				got = append(got, g)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("grants = %+v\nwant     %+v", got, c.want)
			}
		})
	}
}

func TestActorName(t *testing.T) {
	dir := tree(t)
	cases := []struct {
		name   string
		actors string
		named  string
		want   string
		code   fault.Code
	}{
		{"implicit", "", "", DefaultActor, ""},
		{"implicit named", "", DefaultActor, DefaultActor, ""},
		{"implicit other", "", "bob", "", fault.NotFound},
		{"the only one", "[actor.bob]\n", "", "bob", ""},
		{"assistant among several", "[actor.bob]\n[actor.assistant]\n", "", DefaultActor, ""},
		{"several, none named", "[actor.bob]\n[actor.eve]\n", "", "", fault.InvalidInput},
		{"named", "[actor.bob]\n[actor.eve]\n", "eve", "eve", ""},
		{"unknown", "[actor.bob]\n", "eve", "", fault.NotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := parseIn(t, dir, roots+c.actors)
			if err != nil {
				t.Fatal(err)
			}
			got, err := cfg.ActorName(c.named)
			if got != c.want || fault.CodeOf(err) != c.code {
				t.Fatalf("ActorName(%q) = %q, %v", c.named, got, err)
			}
			if _, err := cfg.Capabilities(c.named); c.code == fault.NotFound && fault.CodeOf(err) != fault.NotFound {
				t.Fatalf("Capabilities of an unknown actor: %v", err)
			}
		})
	}
}

func TestFromFlags(t *testing.T) {
	dir := tree(t)
	t.Chdir(dir)
	cases := []struct {
		name         string
		roots, ro    []string
		err          string
		writableDirs int
	}{
		{"none", nil, nil, "--root: give at least one", 0},
		{"relative and absolute", []string{"rw", filepath.Join(dir, "rw2")}, []string{"ro"}, "", 2},
		{"read-only only", nil, []string{"ro"}, "", 0},
		{"missing", []string{"nope"}, nil, "--root nope: " + filepath.Join(dir, "nope") + " does not exist", 0},
		{"same dir twice", []string{"rw"}, []string{"link"}, "--read-only link: " + filepath.Join(dir, "rw") + " is the same directory as --root rw", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := FromFlags(c.roots, c.ro)
			if c.err != "" {
				if err == nil || err.Error() != c.err && !strings.HasPrefix(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				if len(Errors(err)) == 0 {
					t.Fatal("flag errors must be located errors")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			caps, err := cfg.Capabilities(DefaultActor)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(capability.Set(caps).Roots(capability.WriteFile)); got != c.writableDirs {
				t.Fatalf("write_file on %d roots, want %d", got, c.writableDirs)
			}
			if got := len(capability.Set(caps).Roots(capability.ReadFile)); got != len(c.roots)+len(c.ro) {
				t.Fatalf("read_file on %d roots", got)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := tree(t)
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A file exactly at the bound (padded with a comment) loads; one byte
	// more is a limit failure.
	pad := func(n int) []byte {
		b := []byte(roots + "#")
		for len(b) < n-1 {
			b = append(b, 'x')
		}
		return append(b, '\n')
	}
	atBound := write("at.toml", pad(limits.ConfigMaxBytes))
	pastBound := write("past.toml", pad(limits.ConfigMaxBytes+1))
	fifo := filepath.Join(dir, "fifo.toml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		path string
		code fault.Code
	}{
		{"at the size bound", atBound, ""},
		{"one byte past", pastBound, fault.Limit},
		{"missing", filepath.Join(dir, "missing.toml"), fault.NotFound},
		{"directory", filepath.Join(dir, "rw"), fault.InvalidInput},
		{"fifo does not hang", fifo, fault.InvalidInput},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(c.path)
			if fault.CodeOf(err) != c.code {
				t.Fatalf("Load: %v, want %q", err, c.code)
			}
		})
	}
	// Relative paths are relative to the file's directory, not the
	// working directory.
	sub := filepath.Join(dir, "rw", "inner")
	p := filepath.Join(sub, "c.toml")
	if err := os.WriteFile(p, []byte("[[root]]\npath = \"../../rw2\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Roots[0].Dir != filepath.Join(dir, "rw2") {
		t.Fatalf("relative root = %q", cfg.Roots[0].Dir)
	}
}

func TestErrorFormat(t *testing.T) {
	cases := []struct {
		e    Error
		want string
	}{
		{Error{File: "c.toml", Line: 3, Field: "a.b", Message: "bad"}, "c.toml:3: a.b: bad"},
		{Error{File: "c.toml", Field: "a", Message: "bad"}, "c.toml: a: bad"},
		{Error{Field: "--root", Message: "bad"}, "--root: bad"},
		{Error{Message: "bad"}, "bad"},
	}
	for _, c := range cases {
		if got := c.e.Error(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.e, got, c.want)
		}
	}
	if Errors(errors.New("plain")) != nil {
		t.Error("a plain error holds no located errors")
	}
}

// TestExample keeps examples/capkit.toml valid as written: its relative
// paths name the example trees beside it.
func TestExample(t *testing.T) {
	cfg, err := Load("../../examples/capkit.toml")
	if err != nil {
		t.Fatal(err)
	}
	if names := cfg.ActorNames(); !reflect.DeepEqual(names, []string{"assistant", "reviewer"}) {
		t.Fatalf("actors = %v", names)
	}
	caps, err := cfg.Capabilities("reviewer")
	if err != nil || capability.Set(caps).Grants(capability.WriteFile) {
		t.Fatalf("reviewer: %v %+v", err, caps)
	}
	if !cfg.Script.Enabled || len(cfg.Catalogs["review_notes"].Entries) != 1 {
		t.Fatalf("the example lacks its script or catalog section: %+v", cfg)
	}
}

// FuzzParse checks that no document panics the decoder, the locator or the
// validation, and that every failure is a located error with a line inside
// the document.
func FuzzParse(f *testing.F) {
	f.Add([]byte(roots + "[actor.a]\neffects = [\"fly\"]\n[tool.x]\nmax_calls = -1\ntimeout = \"x\"\n"))
	f.Add([]byte("[[root]]\npath = \"\\u0000\"\n[catalog.\"\"]\n"))
	f.Add([]byte("audit_log = 1\n[actor]\na = 1\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := Parse(filepath.Join(dir, "c.toml"), data)
		if err == nil {
			return
		}
		errs := Errors(err)
		if len(errs) == 0 {
			t.Fatalf("unlocated error %T: %v", err, err)
		}
		lines := strings.Count(string(data), "\n") + 1
		for _, e := range errs {
			if e.Line < 0 || e.Line > lines {
				t.Fatalf("line %d of %d: %v", e.Line, lines, e)
			}
		}
	})
}

// TestHTTPTokens: [http] tokens name configured actors and their token
// files, made absolute against the configuration's directory.
func TestHTTPTokens(t *testing.T) {
	dir := tree(t)
	c, err := parseIn(t, dir, roots+"[actor.reviewer]\n[actor.assistant]\n[http]\ntokens = { reviewer = \"logs/r\", assistant = \"/run/secrets/a\" }\n")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"reviewer": filepath.Join(dir, "logs", "r"), "assistant": "/run/secrets/a"}
	if !reflect.DeepEqual(c.HTTP.Tokens, want) || !reflect.DeepEqual(c.HTTP.TokenActors(), []string{"assistant", "reviewer"}) {
		t.Fatalf("tokens %v, actors %v", c.HTTP.Tokens, c.HTTP.TokenActors())
	}
}
