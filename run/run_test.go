package run

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/net/egress"
	"github.com/capkit/capkit/net/fetch"
)

func TestShellRequestBounds(t *testing.T) {
	r := NewRunner([]string{"helper"}, nil)
	max := 10 * time.Second
	for _, tc := range []struct {
		name string
		in   ShellArgs
		code fault.Code
	}{
		{"command at the bound", ShellArgs{Command: strings.Repeat("x", limits.RunMaxCommandBytes)}, ""},
		{"command one past", ShellArgs{Command: strings.Repeat("x", limits.RunMaxCommandBytes+1)}, fault.Limit},
		{"stdin at the bound", ShellArgs{Command: "cat", Stdin: strings.Repeat("x", limits.RunMaxStdinBytes)}, ""},
		{"stdin one past", ShellArgs{Command: "cat", Stdin: strings.Repeat("x", limits.RunMaxStdinBytes+1)}, fault.Limit},
		{"timeout at the host's", ShellArgs{Command: "true", TimeoutSeconds: 10}, ""},
		{"timeout one past", ShellArgs{Command: "true", TimeoutSeconds: 11}, fault.Limit},
		{"negative timeout", ShellArgs{Command: "true", TimeoutSeconds: -1}, fault.InvalidInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.shellRequest(tc.in, max)
			if fault.CodeOf(err) != tc.code {
				t.Errorf("err = %v, want %q", err, tc.code)
			}
		})
	}
}

func TestDeclaredArgumentBounds(t *testing.T) {
	set := map[string]Command{"": {Argv: []string{"go", "test"}, Args: regexp.MustCompile(`^(?:x+)$`)}}
	for _, tc := range []struct {
		name string
		args []string
		code fault.Code
	}{
		{"count at the bound", repeat("x", limits.RunMaxArgs), ""},
		{"count one past", repeat("x", limits.RunMaxArgs+1), fault.Limit},
		{"bytes at the bound", []string{strings.Repeat("x", limits.RunMaxArgBytes)}, ""},
		{"bytes one past", []string{strings.Repeat("x", limits.RunMaxArgBytes+1)}, fault.Limit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, argv, err := declared("test", set, "", tc.args)
			if fault.CodeOf(err) != tc.code {
				t.Errorf("err = %v, want %q", err, tc.code)
			}
			if err == nil && len(argv) != 2+len(tc.args) {
				t.Errorf("argv %d long", len(argv))
			}
		})
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestNoHelper(t *testing.T) {
	_, err := NewRunner(nil, nil).Command(t.Context(), nil, "run_shell", []string{"true"}, "", nil, 0)
	if !errors.Is(err, fault.ErrUnavailable) {
		t.Errorf("err = %v, want unavailable", err)
	}
}

// TestNetworkText: the tools' descriptions say there is no network, or
// which hosts the proxy reaches (the first limit of them, and how many
// more).
func TestNetworkText(t *testing.T) {
	if got := NewRunner(nil, nil).networkText(); got != "no network" {
		t.Errorf("without a network: %q", got)
	}
	var hosts []string
	for i := range shownHosts + 2 {
		hosts = append(hosts, fmt.Sprintf(`"h%d.example.org"`, i))
	}
	p, err := fetch.ParsePolicy(t.Context(), []byte(`{"format": 1, "hosts": [`+strings.Join(hosts, ",")+`]}`), "")
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := egress.New(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := NewRunner(nil, &RunnerOptions{Config: Config{Network: proxy}}).networkText()
	last := fmt.Sprintf("h%d.example.org", shownHosts-1)
	if !strings.Contains(got, "h0.example.org, h1.example.org") || !strings.Contains(got, last+" and 2 more") || strings.Contains(got, fmt.Sprintf("h%d.", shownHosts)) {
		t.Errorf("with %d hosts: %q", len(hosts), got)
	}
}
