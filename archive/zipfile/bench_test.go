package zipfile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkExtract extracts an archive of 32 small members into a new
// directory per iteration; it measures the extraction path end to end
// (open, match, staging, inflate, sync, publish).
func BenchmarkExtract(b *testing.B) {
	src := b.TempDir()
	var sources []Source
	for i := range 32 {
		name := fmt.Sprintf("d%d/f%d.txt", i%4, i)
		p := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Repeat("capkit ", 1000+i)), 0o600); err != nil {
			b.Fatal(err)
		}
		sources = append(sources, Source{Name: name, Path: p})
	}
	ctx := context.Background()
	archive := filepath.Join(b.TempDir(), "in.zip")
	created, err := Create(ctx, archive, sources, nil)
	if err != nil {
		b.Fatal(err)
	}
	expect, err := ParseManifest(strings.NewReader(created.Manifest()))
	if err != nil {
		b.Fatal(err)
	}
	out := b.TempDir()
	b.ResetTimer()
	for i := range b.N {
		if _, err := Extract(ctx, archive, filepath.Join(out, fmt.Sprint(i)), expect, nil); err != nil {
			b.Fatal(err)
		}
	}
}
