package fixedfiles

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

type toolFixture struct {
	rt         *kernel.Runtime
	audit, log *testkit.Buffer
	dir        string
}

// Identifiers chosen to be unique strings, so a test can look for them in
// every output.
const (
	idOK      = "zq-notes"
	idBig     = "zq-big"
	idBad     = "zq-badutf8"
	idIOFail  = "zq-iofail"
	idPolicy  = "zq-over-policy"
	idUnknown = "zq-unknown"
	content   = "release notes: use the grep tool\n"
)

func newToolFixture(t *testing.T) *toolFixture {
	t.Helper()
	f := &toolFixture{audit: &testkit.Buffer{}, log: &testkit.Buffer{}, dir: t.TempDir()}
	b := newBuilder(t, &Options{MaxFileBytes: 100})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.InsertPath(idOK, writeFile(t, f.dir, "notes.txt", []byte(content))))
	big := writeFile(t, f.dir, "big.txt", []byte("small for now"))
	must(b.InsertPath(idBig, big))
	must(b.InsertPath(idBad, writeFile(t, f.dir, "bad.txt", []byte("bad \xff"))))
	must(b.InsertPath(idPolicy, writeFile(t, f.dir, "policy.txt", bytes.Repeat([]byte("p"), 60))))
	io, err := os.Open(writeFile(t, f.dir, "io.txt", []byte("io")))
	must(err)
	must(b.InsertOpen(idIOFail, io))
	cat := build(t, b)
	// After registration: the entry grows over the catalog bound and the
	// descriptor behind another fails.
	must(os.WriteFile(big, bytes.Repeat([]byte("b"), 101), 0o644))
	io.Close()

	kb := kernel.NewBuilder(&kernel.Options{
		Audit: slog.New(slog.NewJSONHandler(f.audit, nil)),
		Log:   slog.New(slog.NewJSONHandler(f.log, nil)),
		PolicyOverride: func(p kernel.Policy) kernel.Policy {
			p.MaxCalls, p.MaxOutputBytes = 20, 50
			return p
		},
	})
	must(RegisterTools(kb, &ToolOptions{Catalogs: []CatalogTool{{Name: "notes", Catalog: cat}}}))
	rt, err := kb.Build()
	must(err)
	f.rt = rt
	return f
}

func (f *toolFixture) session(t *testing.T, trusted bool, resources ...string) *kernel.Session {
	t.Helper()
	c, err := capability.New("agent", []capability.Effect{capability.CatalogRead}, capability.Scope{Resources: resources})
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.rt.NewSession("agent", []capability.Capability{c}, &kernel.SessionOptions{Trusted: trusted})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func call(s *kernel.Session, id string) (*kernel.Result, error) {
	args, _ := json.Marshal(map[string]string{"id": id})
	return s.Call(context.Background(), "notes", args)
}

func TestToolReads(t *testing.T) {
	f := newToolFixture(t)
	s := f.session(t, false, "notes")
	res, err := call(s, idOK)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != content || res.Structured != nil {
		t.Fatalf("result %+v", res)
	}
}

// TestToolFailuresIndistinguishable: an unknown identifier and every kind
// of failed read look the same to the caller, and carry no identifier,
// path or OS error text; the host log has the detail.
func TestToolFailuresIndistinguishable(t *testing.T) {
	f := newToolFixture(t)
	s := f.session(t, false, "notes")
	cases := []struct {
		name, id, logDetail string
	}{
		{"unknown identifier", idUnknown, "no catalog entry"},
		{"over the catalog bound", idBig, "exceeds the limit"},
		{"over the policy bound", idPolicy, "exceeds the limit"},
		{"invalid UTF-8", idBad, "not valid UTF-8"},
		{"i/o failure", idIOFail, "file already closed"},
	}
	var first string
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := call(s, c.id)
			if err == nil {
				t.Fatalf("success: %+v", res)
			}
			fe := err.(*fault.Error)
			if fe.Code != fault.NotFound || fe.Err != nil {
				t.Fatalf("caller sees %#v", fe)
			}
			msg := err.Error()
			if first == "" {
				first = msg
			}
			if msg != first {
				t.Fatalf("message %q differs from %q", msg, first)
			}
			for _, leak := range []string{c.id, "zq-", f.dir, "/tmp", ".txt", "closed", "UTF-8", "bytes", "unknown", "no such"} {
				if strings.Contains(msg, leak) {
					t.Fatalf("caller message %q contains %q", msg, leak)
				}
			}
			if !strings.Contains(f.log.String(), c.logDetail) || !strings.Contains(f.log.String(), c.id) {
				t.Fatalf("host log lacks the detail %q for %s: %s", c.logDetail, c.id, f.log.String())
			}
		})
	}
}

func TestToolTrustedSessionGetsDetail(t *testing.T) {
	f := newToolFixture(t)
	s := f.session(t, true, "notes")
	_, err := call(s, idBig)
	if err == nil || !strings.Contains(err.Error(), "big.txt") {
		t.Fatalf("trusted caller lacks detail: %v", err)
	}
}

func TestToolAuditCarriesNoIdentifier(t *testing.T) {
	f := newToolFixture(t)
	s := f.session(t, false, "notes")
	for _, id := range []string{idOK, idUnknown, idBig, idBad} {
		call(s, id)
	}
	audit := f.audit.String()
	if n := strings.Count(audit, "\n"); n != 4 {
		t.Fatalf("want 4 audit lines, got %d: %s", n, audit)
	}
	for _, leak := range []string{"zq-", "release notes", f.dir} {
		if strings.Contains(audit, leak) {
			t.Fatalf("audit contains %q: %s", leak, audit)
		}
	}
	if !strings.Contains(audit, `"tool":"notes"`) || !strings.Contains(audit, `"out_bytes":33`) {
		t.Fatalf("audit lacks tool or byte count: %s", audit)
	}
}

func TestToolRules(t *testing.T) {
	f := newToolFixture(t)
	t.Run("invalid identifier syntax", func(t *testing.T) {
		_, err := call(f.session(t, false, "notes"), "../etc/passwd")
		if fault.CodeOf(err) != fault.InvalidInput {
			t.Fatalf("%v", err)
		}
	})
	t.Run("unknown member", func(t *testing.T) {
		_, err := f.session(t, false, "notes").Call(context.Background(), "notes", json.RawMessage(`{"id":"a","path":"/etc"}`))
		if fault.CodeOf(err) != fault.InvalidInput {
			t.Fatalf("%v", err)
		}
	})
	t.Run("input bound", func(t *testing.T) {
		_, err := f.session(t, false, "notes").Call(context.Background(), "notes", json.RawMessage(`{"id":"`+strings.Repeat("a", 300)+`"}`))
		if fault.CodeOf(err) != fault.Limit {
			t.Fatalf("%v", err)
		}
	})
	t.Run("resource not granted", func(t *testing.T) {
		for _, res := range [][]string{nil, {"other"}} {
			_, err := call(f.session(t, false, res...), idOK)
			if fault.CodeOf(err) != fault.Denied {
				t.Fatalf("%v: %v", res, err)
			}
		}
	})
	t.Run("call budget", func(t *testing.T) {
		s := f.session(t, false, "notes")
		for range 20 {
			if _, err := call(s, idOK); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := call(s, idOK); fault.CodeOf(err) != fault.Limit {
			t.Fatalf("21st call: %v", err)
		}
	})
}

func TestRegisterToolRefusals(t *testing.T) {
	b, _ := NewBuilder(nil)
	cat, _ := b.Build()
	kb := kernel.NewBuilder(nil)
	if err := RegisterTools(kb, &ToolOptions{Catalogs: []CatalogTool{{Name: "x"}}}); err == nil {
		t.Fatal("nil catalog accepted")
	}
	if err := RegisterTools(kb, &ToolOptions{Catalogs: []CatalogTool{{Name: "x", Catalog: cat}}}); err != nil {
		t.Fatal(err)
	}
	rt, err := kb.Build()
	if err != nil {
		t.Fatal(err)
	}
	e, _, _ := rt.Catalog().Lookup("x")
	if !strings.Contains(e.Description, limits.Bytes(limits.CatalogDefaultFileBytes)) || !strings.Contains(e.Description, `{"id": "release.notes"}`) {
		t.Fatalf("default description: %s", e.Description)
	}
}

// TestCatalogBoundCoversEntries: a catalog whose entries may be larger
// than the kernel's default output bound gets a bound that holds its
// largest entry, so an entry at its max_file_bytes is read whole.
func TestCatalogBoundCoversEntries(t *testing.T) {
	max := int64(limits.DefaultMaxOutputBytes + 50*limits.KiB)
	dir := t.TempDir()
	b := newBuilder(t, &Options{MaxFileBytes: max})
	whole := strings.Repeat("x", int(max))
	if err := b.InsertPath("big", writeFile(t, dir, "big.txt", []byte(whole))); err != nil {
		t.Fatal(err)
	}
	rt := testkit.Runtime(t, RegisterTools, &ToolOptions{Catalogs: []CatalogTool{{Name: "notes", Catalog: build(t, b)}}})
	if p, _ := rt.Policy("notes"); p.MaxOutputBytes != max {
		t.Fatalf("policy %+v", p)
	}
	c, err := capability.New(testkit.Actor, []capability.Effect{capability.CatalogRead}, capability.Scope{Resources: []string{"notes"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := testkit.Call(t, testkit.Session(t, rt, c), "notes", map[string]string{"id": "big"})
	if err != nil || res.Text != whole {
		t.Fatalf("%v", err)
	}
}
