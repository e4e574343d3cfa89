package fetch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

func TestParsePolicyStrict(t *testing.T) {
	ctx := context.Background()
	refused := []struct {
		doc  string
		code fault.Code
		want string
	}{
		{`{"format": 1, "ports": [8443], "ports": [9443]}`, fault.InvalidInput, "line 1, column 32"},
		{"{\"format\": 1,\n  \"max_bytes\": 5}", fault.InvalidInput, `unknown field "/max_bytes" at line 2, column 3`},
		{`{"format": 2}`, fault.InvalidInput, `"format" must be 1`},
		{`{}`, fault.InvalidInput, `"format" must be 1`},
		{`{"format": "1"}`, fault.InvalidInput, "value must be a number"},
		{`{"format": 1, "ports": [0]}`, fault.InvalidInput, "port 0"},
		{`{"format": 1, "ports": [65536]}`, fault.InvalidInput, "port 65536"},
		{`{"format": 1, "private_destinations": ["0.0.0.0/0"]}`, fault.InvalidInput, "wider than /8"},
		{`{"format": 1, "private_destinations": ["::/0"]}`, fault.InvalidInput, "wider than /32"},
		{`{"format": 1, "private_destinations": ["10.2.0.1/24"]}`, fault.InvalidInput, "host bits"},
		{`{"format": 1, "private_destinations": ["intranet"]}`, fault.InvalidInput, "not an address"},
		{`{"format": 1, "ca_file": "ca.pem"}`, fault.InvalidInput, "LoadPolicy"},
		{`{"format": 1} {}`, fault.InvalidInput, "line 1, column 15"},
		{fmt.Sprintf(`{"format": 1, "max_response_bytes": %d}`, limits.FetchMaxResponseBytes+1), fault.InvalidInput, "max_response_bytes"},
		{fmt.Sprintf(`{"format": 1, "max_expanded_bytes": %d}`, limits.FetchMaxExpandedBytes+1), fault.InvalidInput, "max_expanded_bytes"},
		{fmt.Sprintf(`{"format": 1, "max_requests": %d}`, limits.FetchMaxRequests+1), fault.InvalidInput, "max_requests"},
		{fmt.Sprintf(`{"format": 1, "max_redirects": %d}`, limits.FetchMaxRedirects+1), fault.InvalidInput, "max_redirects"},
		{`{"format": 1, "deadline_seconds": 61}`, fault.InvalidInput, "deadline_seconds"},
		{`{"format": 1, "deadline_seconds": -1}`, fault.InvalidInput, "deadline_seconds"},
		{`{"format": 1, "ports": [` + strings.Repeat("1,", limits.FetchMaxPorts) + `1]}`, fault.Limit, "ports"},
		{`{"format": 1, "x": "` + strings.Repeat("a", limits.PolicyFileMaxBytes) + `"}`, fault.Limit, "exceeds"},
	}
	for _, c := range refused {
		_, err := ParsePolicy(ctx, []byte(c.doc), "")
		if fault.CodeOf(err) != c.code || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.60s: got %v, want %s mentioning %q", c.doc, err, c.code, c.want)
		}
	}
	p, err := ParsePolicy(ctx, []byte(fmt.Sprintf(`{"format": 1, "max_response_bytes": %d, "max_expanded_bytes": %d, "max_requests": %d, "max_redirects": %d, "deadline_seconds": 60, "ports": [`+strings.Repeat("1,", limits.FetchMaxPorts-1)+`1]}`,
		limits.FetchMaxResponseBytes, limits.FetchMaxExpandedBytes, limits.FetchMaxRequests, limits.FetchMaxRedirects)), "")
	if err != nil || p.Deadline() != limits.FetchMaxDeadline {
		t.Fatalf("policy at every limit: %v", err)
	}
	p, err = ParsePolicy(ctx, []byte(`{"format": 1}`), "")
	if err != nil || p.MaxResponseBytes != limits.FetchMaxResponseBytes || p.MaxRedirects != limits.FetchMaxRedirects {
		t.Fatalf("zero means the limit: %+v %v", p, err)
	}
}

func TestExamplePolicyLoads(t *testing.T) {
	p, err := LoadPolicy(context.Background(), filepath.Join("..", "..", "examples", "http-policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	if p.MaxRedirects == 0 || len(p.PrivateDestinations) == 0 {
		t.Fatalf("example policy %+v", p)
	}
}

func TestExampleRegistryPolicyLoads(t *testing.T) {
	p, err := LoadPolicy(context.Background(), filepath.Join("..", "..", "examples", "registry-policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !p.AllowsHost("registry.example.org") || !p.AllowsHost("a.files.example.org") || p.AllowsHost("files.example.org") {
		t.Fatalf("example registry policy %+v", p)
	}
}

func TestLoadPolicyCAFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "p.json"), []byte(`{"format": 1, "ca_file": "none.pem"}`), 0o600)
	_, err := LoadPolicy(context.Background(), filepath.Join(dir, "p.json"))
	wantCode(t, err, fault.NotFound, "ca_file")
	os.WriteFile(filepath.Join(dir, "bad.pem"), []byte("not pem"), 0o600)
	os.WriteFile(filepath.Join(dir, "p.json"), []byte(`{"format": 1, "ca_file": "bad.pem"}`), 0o600)
	_, err = LoadPolicy(context.Background(), filepath.Join(dir, "p.json"))
	wantCode(t, err, fault.InvalidInput, "no PEM certificate")
}

func FuzzParsePolicy(f *testing.F) {
	for _, s := range []string{`{"format": 1}`, `{"format": 1, "ports": [8443], "private_destinations": ["10.2.0.0/24"]}`, `{"format":1,"max_requests":5}`, `[]`, `{"format": 1, "format": 1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePolicy(context.Background(), data, "")
		if err != nil {
			if fault.CodeOf(err) != fault.InvalidInput && fault.CodeOf(err) != fault.Limit {
				t.Fatalf("unexpected code: %v", err)
			}
			return
		}
		if p.MaxResponseBytes < 1 || p.MaxResponseBytes > limits.FetchMaxResponseBytes || p.Deadline() > limits.FetchMaxDeadline || p.Deadline() <= 0 {
			t.Fatalf("accepted out-of-bounds policy %+v", p)
		}
	})
}
