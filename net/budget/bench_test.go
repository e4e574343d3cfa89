package budget

import (
	"context"
	"path/filepath"
	"testing"
)

// BenchmarkReserveSettle is one admission and its settlement on SQLite,
// from b.N sequential calls (each waits for its own durable commits).
func BenchmarkReserveSettle(b *testing.B) {
	ctx := context.Background()
	bud, err := Open(ctx, filepath.Join(b.TempDir(), "root"), &Policy{Format: 1, Group: "g", WindowSeconds: 3600, WindowRequests: 1 << 40, WindowBytes: 1 << 50}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer bud.Close()
	for b.Loop() {
		r, err := bud.Reserve(ctx, "t", 100)
		if err != nil {
			b.Fatal(err)
		}
		if err := bud.Settle(ctx, r.ID, 50, Outcome{Status: 200}); err != nil {
			b.Fatal(err)
		}
	}
}
