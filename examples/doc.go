// Package examples holds example Starlark workflows (*.star) and
// configuration; examples_test.go runs every workflow against a real
// runtime (file tools and a fixed-file catalog), so they stay correct.
package examples
