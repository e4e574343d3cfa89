package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
)

const upstreams = roots + `
[actor.assistant]
effects = ["read_file", "tool_search", "upstream:memory", "upstream:tracker"]

[upstream]
lock = "logs/lock.json"

[upstream.memory]
command = ["node", "server.js"]
env = { MEMORY_FILE_PATH = "/srv/m.json" }
secret_env = { TOKEN = "logs/secret" }
roots = ["rw2"]
read_only = ["logs"]
tools = ["create_*", "read_graph"]

[upstream.tracker]
url = "https://mcp.example.org/mcp"
policy = "logs/policy.json"
secret_headers = { Authorization = "logs/secret" }
share = "session"

[tool."memory__create_entities"]
max_calls = 5
`

func TestUpstreams(t *testing.T) {
	dir := tree(t)
	os.WriteFile(filepath.Join(dir, "logs", "secret"), []byte("x"), 0o600)
	c, err := parseIn(t, dir, upstreams)
	if err != nil {
		t.Fatal(err)
	}
	if c.LockFile() != filepath.Join(dir, "logs", "lock.json") {
		t.Errorf("lock %s", c.LockFile())
	}
	if !slices.Contains(c.Protected().Paths([]string{filepath.Join(dir, "logs")}), c.LockFile()) {
		t.Error("the lock file is not protected")
	}
	ups := c.Upstreams()
	if len(ups) != 2 || ups[0].Name != "memory" || ups[1].Name != "tracker" {
		t.Fatalf("upstreams %+v", ups)
	}
	m, tr := ups[0], ups[1]
	if !m.Contained() || tr.Contained() || m.Roots[0] != filepath.Join(dir, "rw2") || m.SecretEnv["TOKEN"] != filepath.Join(dir, "logs", "secret") {
		t.Errorf("memory %+v", m.UpstreamConfig)
	}
	if tr.Policy != filepath.Join(dir, "logs", "policy.json") || tr.Share != ShareSession {
		t.Errorf("tracker %+v", tr.UpstreamConfig)
	}
	caps, _ := c.Capabilities("assistant")
	if !capability.Set(caps).Grants(capability.Upstream("memory")) {
		t.Error("upstream:memory not granted")
	}
	if c.Tools["memory__create_entities"].MaxCalls != 5 {
		t.Error("the upstream tool's policy")
	}
	// A lock in a writable root is protected there.
	c, err = parseIn(t, dir, strings.Replace(upstreams, "logs/lock.json", "rw/lock.json", 1))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(c.Protected().Paths([]string{filepath.Join(dir, "rw")}), filepath.Join(dir, "rw", "lock.json")) {
		t.Error("a lock in a writable root is not protected")
	}
	// Without [upstream] lock, the lock is beside the configuration.
	c, err = parseIn(t, dir, strings.Replace(upstreams, "lock = \"logs/lock.json\"\n", "", 1))
	if err != nil {
		t.Fatal(err)
	}
	if c.LockFile() != filepath.Join(dir, DefaultLockName) {
		t.Errorf("default lock %s", c.LockFile())
	}
}

func TestUpstreamErrors(t *testing.T) {
	dir := tree(t)
	os.WriteFile(filepath.Join(dir, "logs", "secret"), []byte("x"), 0o600)
	for _, c := range []struct{ name, doc, want string }{
		{"command and url", "[upstream.a]\ncommand = [\"x\"]\nurl = \"https://x\"\npolicy = \"p\"\nread_only = [\"ro\"]\n", "give either command"},
		{"neither", "[upstream.a]\nshare = \"actor\"\n", "give either command"},
		{"url without policy", "[upstream.a]\nurl = \"https://x\"\n", "a url needs policy"},
		{"url with roots", "[upstream.a]\nurl = \"https://x\"\npolicy = \"p\"\nroots = [\"rw\"]\n", "upstream.a.roots: applies to a stdio server"},
		{"contained without roots", "[upstream.a]\ncommand = [\"x\"]\n", "a contained server needs roots or read_only"},
		{"uncontained with roots", "[upstream.a]\ncommand = [\"x\"]\ncontain = false\nroots = [\"rw\"]\n", "applies to a contained server"},
		{"bad name", "[upstream.my_server]\ncommand = [\"x\"]\ncontain = false\n", "upstream.my_server: upstream names are"},
		{"stray key", "[upstream]\nfoo = \"x\"\n", "[upstream] takes lock"},
		{"lock as a table", "[upstream.lock]\ncommand = [\"x\"]\n", "lock is [upstream]'s key"},
		{"unknown key", "[upstream.a]\ncommand = [\"x\"]\ncontain = false\nport = 3\n", "upstream.a.port: unknown key"},
		{"share", "[upstream.a]\ncommand = [\"x\"]\ncontain = false\nshare = \"all\"\n", "upstream.a.share: \"all\""},
		{"missing secret", "[upstream.a]\ncommand = [\"x\"]\ncontain = false\nsecret_env = { T = \"logs/none\" }\n", "is not a readable regular file"},
		{"secret in a writable root", "[upstream.a]\ncommand = [\"x\"]\ncontain = false\nsecret_env = { T = \"rw/secret\" }\n", "a model could rewrite it"},
		{"bad glob", "[upstream.a]\ncommand = [\"x\"]\ncontain = false\ntools = [\"[\"]\n", "is not a glob"},
		{"effect of no upstream", "[actor.bob]\neffects = [\"upstream:nope\"]\n", `"upstream:nope" names no configured upstream`},
		{"dir outside its roots", "[upstream.a]\ncommand = [\"x\"]\nroots = [\"rw2\"]\ndir = \"ro\"\n", "lies in none of its roots"},
		{"bad upstream tool name", "[upstream.a]\ncommand = [\"x\"]\ncontain = false\n[tool.\"a__b.c\"]\nmax_calls = 1\n", "an upstream tool's name is"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseIn(t, dir, roots+c.doc)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want %q", err, c.want)
			}
		})
	}
}
