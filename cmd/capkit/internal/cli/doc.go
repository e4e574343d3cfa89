// Package cli is the capkit command line: one file per command group, each
// returning a cobra command. Every command reports failure as a fault, and
// Main turns it into the fault's stable exit code.
package cli
