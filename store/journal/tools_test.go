package journal

import (
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
)

func TestTools(t *testing.T) {
	root, other := pdir(t), pdir(t)
	os.Mkdir(filepath.Join(root, "j"), 0o700)
	os.Symlink(other, filepath.Join(root, "escape"))
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	rt := testkit.Runtime(t, RegisterTools, nil)
	s := testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.JournalWrite, capability.JournalRead))
	rs := testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.JournalRead))
	call := func(s *kernel.Session, tool, args string) (map[string]any, error) {
		res, err := testkit.Call(t, s, tool, args)
		if err != nil {
			return nil, err
		}
		var out map[string]any
		json.Unmarshal(res.Structured, &out)
		return out, nil
	}
	out, err := call(s, "journal_append", `{"dir":"j","name":"ev","event":{"big":12345678901234567,"b":1}}`)
	if fault.CodeOf(err) != fault.InvalidInput {
		t.Fatalf("imprecise number accepted: %v %v", out, err)
	}
	if out, err = call(s, "journal_append", `{"dir":"j","name":"ev","event":{"z":1,"a":[true]}}`); err != nil || out["seq"] != 1.0 {
		t.Fatalf("append %v %v", out, err)
	}
	if out, err = call(s, "journal_append", `{"dir":"j","name":"ev","event":"second"}`); err != nil || out["seq"] != 2.0 {
		t.Fatalf("append %v %v", out, err)
	}
	if out, err = call(rs, "journal_verify", `{"dir":"j","name":"ev"}`); err != nil || out["records"] != 2.0 {
		t.Fatalf("verify %v %v", out, err)
	}
	res, err := rs.Call(ctx, "journal_read", json.RawMessage(`{"dir":"j","name":"ev","from":1,"limit":1}`))
	if err != nil || string(res.Structured) == "" {
		t.Fatal(err)
	}
	var rr ReadResult
	json.Unmarshal(res.Structured, &rr)
	if len(rr.Records) != 1 || string(rr.Records[0].Event) != `{"a":[true],"z":1}` {
		t.Fatalf("read %s", res.Structured)
	}
	cases := []struct {
		name, tool, args string
		s                *kernel.Session
		code             fault.Code
	}{
		{"read-only session appends", "journal_append", `{"dir":"j","name":"ev","event":1}`, rs, fault.Denied},
		{"dir outside roots", "journal_verify", `{"dir":"` + other + `","name":"ev"}`, s, fault.Denied},
		{"dir climbing out", "journal_append", `{"dir":"../x","name":"ev","event":1}`, s, fault.Denied},
		{"dir through a symlink out", "journal_append", `{"dir":"escape","name":"ev","event":1}`, s, fault.Denied},
		// A FIFO as the directory: refused without blocking on its open.
		{"dir is a FIFO", "journal_append", `{"dir":"fifo","name":"ev","event":1}`, s, fault.NotFound},
		{"dir is a FIFO, read", "journal_read", `{"dir":"fifo","name":"ev"}`, s, fault.NotFound},
		{"bad name", "journal_append", `{"dir":"j","name":"../ev","event":1}`, s, fault.InvalidInput},
		{"duplicate keys", "journal_append", `{"dir":"j","name":"ev","event":{"a":1,"a":2}}`, s, fault.InvalidInput},
		{"missing journal", "journal_verify", `{"dir":"j","name":"nope"}`, s, fault.NotFound},
		{"bad limit", "journal_read", `{"dir":"j","name":"ev","limit":1001}`, s, fault.InvalidInput},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := call(c.s, c.tool, c.args)
			if got := fault.CodeOf(err); got != c.code {
				t.Fatalf("code %q, want %q (%v)", got, c.code, err)
			}
		})
	}
	if entries, _ := os.ReadDir(other); len(entries) != 0 {
		t.Fatal("wrote outside the root")
	}
}
