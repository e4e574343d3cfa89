package host

import (
	"testing"

	"github.com/capkit/capkit/host/config"
)

// BenchmarkNew is the host set-up every CLI command that lists or calls a
// tool pays once: every group's tools registered and the runtime built.
func BenchmarkNew(b *testing.B) {
	cfg, err := config.FromFlags([]string{b.TempDir()}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		h, err := New(cfg, nil)
		if err != nil {
			b.Fatal(err)
		}
		h.Close()
	}
}
