//go:build !amd64 || purego

package mcpserver

// haveSIMD is false: escapeASCII is written for amd64 only (and the
// purego tag leaves it out there too).
const haveSIMD = false

// escapeASCII is never called where haveSIMD is false.
func escapeASCII(dst []byte, s string) (consumed, written int) { return 0, 0 }
