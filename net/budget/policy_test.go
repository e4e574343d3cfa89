package budget

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

func TestParsePolicy(t *testing.T) {
	ctx := context.Background()
	base := `"format": 1, "group": "g", "window_seconds": 60, "window_requests": 10, "window_bytes": 100`
	refused := []struct{ doc, want string }{
		{`{` + base + `, "group": "h"}`, "duplicate"},
		{"{" + base + ",\n \"window\": 1}", `unknown field "/window" at line 2, column 2`},
		{`{"format": 1, "group": "", "window_seconds": 60, "window_requests": 10, "window_bytes": 100}`, "group must be 1 to"},
		{`{"format": 1, "group": "` + strings.Repeat("g", limits.BudgetMaxNameBytes+1) + `", "window_seconds": 60, "window_requests": 10, "window_bytes": 100}`, "group must be 1 to"},
		{`{"format": 1, "group": "g", "window_seconds": 0, "window_requests": 10, "window_bytes": 100}`, "window_seconds"},
		{fmt.Sprintf(`{"format": 1, "group": "g", "window_seconds": %d, "window_requests": 10, "window_bytes": 100}`, int64(limits.BudgetMaxWindow.Seconds())+1), "window_seconds"},
		{`{"format": 1, "group": "g", "window_seconds": 60, "window_requests": 0, "window_bytes": 100}`, "window_requests"},
		{fmt.Sprintf(`{"format": 1, "group": "g", "window_seconds": 60, "window_requests": %d, "window_bytes": 100}`, int64(limits.BudgetMaxWindowRequests)+1), "window_requests"},
		{fmt.Sprintf(`{"format": 1, "group": "g", "window_seconds": 60, "window_requests": 1, "window_bytes": %d}`, int64(limits.BudgetMaxWindowBytes)+1), "window_bytes"},
		{`{` + base + `, "task_requests": 11}`, "task_requests"},
		{`{` + base + `, "task_bytes": 101}`, "task_bytes"},
		{`{` + base + `, "min_interval_seconds": -1}`, "min_interval_seconds"},
		{fmt.Sprintf(`{`+base+`, "min_interval_seconds": %d}`, int64(limits.BudgetMaxMinInterval.Seconds())+1), "min_interval_seconds"},
		{`{` + base + `, "min_interval_seconds": 1.5}`, "must be a number"},
		{`{"format": 2, "group": "g", "window_seconds": 60, "window_requests": 10, "window_bytes": 100}`, `"format" must be 1`},
	}
	for _, c := range refused {
		_, err := ParsePolicy(ctx, []byte(c.doc))
		if fault.CodeOf(err) != fault.InvalidInput || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.70s: got %v, want invalid_input mentioning %q", c.doc, err, c.want)
		}
	}
	p, err := ParsePolicy(ctx, []byte(fmt.Sprintf(`{"format": 1, "group": "g", "window_seconds": %d, "window_requests": %d, "window_bytes": %d, "min_interval_seconds": %d}`,
		int64(limits.BudgetMaxWindow.Seconds()), int64(limits.BudgetMaxWindowRequests), int64(limits.BudgetMaxWindowBytes), int64(limits.BudgetMaxMinInterval.Seconds()))))
	if err != nil || p.TaskRequests != limits.BudgetMaxWindowRequests || p.TaskBytes != limits.BudgetMaxWindowBytes {
		t.Fatalf("at every limit: %+v %v", p, err)
	}
	if _, err := LoadPolicy(ctx, filepath.Join("..", "..", "examples", "budget-policy.json")); err != nil {
		t.Fatalf("example: %v", err)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := newFakeClock().now().Wall
	for _, c := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"120", 120, true}, {" 0 ", 0, true}, {"", 0, false}, {"soon", 0, false}, {"-5", 0, false},
		{now.Add(90 * 1e9).Format("Mon, 02 Jan 2006 15:04:05 GMT"), 90, true},
		{now.Add(-90 * 1e9).Format("Mon, 02 Jan 2006 15:04:05 GMT"), 0, true},
		{fmt.Sprint(int64(limits.BudgetMaxCooldown.Seconds())), limits.BudgetMaxCooldown.Seconds(), true},
	} {
		d, ok := parseRetryAfter(c.in, now)
		if ok != c.ok || d.Seconds() != c.want {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want %vs, %v", c.in, d, ok, c.want, c.ok)
		}
	}
	if d, ok := parseRetryAfter("99999999999999999999", now); !ok || d <= limits.BudgetMaxCooldown {
		t.Errorf("huge Retry-After = %v %v; want past the cooldown bound", d, ok)
	}
}

func FuzzParsePolicy(f *testing.F) {
	f.Add([]byte(`{"format": 1, "group": "g", "window_seconds": 60, "window_requests": 10, "window_bytes": 100}`))
	f.Add([]byte(`{"format": 1, "group": "g", "window_seconds": 60, "window_requests": 10, "window_bytes": 100, "task_bytes": 5, "min_interval_seconds": 3}`))
	f.Add([]byte(`{"format":1,"format":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePolicy(context.Background(), data)
		if err != nil {
			return
		}
		if p.TaskRequests < 1 || p.TaskRequests > p.WindowRequests || p.TaskBytes > p.WindowBytes || p.WindowSeconds < 1 {
			t.Fatalf("accepted %+v", p)
		}
	})
}
