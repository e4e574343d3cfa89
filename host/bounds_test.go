package host

import (
	"testing"

	"github.com/capkit/capkit/limits"
)

// TestOutputBoundsTokenSized: every tool a host registers answers within
// the token-sized default bound, except those whose one unit of result
// needs more (named here with why), and a [tool.NAME] max_output_bytes
// replaces a tool's bound.
func TestOutputBoundsTokenSized(t *testing.T) {
	larger := map[string]int64{
		"journal_read": limits.JournalReadOutputBytes, // one record of the largest event
		"zip_create":   limits.ZipCreateOutputBytes,   // the receipt of work that cannot be asked for again
	}
	dir := fixture(t)
	h, err := New(load(t, dir, base+"[catalog.notes.entries]\na = \"rw/a.txt\"\n[script]\nenabled = true\n[tool.csv_scan]\nmax_output_bytes = 4096\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, e := range h.Runtime.Catalog().Entries() {
		p, _ := h.Runtime.Policy(e.Name)
		want, ok := larger[e.Name]
		switch {
		case e.Name == "csv_scan":
			want = 4096
		case !ok:
			want = limits.DefaultMaxOutputBytes
		}
		if p.MaxOutputBytes != want {
			t.Errorf("%s: output bound %d, want %d", e.Name, p.MaxOutputBytes, want)
		}
	}
}
