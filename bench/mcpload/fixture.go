package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// makeFixture (re)creates the files the scenarios use under dir.
func makeFixture(dir string) (*fixture, error) {
	fx := &fixture{
		small:   filepath.Join(dir, "small.txt"),
		big:     filepath.Join(dir, "big4m.txt"),
		edit:    filepath.Join(dir, "edit1m.txt"),
		listDir: filepath.Join(dir, "list1000"),
		grepDir: filepath.Join(dir, "grep2000"),
	}
	for _, p := range []string{fx.small, fx.big, fx.edit, fx.listDir, fx.grepDir} {
		if err := os.RemoveAll(p); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(fx.small, lines(100, 0), 0o644); err != nil {
		return nil, err
	}
	big := lines(65_536, 64)
	if len(big) != 4<<20 {
		return nil, fmt.Errorf("big file is %d bytes", len(big))
	}
	if err := os.WriteFile(fx.big, big, 0o644); err != nil {
		return nil, err
	}
	if err := writeEditFile(fx); err != nil {
		return nil, err
	}
	if err := os.Mkdir(fx.listDir, 0o755); err != nil {
		return nil, err
	}
	for i := range 1000 {
		if err := os.WriteFile(filepath.Join(fx.listDir, fmt.Sprintf("f%04d.txt", i)), lines(2, 0), 0o644); err != nil {
			return nil, err
		}
	}
	for d := range 20 {
		sub := filepath.Join(fx.grepDir, fmt.Sprintf("d%02d", d))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return nil, err
		}
		for f := range 100 {
			content := lines(20, 0)
			if f%10 == 5 { // 200 files hold the needle, and their names end in 5.txt
				content = append(content, fmt.Sprintf("var x = needle_%d\n", d*100+f)...)
			}
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d.txt", f)), content, 0o644); err != nil {
				return nil, err
			}
		}
	}
	return fx, nil
}

// lines is n lines of source-like text (tabs, quotes), each width bytes
// long including its newline when width > 0.
func lines(n, width int) []byte {
	var b bytes.Buffer
	for i := range n {
		l := fmt.Sprintf("\tif x := lookup(\"key %06d\", %d); x != nil { return x } // line", i, i%97)
		if width > 0 {
			l = fmt.Sprintf("%-*.*s", width-1, width-1, l)
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// writeEditFile writes the 1 MiB file the edit scenario changes: 16,384
// lines of 64 bytes, every fourth holding a unique marker @@M%05d@@.
func writeEditFile(fx *fixture) error {
	var b bytes.Buffer
	base := lines(16_384, 64)
	for i, l := range strings.SplitAfter(string(base), "\n") {
		if l == "" {
			continue
		}
		if i%4 == 0 {
			m := marker(i/4, "M")
			l = l[:len(l)-1-len(m)] + m + "\n"
			fx.editMarkers = i/4 + 1
		}
		b.WriteString(l)
	}
	if b.Len() != 1<<20 {
		return fmt.Errorf("edit file is %d bytes", b.Len())
	}
	return os.WriteFile(fx.edit, b.Bytes(), 0o644)
}
