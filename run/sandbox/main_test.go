package sandbox

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestMain lets the test binary serve as the sandbox helper, as capkit does
// through its hidden subcommand, and as the probe the escape tests run
// inside the container.
func TestMain(m *testing.M) {
	if len(os.Args) >= 2 {
		switch os.Args[1] {
		case HelperArg:
			os.Exit(Main())
		case probeArg:
			os.Exit(probe(os.Args[2:]))
		}
	}
	os.Exit(m.Run())
}

func helper(t testing.TB) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe, HelperArg}
}

// hangGuard is a generous bound on any one run: a test that reaches it has
// found a hang, not a slow machine.
const hangGuard = 60 * time.Second

func runIn(t *testing.T, spec *Spec, opts *Options) *Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if opts == nil {
		opts = &Options{}
	}
	if opts.Helper == nil {
		opts.Helper = helper(t)
	}
	res, err := Run(ctx, spec, opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}
