package script

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// TestAskUser: prov.declassify with the AskUser hook makes a value
// trusted only when the caller's user says yes (kernel.Confirm, an MCP
// client's elicitation); a no, a caller with nobody to ask, a failed
// question and a host with no hook leave it untrusted, so the write that
// follows is refused. The audit names each decision and never the value.
func TestAskUser(t *testing.T) {
	f := newProvFixture(t, map[string]any{"u": "evil-value.txt"})
	src := `u = tool.call("src", {"key": "u"})["v"]
v = prov.declassify(u, "the user picks the file name")
tool.call("sink", {"a": v})
`
	var asked []string
	answer := func(yes bool, err error) kernel.Confirm {
		return func(_ context.Context, q string) (bool, error) {
			asked = append(asked, q)
			return yes, err
		}
	}
	cases := []struct {
		name    string
		confirm kernel.Confirm // nil: nobody to ask
		hook    bool
		want    fault.Code // "" : allowed
		audit   string
	}{
		{"approved", answer(true, nil), true, "", `"decision":"declassified"`},
		{"refused", answer(false, nil), true, fault.Denied, `"decision":"denied"`},
		{"nobody to ask", nil, true, fault.Denied, `"decision":"denied"`},
		{"the question failed", answer(true, fault.New(fault.Unavailable, "the client went away")), true, fault.Unavailable, `"decision":"failed"`},
		{"no hook", answer(true, nil), false, fault.Denied, `"decision":"denied"`},
	}
	for _, w := range []*Worker{nil, testWorker(t)} {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				asked, f.sunk = nil, nil
				f.audit.Reset()
				p := f.provPolicy()
				if c.hook {
					p.Declassify = AskUser
				}
				ctx := context.Background()
				if c.confirm != nil {
					ctx = kernel.WithConfirm(ctx, c.confirm)
				}
				_, err := Run(ctx, f.session(t), []byte(src), &Options{Provenance: p, Worker: w, Timeout: 10 * time.Second})
				if fault.CodeOf(err) != c.want && !(c.want == "" && err == nil) {
					t.Fatalf("got %v, want %q", err, c.want)
				}
				if c.want == "" && (len(f.sunk) != 1 || f.sunk[0]["a"] != "evil-value.txt") {
					t.Fatalf("sunk %v", f.sunk)
				}
				if c.want != "" && len(f.sunk) != 0 {
					t.Fatalf("sunk %v after a refusal", f.sunk)
				}
				if c.hook && c.confirm != nil {
					if len(asked) != 1 || !strings.Contains(asked[0], "the user picks the file name") || !strings.Contains(asked[0], `"evil-value.txt"`) || !strings.Contains(asked[0], "src") {
						t.Fatalf("asked %q", asked)
					}
				} else if len(asked) != 0 {
					t.Fatalf("asked %q without a hook that asks", asked)
				}
				trail := f.audit.String()
				if !strings.Contains(trail, `"tool":"prov.declassify"`) || !strings.Contains(trail, c.audit) || strings.Contains(trail, "evil-value") {
					t.Fatalf("audit %s", trail)
				}
			})
		}
	}
}

// TestDeclassifyQuestionBound: the question shows the value whole up to
// limits.ScriptDeclassifyShownBytes, cut past it.
func TestDeclassifyQuestionBound(t *testing.T) {
	for _, n := range []int{limits.ScriptDeclassifyShownBytes, limits.ScriptDeclassifyShownBytes + 1} {
		v := strings.Repeat("x", n)
		q := Declassification{Value: []byte(v), Sources: []string{"s"}, Reason: "r"}.Question()
		cut := !strings.Contains(q, v)
		if cut != (n > limits.ScriptDeclassifyShownBytes) || (cut && !strings.Contains(q, v[:limits.ScriptDeclassifyShownBytes]+"…")) {
			t.Fatalf("%d bytes: cut %v", n, cut)
		}
	}
}
