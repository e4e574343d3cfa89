package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// dashServer starts `capkit serve --http 127.0.0.1:0 --dashboard
// 127.0.0.1:0` with args and returns the MCP endpoint and the page's
// address.
func dashServer(t *testing.T, args ...string) (string, string) {
	t.Helper()
	found, _ := startCapkit(t, append([]string{"serve", "--http", "127.0.0.1:0", "--dashboard", "127.0.0.1:0"}, args...), mcpLine, dashboardLine)
	return found[mcpLine], found[dashboardLine]
}

// TestServeDashboard: `capkit serve --dashboard` serves the page behind
// its token; a call made over MCP reaches the live stream and the table,
// a denial with its policy; no argument value sent appears in any answer;
// a non-loopback address without a token is refused at start.
func TestServeDashboard(t *testing.T) {
	const canary = "dash-canary-5d1e"
	dir := tree(t)
	token := "e2e-dashboard-token-0123456789"
	tokenFile := filepath.Join(dir, "dash-token")
	writePrivate(t, tokenFile, token+"\n")
	cfg := filepath.Join(dir, "capkit.toml")
	writePrivate(t, cfg, `[[root]]
path = "rw"
[actor.assistant]
effects = ["read_file", "write_file", "list"]
[tool.read_file]
max_calls = 1
`)
	endpoint, page := dashServer(t, "--config", cfg, "--dashboard-token-file", tokenFile)

	get := func(path, tok string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, strings.TrimSuffix(page, "/")+path, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/", ""); code != http.StatusUnauthorized {
		t.Fatalf("the page without the token: %d", code)
	}
	if code, body := get("/", token); code != http.StatusOK || !strings.Contains(body, `id="events"`) {
		t.Fatalf("the page: %d", code)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, page+"api/live", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("live: %v %v", err, resp)
	}
	defer resp.Body.Close()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()

	c := connect(t, &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1})
	if _, code := c.call(t, "write_file", map[string]any{"path": canary + ".txt", "content": canary + " content"}); code != "" {
		t.Fatalf("write_file: %s", code)
	}
	_, code := c.call(t, "edit_file", map[string]any{"path": canary + ".txt", "old_text": canary, "new_text": canary + "2"})
	want(t, "an edit the actor is not granted", code, "denied")
	if _, code := c.call(t, "read_file", map[string]any{"path": canary + ".txt"}); code != "" {
		t.Fatalf("read_file: %s", code)
	}
	_, code = c.call(t, "read_file", map[string]any{"path": canary + ".txt"})
	want(t, "a read past max_calls", code, "limit")

	var seen []string
	for len(seen) < 4 {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the live stream ended")
			}
			if strings.Contains(l, canary) {
				t.Errorf("the live stream shows an argument: %s", l)
			}
			if data, ok := strings.CutPrefix(l, "data: "); ok {
				var m struct {
					Events []struct{ Tool, Outcome string }
				}
				json.Unmarshal([]byte(data), &m)
				for _, e := range m.Events {
					seen = append(seen, e.Tool+":"+e.Outcome)
				}
			}
		case <-time.After(hangGuard):
			t.Fatalf("the live stream sent %v", seen)
		}
	}
	if strings.Join(seen, ",") != "write_file:ok,edit_file:denied,read_file:ok,read_file:limit" {
		t.Errorf("live: %v", seen)
	}

	for outcome, policy := range map[string]string{"denied": "grant:edit_file", "limit": "max_calls=1"} {
		code, body := get("/api/events?outcome="+outcome, token)
		var rows struct {
			Events []struct {
				Tool, Outcome, Policy string
				CallsLeft             *int64 `json:"calls_left"`
			}
		}
		if err := json.Unmarshal([]byte(body), &rows); code != http.StatusOK || err != nil || len(rows.Events) != 1 {
			t.Fatalf("%s: %d %s", outcome, code, body)
		}
		if r := rows.Events[0]; r.Policy != policy || outcome == "limit" && (r.CallsLeft == nil || *r.CallsLeft != 0) {
			t.Errorf("the %s row: %+v, want policy %s", outcome, r, policy)
		}
	}
	for _, path := range []string{"/", "/app.js", "/api/events", "/api/stats", "/api/state", "/api/stats?tool=write_file"} {
		if code, body := get(path, token); code != http.StatusOK || strings.Contains(body, canary) {
			t.Errorf("%s: %d, or it holds an argument's value", path, code)
		}
	}

	t.Run("refused beyond loopback without a token", func(t *testing.T) {
		code, _, stderr := run(t, "", "serve", "--root", filepath.Join(dir, "rw"), "--dashboard", "0.0.0.0:0")
		if code != 5 || !strings.Contains(stderr, "not a loopback address") {
			t.Errorf("exit %d: %s", code, stderr)
		}
		loose := filepath.Join(dir, "loose-token")
		writePrivate(t, loose, token)
		os.Chmod(loose, 0o644)
		code, _, stderr = run(t, "", "serve", "--root", filepath.Join(dir, "rw"), "--dashboard", "127.0.0.1:0", "--dashboard-token-file", loose)
		if code != 5 || !strings.Contains(stderr, "chmod 600") {
			t.Errorf("a token file others may read: exit %d: %s", code, stderr)
		}
		// MCP refused beyond loopback: the page never says it serves.
		code, _, stderr = run(t, "", "serve", "--root", filepath.Join(dir, "rw"), "--http", "0.0.0.0:0", "--dashboard", "127.0.0.1:0")
		if code != 5 || !strings.Contains(stderr, "not a loopback address") || strings.Contains(stderr, "dashboard on") {
			t.Errorf("--http beyond loopback without a token: exit %d: %s", code, stderr)
		}
	})
}

// TestDashboardOverATrail: `capkit dashboard --audit FILE` serves the
// trail `capkit call` wrote, its chain verified, and follows it: a call
// made after it started reaches its live stream.
func TestDashboardOverATrail(t *testing.T) {
	const canary = "trail-canary-93b1"
	dir := tree(t)
	cfg := filepath.Join(dir, "capkit.toml")
	trail := filepath.Join(dir, "logs", "audit.jsonl")
	if err := os.Mkdir(filepath.Join(dir, "logs"), 0o700); err != nil {
		t.Fatal(err)
	}
	writePrivate(t, cfg, "audit_log = \"logs/audit.jsonl\"\n[[root]]\npath = \"rw\"\n")
	for i := range 3 {
		if code, _, stderr := run(t, "", "--config", cfg, "call", "read_file", `{"path":"`+canary+strconv.Itoa(i)+`.txt"}`); code == 0 {
			t.Fatalf("read_file of a missing file succeeded: %s", stderr)
		}
	}
	found, _ := startCapkit(t, []string{"dashboard", "--audit", trail, "--listen", "127.0.0.1:0"}, dashboardLine)
	page := found[dashboardLine]
	getJSON := func(path string, v any) string {
		resp, err := http.Get(page + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || json.Unmarshal(b, v) != nil {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		if strings.Contains(string(b), canary) {
			t.Errorf("%s holds an argument's value", path)
		}
		return string(b)
	}
	var rows struct {
		Events   []struct{ Tool, Outcome string }
		Position string
	}
	getJSON("api/events", &rows)
	if len(rows.Events) != 3 || rows.Events[0].Tool != "read_file" || rows.Events[0].Outcome != "not_found" {
		t.Fatalf("the trail's rows: %+v", rows)
	}
	var st struct {
		Chain struct {
			Records, Total uint64
			Broken         string
		}
	}
	for st.Chain.Records < 3 {
		getJSON("api/state", &st)
		if st.Chain.Broken != "" {
			t.Fatalf("chain: %+v", st.Chain)
		}
		time.Sleep(50 * time.Millisecond) // the index reads the file in the background
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, page+"api/live?after="+rows.Position+"&tool=list_dir", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("live: %v", err)
	}
	defer resp.Body.Close()
	if code, _, stderr := run(t, "", "--config", cfg, "call", "list_dir", `{"path":"."}`); code != 0 {
		t.Fatalf("list_dir: %s", stderr)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			if !strings.Contains(data, `"tool":"list_dir"`) || strings.Contains(data, "read_file") {
				t.Errorf("live: %s", data)
			}
			break
		}
	}
}
