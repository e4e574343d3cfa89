//go:build !linux

package mcpserver

import "os"

// growPipe is a no-op where pipe capacity cannot be set.
func growPipe(*os.File) {}
