package dashboard

import (
	"net/url"
	"testing"

	"github.com/capkit/capkit/audit"
	"github.com/capkit/capkit/fault"
)

// FuzzParseFilter: any query either fails with invalid_input or gives a
// filter whose outcome is ok, error, a fault code or none.
func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{"", "actor=a&tool=b", "outcome=denied", "outcome=error", "from=2026-12-02T08:00:00Z&to=2026-12-02T09:00:00.5+01:00",
		"from=yesterday", "outcome=%00", "actor=%ff%fe&outcome=ok&outcome=denied"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		v, err := url.ParseQuery(q)
		if err != nil {
			return
		}
		flt, err := ParseFilter(v)
		if err != nil {
			if fault.CodeOf(err) != fault.InvalidInput {
				t.Fatalf("%q: %v", q, err)
			}
			return
		}
		switch o := flt.Outcome; {
		case o == "", o == audit.OutcomeOK, o == audit.OutcomeError, fault.Code(o).Valid():
		default:
			t.Fatalf("%q: outcome %q accepted", q, o)
		}
	})
}
