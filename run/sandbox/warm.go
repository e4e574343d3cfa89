package sandbox

import "sync"

// Warm keeps one sandbox helper started ahead of its call, for a server
// whose next command most likely runs over the same roots: its
// namespaces are made and its root view built, and it waits for the
// call's command, working directory, environment and input. It runs
// nothing before that call, serves exactly one, and is replaced in the
// background after it (once its answer is sent, with
// Options.AfterReply); one built for other roots, limits or helper is
// killed rather than used (so is one whose roots or protected paths were
// replaced on the host since). It dies with the process that started it.
// The zero value is ready to use; Close kills the helper it holds.
type Warm struct {
	mu     sync.Mutex
	next   *pending
	closed bool
}

// NewWarm returns an empty Warm: its first helper starts after the first
// Run that uses it.
func NewWarm() *Warm { return &Warm{} }
