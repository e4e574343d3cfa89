// Package archtest holds the architecture test: it reads the module's
// packages with `go list` and fails when an import runs back up the layers
// or breaks one of the rules in docs/ARCHITECTURE.md. It has no code of its
// own; the rules are its tests.
package archtest
