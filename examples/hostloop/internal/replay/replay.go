// Package replay serves a recorded model transcript on loopback: each
// request the SDK sends gets the next recorded response, once the test has
// checked what the request carries (the tools offered, the results fed
// back). No request leaves the machine.
package replay

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
)

// Turn is one exchange: the check of the request, then the response.
type Turn struct {
	// Check inspects the request body; nil checks nothing.
	Check func(req map[string]any) error
	// Response is the recorded response body.
	Response json.RawMessage
}

// Server answers the turns in order.
type Server struct {
	URL   string
	mu    sync.Mutex
	turns []Turn
	next  int
	errs  []error
}

// Start serves turns until the test ends.
func Start(t testing.TB, turns []Turn) *Server {
	s := &Server{turns: turns}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	var req map[string]any
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil || s.next >= len(s.turns) {
		s.errs = append(s.errs, fmt.Errorf("request %d (%s): %v; %d turns recorded", s.next+1, r.URL.Path, err, len(s.turns)))
		http.Error(w, `{"error":{"message":"no such turn"}}`, http.StatusBadRequest)
		return
	}
	turn := s.turns[s.next]
	s.next++
	if turn.Check != nil {
		if err := turn.Check(req); err != nil {
			s.errs = append(s.errs, fmt.Errorf("request %d: %w\n%s", s.next, err, body))
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(turn.Response)
}

// Done fails the test unless every turn was asked for and every check
// passed.
func (s *Server) Done(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, err := range s.errs {
		t.Error(err)
	}
	if s.next != len(s.turns) {
		t.Errorf("%d of %d recorded turns were asked for", s.next, len(s.turns))
	}
}

// Load reads a transcript's responses: a JSON array of response bodies.
func Load(t testing.TB, path string) []json.RawMessage {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []json.RawMessage
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}
