//go:build !linux

package mcpserver

import "os"

// growOutput is a no-op where pipe capacity and socket buffers are left
// as they are.
func growOutput(*os.File) {}
