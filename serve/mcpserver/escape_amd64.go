//go:build amd64 && !purego

package mcpserver

import "golang.org/x/sys/cpu"

// haveSIMD reports whether escapeASCII may be used.
var haveSIMD = cpu.X86.HasAVX2

// escapeASCII is in escape_amd64.s.
//
//go:noescape
func escapeASCII(dst []byte, s string) (consumed, written int)
