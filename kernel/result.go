package kernel

import (
	"encoding/json"
	"sync"

	"github.com/capkit/capkit/kernel/catalog"
)

// Result is what a tool returns: text for the model and, optionally,
// structured content already encoded as a JSON object. Both count toward
// the output bound.
type Result struct {
	Text       string
	Structured json.RawMessage
	// Image, when set, is shown besides the text (see Imager); it is
	// bounded apart from the output bound.
	Image *Image
	// Content, when set, is the result as content blocks a front door
	// passes on as they are, in place of Text and Image: another MCP
	// server's result (text, images, audio, resource links, embedded
	// resources), each block one MCP content object encoded as JSON.
	// Text then holds its text blocks joined, for readers of text alone
	// (the CLI, scripts); the blocks, not Text, count toward the output
	// bound.
	Content []json.RawMessage

	// release, when set, gives the memory behind Text back to the tool
	// that produced it (see Releaser).
	release func()
}

// Size is the number of bytes the output bound is checked against: the
// text (or the content blocks, when set) and the structured content.
func (r *Result) Size() int64 {
	if r.Content == nil {
		return int64(len(r.Text) + len(r.Structured))
	}
	n := int64(len(r.Structured))
	for _, c := range r.Content {
		n += int64(len(c))
	}
	return n
}

// Release tells the tool that produced r that r's Text is no longer
// used, so that it may reuse the memory behind it. The contract, for
// whoever consumes a Result (a transport, once it has written it): call
// Release at most once, after the last use of r.Text and of every string
// that shares its memory (a substring, a copy of the string header); after
// it, r.Text may change under any holder. A consumer that never calls it
// leaves the memory to the garbage collector, which is always safe. The
// kernel releases the results it refuses (over the output bound, or
// returned after the call was abandoned). Release on a Result without
// pooled memory does nothing.
func (r *Result) Release() {
	if f := r.release; f != nil {
		r.release = nil
		f()
	}
}

// Releaser is implemented by typed results (the Out of AddTool) whose
// ToolText is pooled memory: the Result carries their Release, which the
// consumer calls once it is done with the text (see Result.Release).
// ToolText must not be called after Release.
type Releaser interface {
	Texter
	Release()
}

// Call is one admitted call, as a handler sees it.
type Call struct {
	Session *Session
	Tool    *catalog.Entry
	// Args are the validated, encoded arguments.
	Args json.RawMessage
	// MaxOutputBytes is the output bound; a handler that can tell early that
	// its result would exceed it should fail with limit before doing the
	// work.
	MaxOutputBytes int64

	after afterReply
}

// AfterReply runs f on a goroutine of its own once the call's result has
// been handed back: for a call a transport started (Session.Start: the
// stdio transport's tools/call), once its answer is written; for
// Session.Call, once Call returns. It is for work that may wait but
// should not compete with the answer (a server's next container). After
// that point f runs at once.
func (c *Call) AfterReply(f func()) { c.after.add(f) }

// afterReply holds a call's AfterReply work until its result is handed
// back.
type afterReply struct {
	mu      sync.Mutex
	replied bool
	fns     []func()
}

func (a *afterReply) add(f func()) {
	a.mu.Lock()
	if !a.replied {
		a.fns = append(a.fns, f)
		a.mu.Unlock()
		return
	}
	a.mu.Unlock()
	go f()
}

// run starts the work held, and any added from now on.
func (a *afterReply) run() {
	a.mu.Lock()
	fns := a.fns
	a.replied, a.fns = true, nil
	a.mu.Unlock()
	for _, f := range fns {
		go f()
	}
}
