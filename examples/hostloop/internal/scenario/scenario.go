// Package scenario is the conversation every example loop's test plays:
// on a root holding notes.txt and other.txt, the model lists the root,
// searches for a tool, reads notes.txt, edits it, tries to edit other.txt
// without reading it and is refused (conflict), then stops. The recorded
// responses are each provider's; the checks of what each request carries
// are the same for all.
package scenario

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/capkit/capkit/examples/hostloop/internal/replay"
	"github.com/capkit/capkit/host"
	"github.com/capkit/capkit/host/config"
	"github.com/capkit/capkit/internal/testkit/toolrules"
	"github.com/capkit/capkit/kernel"
)

// Prompt is the user's request the transcripts answer.
const Prompt = "In notes.txt, change the status from draft to final; leave other.txt alone."

// Root makes the root and a host over it, and returns the model's session
// (not trusted) and the host's instructions for its system prompt.
func Root(t *testing.T) (root string, s *kernel.Session, system string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"notes.txt": "status: draft\n", "other.txt": "keep\n"} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.FromFlags([]string{root}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	if s, err = h.NewSession(config.DefaultActor, false); err != nil {
		t.Fatal(err)
	}
	return root, s, h.Instructions(s)
}

// Extract reads a provider's request: the names of the tools it offers,
// their definitions as the SDK sent them, and the texts of the tool
// results it feeds back, oldest first.
type Extract struct {
	// Format is the request's format (serve/hostloop's name), whose
	// published rules every request's definitions are held to.
	Format string
	// Strict: the loop asked for strict mode, so some definitions must
	// arrive strict.
	Strict  bool
	Tools   func(req map[string]any) []string
	Defs    func(req map[string]any) []any
	Results func(req map[string]any) []string
}

// Turns pairs the provider's recorded responses with the scenario's
// checks.
func Turns(t *testing.T, responses []json.RawMessage, x Extract) []replay.Turn {
	t.Helper()
	checks := []func(req map[string]any) error{
		func(req map[string]any) error {
			return offers(x.Tools(req), []string{"list_dir", "read_file", "edit_file", "tool_search"}, []string{"move_file"})
		},
		lastResult(x, "notes.txt"),
		func(req map[string]any) error {
			if err := offers(x.Tools(req), []string{"move_file"}, nil); err != nil {
				return fmt.Errorf("after tool_search: %w", err)
			}
			return lastResult(x, "move_file")(req)
		},
		lastResult(x, "status: draft"),
		lastResult(x, "1 replacement"),
		lastResult(x, "conflict: "),
	}
	if len(responses) != len(checks) {
		t.Fatalf("%d responses recorded, the scenario has %d turns", len(responses), len(checks))
	}
	turns := make([]replay.Turn, len(checks))
	for i, check := range checks {
		turns[i] = replay.Turn{Check: func(req map[string]any) error {
			if err := keepsRules(x, req); err != nil {
				return err
			}
			return check(req)
		}, Response: responses[i]}
	}
	return turns
}

// keepsRules checks the tool definitions of a request, as the SDK wrote
// them, against the provider's published rules.
func keepsRules(x Extract, req map[string]any) error {
	defs := x.Defs(req)
	raw := make([]json.RawMessage, len(defs))
	strict := 0
	for i, d := range defs {
		b, err := json.Marshal(d)
		if err != nil {
			return err
		}
		raw[i] = b
		if Path(d, "strict") == true || Path(d, "function", "strict") == true {
			strict++
		}
	}
	if err := toolrules.Check(x.Format, raw); err != nil {
		return fmt.Errorf("the tools as sent break the %s rules: %w", x.Format, err)
	}
	if x.Strict && strict == 0 {
		return fmt.Errorf("strict mode was asked for and no tool arrived strict")
	}
	return nil
}

func offers(tools, want, not []string) error {
	for _, w := range want {
		if !slices.Contains(tools, w) {
			return fmt.Errorf("the request does not offer %s: %v", w, tools)
		}
	}
	for _, n := range not {
		if slices.Contains(tools, n) {
			return fmt.Errorf("the request offers %s before any search: %v", n, tools)
		}
	}
	return nil
}

func lastResult(x Extract, want string) func(map[string]any) error {
	return func(req map[string]any) error {
		rs := x.Results(req)
		if len(rs) == 0 || !strings.Contains(rs[len(rs)-1], want) {
			return fmt.Errorf("the last tool result does not say %q: %q", want, rs)
		}
		return nil
	}
}

// After checks the root once the conversation is over: notes.txt edited,
// other.txt as it was.
func After(t *testing.T, root string) {
	t.Helper()
	for name, want := range map[string]string{"notes.txt": "status: final\n", "other.txt": "keep\n"} {
		if got, err := os.ReadFile(filepath.Join(root, name)); err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
}

// Path walks decoded JSON: map keys and, for numbers, list indexes;
// nil when the path is not there.
func Path(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k < 0 {
				k += len(l)
			}
			if k < 0 || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// List is v as a list.
func List(v any) []any { l, _ := v.([]any); return l }

// Str is v as a string.
func Str(v any) string { s, _ := v.(string); return s }
