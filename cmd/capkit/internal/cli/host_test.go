package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/limits"
)

// hostTree makes a writable root rw with a.txt and a read-only root ro
// with b.txt, and returns the directory.
func hostTree(t *testing.T) string {
	t.Helper()
	dir := testkit.TempDir(t)
	for _, d := range []string{"rw", "ro"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, s := range map[string]string{"rw/a.txt": "alpha\nbeta\n", "rw/c.txt": "c\n", "ro/b.txt": "gamma\n"} {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestToolsCmd(t *testing.T) {
	dir := hostTree(t)
	rw, ro := filepath.Join(dir, "rw"), filepath.Join(dir, "ro")
	cases := []struct {
		name    string
		args    []string
		code    int
		has     []string
		hasNone []string
	}{
		{"writable root", []string{"tools", "--root", rw}, 0,
			[]string{"read_file  hot", "write_file  hot", "move_file  deferred", "tool_search  hot"}, []string{"not_granted"}},
		{"read-only root", []string{"tools", "--read-only", ro}, 0,
			[]string{"read_file", "grep"}, []string{"write_file", "edit_file", "move_file"}},
		{"all", []string{"tools", "--read-only", ro, "--all"}, 0,
			[]string{"write_file  not_granted", "move_file  not_granted", "read_file  hot"}, nil},
		{"no root", []string{"tools"}, 2, nil, nil},
		{"unknown actor", []string{"tools", "--root", rw, "--actor", "bob"}, 3, nil, nil},
		{"openai strict", []string{"tools", "--root", rw, "--format", "openai", "--strict"}, 0,
			[]string{"read_file  strict", "grep  strict"}, []string{"move_file"}},
		{"anthropic strict, every granted tool", []string{"tools", "--root", rw, "--format", "anthropic", "--strict", "--all-granted"}, 0,
			[]string{"read_file  strict", "move_file", "not  strict:  Anthropic  allows"}, nil},
		{"gemini json", []string{"tools", "--read-only", ro, "--format", "gemini", "--json"}, 0,
			[]string{`"format":  "gemini"`, `"type":  "OBJECT"`}, []string{"write_file"}},
		{"format with all", []string{"tools", "--root", rw, "--format", "mcp", "--all"}, 2, nil, nil},
		{"strict without format", []string{"tools", "--root", rw, "--strict"}, 2, nil, nil},
		{"unknown format", []string{"tools", "--root", rw, "--format", "cohere"}, 2, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := run(t, "", c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d: %s", code, c.code, errs)
			}
			norm := strings.Join(strings.Fields(out), "  ")
			for _, h := range c.has {
				if !strings.Contains(norm, h) {
					t.Errorf("output lacks %q:\n%s", h, out)
				}
			}
			for _, h := range c.hasNone {
				if strings.Contains(out, h) {
					t.Errorf("output has %q:\n%s", h, out)
				}
			}
		})
	}

	code, out, _ := run(t, "", "tools", "--root", rw, "--json")
	var specs []toolSpec
	if code != 0 || json.Unmarshal([]byte(out), &specs) != nil || len(specs) == 0 {
		t.Fatalf("--json: exit %d %q", code, out)
	}
	for _, s := range specs {
		if s.Name == "read_file" {
			if s.State != stateHot || !s.Annotations.ReadOnly || s.Policy.MaxCalls != limits.FileToolsReadMaxCalls ||
				!bytes.Contains(s.InputSchema, []byte(`"path"`)) || s.Description == "" {
				t.Fatalf("read_file spec = %+v", s)
			}
			return
		}
	}
	t.Fatal("read_file missing from --json")
}

func TestCallCmd(t *testing.T) {
	dir := hostTree(t)
	rw, ro := filepath.Join(dir, "rw"), filepath.Join(dir, "ro")
	cfg := filepath.Join(dir, "capkit.toml")
	if err := os.WriteFile(cfg, []byte(`[[root]]
path = "rw"
[[root]]
path = "ro"
read_only = true
[tool.read_file]
max_output_bytes = 64
[tool.grep]
max_input_bytes = 40
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		stdin string
		args  []string
		code  int
		out   string
	}{
		{"read", "", []string{"call", "read_file", `{"path":"a.txt"}`, "--root", rw}, 0, "alpha"},
		{"read from stdin", `{"path":"a.txt","offset":2}`, []string{"call", "read_file", "-", "--root", rw}, 0, "beta"},
		{"json", "", []string{"call", "read_file", `{"path":"a.txt"}`, "--root", rw, "--json"}, 0, `"structured": {`},
		{"default arguments", "", []string{"call", "list_dir", "--root", rw}, 0, "a.txt"},
		{"malformed arguments", "", []string{"call", "read_file", `{"path":`, "--root", rw}, 2, ""},
		{"schema violation", "", []string{"call", "read_file", `{"path":1}`, "--root", rw}, 2, ""},
		{"unknown tool", "", []string{"call", "nope", "--root", rw}, 3, ""},
		{"missing file", "", []string{"call", "read_file", `{"path":"zz.txt"}`, "--root", rw}, 3, ""},
		{"edit without reading", "", []string{"call", "edit_file", `{"path":"a.txt","old_string":"alpha","new_string":"ALPHA"}`, "--root", rw}, 4, ""},
		{"replace without reading", "", []string{"call", "write_file", `{"path":"a.txt","content":"x"}`, "--root", rw}, 4, ""},
		{"existing destination", "", []string{"call", "move_file", `{"source":"a.txt","destination":"c.txt"}`, "--root", rw}, 4, ""},
		{"write on a read-only root", "", []string{"call", "write_file", `{"path":"` + filepath.Join(ro, "x") + `","content":"x"}`, "--root", rw, "--read-only", ro}, 5, ""},
		{"not granted at all", "", []string{"call", "write_file", `{"path":"x","content":"x"}`, "--read-only", ro}, 5, ""},
		{"output over the configured bound", "", []string{"--config", cfg, "call", "read_file", `{"path":"a.txt"}`}, 6, ""},
		{"input over the configured bound", "", []string{"--config", cfg, "call", "grep", `{"pattern":"` + strings.Repeat("a", 40) + `"}`}, 6, ""},
		{"stdin over the bound", `{"pattern":"` + strings.Repeat("a", 100) + `"}`, []string{"--config", cfg, "call", "grep", "-"}, 6, ""},
		{"config and roots", "", []string{"--config", cfg, "call", "list_dir", "--root", rw}, 2, ""},
		{"no tool", "", []string{"call", "--root", rw}, 2, ""},
		{"anthropic call", `{"type":"tool_use","id":"toolu_1","name":"read_file","input":{"path":"a.txt"}}`, []string{"call", "--from", "anthropic", "-", "--root", rw}, 0, `{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"     1\talpha`},
		{"openai strict call", "", []string{"call", "--from", "openai", "--strict", `{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.txt\",\"offset\":null,\"limit\":null,\"tail\":null}"}}`, "--root", rw}, 0, `"tool_call_id":"c1","content":"     1\talpha`},
		{"gemini refused", "", []string{"call", "--from", "gemini", `{"name":"write_file","args":{"path":"a.txt","content":"x"}}`, "--root", rw}, 4, `"response":{"error":"conflict: `},
		{"arguments not JSON", "", []string{"call", "--from", "openai", `{"id":"c1","type":"function","function":{"name":"write_file","arguments":"{\"path\":"}}`, "--root", rw}, 2, `invalid_input: tool write_file: the arguments are not valid JSON`},
		{"not a call", "", []string{"call", "--from", "anthropic", `{"type":"text","text":"hi"}`, "--root", rw}, 2, ""},
		{"from and a tool", "", []string{"call", "--from", "anthropic", "read_file", "{}", "--root", rw}, 2, ""},
		{"strict without from", "", []string{"call", "--strict", "read_file", "--root", rw}, 2, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := run(t, c.stdin, c.args...)
			if code != c.code || !strings.Contains(out, c.out) {
				t.Fatalf("exit %d (want %d), out %q, err %q", code, c.code, out, errs)
			}
			if c.code != 0 && errs == "" {
				t.Fatal("a failure must be explained on stderr")
			}
			// A one-call session never read a file: the message says so
			// and where reading first works.
			if c.code == 4 && strings.HasSuffix(c.name, "without reading") &&
				(!strings.Contains(errs, "has not read") || !strings.Contains(errs, "each call in a session of its own") ||
					!strings.Contains(errs, "capkit script run") || !strings.Contains(errs, "capkit serve")) {
				t.Fatalf("conflict not explained: %q", errs)
			}
		})
	}
	if got, _ := os.ReadFile(filepath.Join(rw, "a.txt")); string(got) != "alpha\nbeta\n" {
		t.Fatalf("a.txt changed: %q", got)
	}
}

func TestReadCallBound(t *testing.T) {
	for n, code := range map[int]fault.Code{100: "", 101: fault.Limit} {
		_, err := readCall(strings.NewReader(strings.Repeat(" ", n)), 100)
		if fault.CodeOf(err) != code {
			t.Errorf("%d bytes with a bound of 100: %v", n, err)
		}
	}
}

func TestConfigErrorsNameFileLineField(t *testing.T) {
	dir := hostTree(t)
	cfg := filepath.Join(dir, "capkit.toml")
	cases := []struct {
		name, doc, want string
	}{
		{"unknown effect", "[[root]]\npath = \"rw\"\n[actor.assistant]\neffects = [\"read_file\", \"fly\"]\n",
			cfg + `:4: actor.assistant.effects: unknown effect "fly"`},
		{"unknown key", "[[root]]\npath = \"rw\"\nreadonly = true\n", cfg + `:3: root.readonly: unknown key`},
		{"write on read-only", "[[root]]\npath = \"ro\"\nread_only = true\n[actor.a]\neffects = [\n  \"write_file\",\n]\n",
			cfg + `:6: actor.a.effects: write_file is granted but every root of the actor is read-only`},
		{"unknown tool", "[[root]]\npath = \"rw\"\n\n[tool.raed_file]\nmax_calls = 1\n", cfg + `:4: tool.raed_file: no tool "raed_file" is registered`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(cfg, []byte(c.doc), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, cmd := range []string{"serve", "tools", "call"} {
				args := []string{"--config", cfg, cmd}
				if cmd == "call" {
					args = append(args, "list_dir")
				}
				code, _, errs := run(t, "", args...)
				if code != 2 || !strings.Contains(errs, c.want) {
					t.Fatalf("%s: exit %d, stderr %q, want %q", cmd, code, errs, c.want)
				}
			}
		})
	}
}

func TestServeFlagErrors(t *testing.T) {
	dir := hostTree(t)
	rw := filepath.Join(dir, "rw")
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "open-token")
	if err := os.WriteFile(open, []byte("0123456789abcdef0123\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(dir, "tokens.toml")
	if err := os.WriteFile(tokens, []byte("[[root]]\npath = \"rw\"\n[actor.a]\n[actor.b]\n[http]\ntokens = { a = \"token\", b = \"token2\" }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "token2"), []byte("0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"token without http", []string{"serve", "--root", rw, "--token-file", token}, 2, "--token-file applies to --http only"},
		{"token others may read", []string{"serve", "--root", rw, "--http", "127.0.0.1:0", "--token-file", open}, 5, "may be read by its group or others (mode -rw-r--r--): chmod 600 it"},
		{"token file and [http] tokens", []string{"--config", tokens, "serve", "--http", "127.0.0.1:0", "--token-file", token}, 2, "--token-file and [http] tokens both give tokens"},
		{"actor and [http] tokens", []string{"--config", tokens, "serve", "--http", "127.0.0.1:0", "--actor", "a"}, 2, "--actor does not apply to --http when [http] tokens is configured"},
		{"[http] tokens alike", []string{"--config", tokens, "serve", "--http", "127.0.0.1:0"}, 2, "token files " + token + " and " + filepath.Join(dir, "token2") + " hold the same token"},
		{"allow-host without http", []string{"serve", "--root", rw, "--allow-host", "x"}, 2, "apply to --http only"},
		{"bad address", []string{"serve", "--root", rw, "--http", "8931"}, 2, "want HOST:PORT"},
		{"max-sessions zero", []string{"serve", "--root", rw, "--http", "127.0.0.1:0", "--max-sessions", "0"}, 2, "--max-sessions 0 is outside 1..10000"},
		{"max-sessions past hard", []string{"serve", "--root", rw, "--http", "127.0.0.1:0", "--max-sessions", "10001"}, 2, "--max-sessions 10001 is outside"},
		{"in-flight below a message", []string{"serve", "--root", rw, "--http", "127.0.0.1:0", "--max-in-flight-bytes", "67108863"}, 2, "--max-in-flight-bytes 67108863 is outside 67108864.."},
		{"body timeout past hard", []string{"serve", "--root", rw, "--http", "127.0.0.1:0", "--body-timeout", "11m"}, 2, "--body-timeout 11m0s is outside"},
		{"remote without token", []string{"serve", "--root", rw, "--http", "0.0.0.0:0"}, 5, "requires --token-file"},
		{"no root", []string{"serve"}, 2, "at least one --root"},
		{"missing token file", []string{"serve", "--root", rw, "--http", "127.0.0.1:0", "--token-file", filepath.Join(dir, "nope")}, 3, "token file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := run(t, "", c.args...)
			if code != c.code || !strings.Contains(errs, c.err) || out != "" {
				t.Fatalf("exit %d (want %d), stdout %q, stderr %q", code, c.code, out, errs)
			}
		})
	}
}

// TestReadToken: the bounds of a token, and a token file its group or
// others may read refused (it used to be only a warning).
func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name    string
		content string
		mode    os.FileMode
		want    string
		code    fault.Code // "" for success
	}{
		{"at the minimum", strings.Repeat("t", limits.TokenMinBytes) + "\n", 0o600, strings.Repeat("t", limits.TokenMinBytes), ""},
		{"one short", strings.Repeat("t", limits.TokenMinBytes-1), 0o600, "", fault.InvalidInput},
		{"at the maximum", strings.Repeat("t", limits.TokenMaxBytes), 0o600, strings.Repeat("t", limits.TokenMaxBytes), ""},
		{"one past the maximum", strings.Repeat("t", limits.TokenMaxBytes+1), 0o600, "", fault.Limit},
		{"inner space", "0123456789 abcdef", 0o600, "", fault.InvalidInput},
		{"control byte", "0123456789\x01abcdef", 0o600, "", fault.InvalidInput},
		{"owner read-only", "0123456789abcdef", 0o400, "0123456789abcdef", ""},
		{"readable by others", "0123456789abcdef", 0o604, "", fault.Denied},
		{"readable by the group", "0123456789abcdef", 0o640, "", fault.Denied},
		{"writable by the group", "0123456789abcdef", 0o620, "", fault.Denied},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, "t"+string(rune('a'+i)))
			if err := os.WriteFile(p, []byte(c.content), 0o600); err != nil {
				t.Fatal(err)
			}
			os.Chmod(p, c.mode)
			got, err := readToken(p)
			if fault.CodeOf(err) != c.code || err == nil && c.code != "" || got != c.want {
				t.Fatalf("readToken = %q, %v (want code %q)", got, err, c.code)
			}
			if err != nil && strings.Contains(err.Error(), c.content) {
				t.Fatalf("the error shows the token: %v", err)
			}
		})
	}
}
