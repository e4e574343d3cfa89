package trail

import (
	"context"
	"path/filepath"
	"testing"
)

// BenchmarkAppend: one call's record appended to a trail (the lock, the
// trail's stat, the record's hash and its write), one writer.
func BenchmarkAppend(b *testing.B) {
	w, err := Open(filepath.Join(b.TempDir(), "audit.jsonl"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close(context.Background())
	e := event(1)
	b.ReportAllocs()
	for b.Loop() {
		w.Write(e)
	}
	if st := w.Stats(); st.Failed > 0 {
		b.Fatalf("%d appends failed", st.Failed)
	}
}
