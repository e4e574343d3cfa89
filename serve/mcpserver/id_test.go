package mcpserver

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/capkit/capkit/internal/testkit"
)

// stdioAnswers feeds lines to a stdio connection, answering calls as the
// SDK does, and returns the answer lines.
func stdioAnswers(t testing.TB, input string) []string {
	var out testkit.Buffer
	c := newStdioConn(strings.NewReader(input), &out, slog.New(slog.NewTextHandler(io.Discard, nil)), true, 1<<16)
	defer c.Close()
	for range 100 {
		msg, err := c.Read(context.Background())
		if err != nil {
			break
		}
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
			c.Write(context.Background(), &jsonrpc.Response{ID: req.ID, Result: []byte(`{}`)})
		}
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestStdioIDs: ids used to be rewritten (1.5 answered as 1; 1e300 and
// 2^63 as -2^63, so distinct requests collided) and a call with id null
// got no answer. An id is echoed as sent, or the request is refused with
// an error whose id is null.
func TestStdioIDs(t *testing.T) {
	for _, c := range []struct {
		id   string
		echo bool
	}{
		{"1", true}, {"-7", true}, {"0", true}, {"9007199254740991", true}, {`"x"`, true}, {`""`, true},
		{"1.5", false}, {"1e300", false}, {"9223372036854775808", false}, {"9007199254740992", false},
		{"null", false}, {"-0", false}, {"01", false}, {"1.0", false}, {"true", false}, {"{}", false}, {"[1]", false},
	} {
		lines := stdioAnswers(t, `{"jsonrpc":"2.0","id":`+c.id+`,"method":"ping"}`+"\n")
		if len(lines) != 1 {
			t.Errorf("id %s: %d answers, want 1: %q", c.id, len(lines), lines)
			continue
		}
		if echoed := strings.HasPrefix(lines[0], `{"jsonrpc":"2.0","id":`+c.id+`,"result"`); c.echo != echoed {
			t.Errorf("id %s: echoed %v, answer %s", c.id, !c.echo, lines[0])
		}
		if !c.echo && (!strings.Contains(lines[0], `"error"`) || !strings.HasPrefix(lines[0], `{"jsonrpc":"2.0","id":null,`)) {
			t.Errorf("id %s: want an error with \"id\": null (JSON-RPC 2.0 §5), got %s", c.id, lines[0])
		}
	}
}

// FuzzStdioID: whatever the id, the answer either carries the same id
// (the same JSON value) or is an error whose id is null.
func FuzzStdioID(f *testing.F) {
	for _, s := range []string{"1", "1.5", "1e300", "9223372036854775808", "null", `"a"`, "-0", `"\u00e9"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if !jsontext.Value(id).IsValid() || strings.ContainsAny(id, "\r\n") {
			return
		}
		lines := stdioAnswers(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`+"\n")
		if len(lines) != 1 {
			t.Fatalf("id %s: %d answers", id, len(lines))
		}
		var ans struct {
			ID    jsontext.Value `json:"id"`
			Error any            `json:"error"`
		}
		if err := jsonv2.Unmarshal([]byte(lines[0]), &ans); err != nil {
			t.Fatal(err)
		}
		if ans.Error != nil {
			if string(ans.ID) != "null" {
				t.Fatalf("error answer carries id %q, want null", ans.ID)
			}
			return
		}
		want, got := jsontext.Value(id), ans.ID.Clone()
		if want.Canonicalize() != nil || got.Canonicalize() != nil || !bytes.Equal(want, got) {
			t.Fatalf("id %s answered as %s", id, ans.ID)
		}
	})
}

// TestHTTPIDs: over HTTP too, an id that cannot be echoed exactly is
// refused with a JSON-RPC error whose id is null.
func TestHTTPIDs(t *testing.T) {
	s := newTestServer(t, nil)
	addr := serveLoopback(t, s)
	for _, c := range []struct {
		id, before, after string
		want              int
	}{
		{"1.5", "", "", http.StatusBadRequest}, {"9223372036854775808", "", "", http.StatusBadRequest},
		{"null", "", "", http.StatusBadRequest}, {"1", "", "", http.StatusOK},
		// Space before the message used to take it past the check.
		{"1.5", " \r\n", "", http.StatusBadRequest},
		// So did a batch (the SDK takes them for protocol 2025-03-26).
		{"1", "[", "]", http.StatusBadRequest},
	} {
		body := c.before + `{"jsonrpc":"2.0","id":` + c.id + `,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}` + c.after
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+Path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want || c.want != http.StatusOK && (!strings.Contains(string(data), "-32600") || !strings.HasPrefix(string(data), `{"jsonrpc":"2.0","id":null,`)) {
			t.Errorf("%s id %s%s: status %d, body %s", c.before, c.id, c.after, resp.StatusCode, data)
		}
	}
}
