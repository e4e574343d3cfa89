//go:build !linux

package helper

import (
	"io"
	"os"
)

// serveHelper reports that there is no helper on this system.
func serveHelper() int {
	io.WriteString(os.Stderr, "capkit: the sandbox helper needs Linux\n")
	return 125
}

// LandlockABI is 0: there is no Landlock here.
func LandlockABI() int { return 0 }
