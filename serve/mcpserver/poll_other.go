//go:build !unix

package mcpserver

import "os"

// pollable is a no-op where descriptors cannot be made non-blocking.
func pollable(*os.File) (*os.File, func()) { return nil, nil }
