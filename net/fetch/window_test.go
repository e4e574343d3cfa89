package fetch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/internal/testkit/nettest"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/kernel/catalog"
	"github.com/capkit/capkit/net/budget"
)

// windowBody has whole lines, multi-byte characters and a last line too
// long for a small window, so windows end on lines and on characters.
var windowBody = strings.Repeat("héllo wörld, one line\n", 300) + strings.Repeat("ü", 3000)

func fetchWindow(t *testing.T, max, offset int64) (FetchResult, int64, error) {
	t.Helper()
	call := &kernel.Call{Tool: &catalog.Entry{Name: "net_fetch"}, MaxOutputBytes: max}
	r := FetchResult{Receipt: &Receipt{URL: "https://example.com/", FinalURL: "https://example.com/", Status: 200, ExpandedBytes: int64(len(windowBody))}}
	if err := r.window(call, []byte(windowBody), offset); err != nil {
		return r, 0, err
	}
	res, err := kernel.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	return r, res.Size(), nil
}

func TestFetchWindowEdges(t *testing.T) {
	_, whole, err := fetchWindow(t, 1<<30, 0)
	if err != nil {
		t.Fatal(err)
	}
	// At the bound the whole body comes back; one byte less gives a window
	// that ends on a whole line and names where the next starts.
	r, size, err := fetchWindow(t, whole, 0)
	if err != nil || r.NextOffset != 0 || r.body != windowBody || size != whole {
		t.Fatalf("at the bound: next %d, %d bytes of %d, %v", r.NextOffset, size, whole, err)
	}
	r, size, err = fetchWindow(t, whole-1, 0)
	if err != nil || r.NextOffset != int64(len(r.body)) || !strings.HasSuffix(r.body, "\n") || size > whole-1 {
		t.Fatalf("one past the bound: next %d, shown %d, %d bytes, %v", r.NextOffset, len(r.body), size, err)
	}
	if !strings.Contains(r.ToolText(), fmt.Sprintf("net_fetch with offset=%d", r.NextOffset)) {
		t.Fatalf("the text does not say how to go on: %q", r.ToolText()[:200])
	}
	// Small windows, read one after another, give the body back exactly;
	// each fits its bound.
	const small = 2048
	var got strings.Builder
	for off := int64(0); ; {
		r, size, err := fetchWindow(t, small, off)
		if err != nil || size > small || r.body == "" || !utf8.ValidString(r.body) {
			t.Fatalf("window at %d: %d bytes shown, result %d bytes, %v", off, len(r.body), size, err)
		}
		got.WriteString(r.body)
		if r.NextOffset == 0 {
			break
		}
		off = r.NextOffset
	}
	if got.String() != windowBody {
		t.Fatalf("reassembled %d bytes, want %d", got.Len(), len(windowBody))
	}
	// A bound the receipt alone fills fails with limit and says how to
	// raise it; offsets outside the body or inside a character are refused.
	if _, _, err := fetchWindow(t, 300, 0); fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), "[tool.net_fetch] max_output_bytes") {
		t.Fatalf("a bound too small for one character: %v", err)
	}
	for _, off := range []int64{-1, int64(len(windowBody)) + 1, int64(strings.Index(windowBody, "é") + 1)} {
		if _, _, err := fetchWindow(t, whole, off); fault.CodeOf(err) != fault.InvalidInput {
			t.Fatalf("offset %d: %v", off, err)
		}
	}
}

// TestFetchWindowBounds: at every bound from the whole result's size
// down, a window either holds the whole body, or part of it and the
// offset of the rest, or fails with limit naming the setting; no bound
// fails above one that succeeds. The text says that the next window
// fetches the URL again.
func TestFetchWindowBounds(t *testing.T) {
	_, whole, err := fetchWindow(t, 1<<30, 0)
	if err != nil {
		t.Fatal(err)
	}
	var failed int64
	for max := whole; max >= 16; max = max * 7 / 8 {
		r, size, err := fetchWindow(t, max, 0)
		switch {
		case err != nil:
			if fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), "[tool.net_fetch] max_output_bytes") {
				t.Fatalf("at %d bytes: %v", max, err)
			}
			failed = max
		case failed != 0:
			t.Fatalf("fails at %d bytes and succeeds at %d", failed, max)
		case size > max || r.body == "" || (r.NextOffset == 0) != (r.body == windowBody) || r.NextOffset != 0 && r.NextOffset != int64(len(r.body)):
			t.Fatalf("at %d bytes: %d shown, next %d, %d bytes", max, len(r.body), r.NextOffset, size)
		case r.NextOffset != 0 && !strings.Contains(r.ToolText(), "fetches the URL again"):
			t.Fatalf("at %d bytes the text does not say the next window fetches again: %q", max, r.ToolText()[:300])
		}
	}
	if failed == 0 {
		t.Fatal("no bound was too small")
	}
}

// TestNetFetchToolWindows drives the tool itself under a small bound:
// following next_offset (with the body's sha256) fetches the URL again and
// reaches the body's end; a body that changed in between fails.
func TestNetFetchToolWindows(t *testing.T) {
	ca := nettest.NewCA(t)
	var changes atomic.Int64
	port := ca.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/changing" {
			fmt.Fprintf(w, "%s%d", windowBody, changes.Add(1))
			return
		}
		fmt.Fprint(w, windowBody)
	}), "example.com")
	d := nettest.StartDNS(t, map[string][]string{"example.com": {"127.0.0.1"}})
	b, err := budget.Open(context.Background(), filepath.Join(t.TempDir(), "root"), &budget.Policy{Format: 1, Group: "up", WindowSeconds: 60, WindowRequests: 1000, WindowBytes: 1 << 40}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rt := testkit.RuntimeBound(t, RegisterTools, &ToolOptions{Policy: loopbackPolicy(t, ca, port, ""), Fetch: &Options{Resolver: d.Resolver(), Budget: b}}, 8192)
	s := testkit.Session(t, rt, testkit.Grant(t, nil, capability.NetFetch))
	url := fmt.Sprintf("https://example.com:%d/", port)
	var got strings.Builder
	args := map[string]any{"url": url}
	windows := 0
	for ; windows < 1000; windows++ {
		res, err := testkit.Call(t, s, "net_fetch", args)
		if err != nil || res.Size() > 8192 {
			t.Fatalf("window %d: %v", windows, err)
		}
		var r FetchResult
		if err := json.Unmarshal(res.Structured, &r); err != nil {
			t.Fatal(err)
		}
		_, body, _ := strings.Cut(res.Text, "\n\n")
		got.WriteString(body)
		if r.NextOffset == 0 {
			break
		}
		args = map[string]any{"url": url, "offset": r.NextOffset, "sha256": r.Receipt.SHA256}
	}
	if windows < 1 || got.String() != windowBody { // windows counts the calls after the first
		t.Fatalf("%d windows reassemble %d bytes, want %d", windows, got.Len(), len(windowBody))
	}
	first, err := testkit.Call(t, s, "net_fetch", map[string]any{"url": url + "changing"})
	if err != nil {
		t.Fatal(err)
	}
	var r FetchResult
	json.Unmarshal(first.Structured, &r)
	_, err = testkit.Call(t, s, "net_fetch", map[string]any{"url": url + "changing", "offset": r.NextOffset, "sha256": r.Receipt.SHA256})
	wantCode(t, err, fault.Integrity, "the body changed")
}
