//go:build !amd64

package bert

var kernel = kernelGo
