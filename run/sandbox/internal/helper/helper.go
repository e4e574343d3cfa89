// Package helper is the child side of run/sandbox: the process Run starts
// (the host's own program, re-executed with HelperArg) that builds the
// container and execs the command.
//
// It serves from its package init, before main and before the package
// init of the libraries the program links: a helper's start is on the
// path of every cold run, and those inits (syscall tables, HTML entity
// maps, schema registries, ...) were most of the start of a program as
// large as capkit. The Go specification orders package initialization:
// each step initializes the first package, sorted by import path, all of
// whose imports are initialized. This package's path sorts before every
// third-party module capkit uses, so it runs as soon as its imports
// have; but each of those imports in turn waits for every ready package
// sorted before it, and every library sorts before "strings", "fmt",
// "path/filepath" or "golang.org/x/sys/unix" (its imports, such as
// encoding/json and go-landlock, too). So the helper imports only
// standard packages that initialize before the libraries can (syscall,
// os, strconv, slices, errors, io) and capkit's limits; run/sandbox's
// TestInitOrder fails otherwise. Hence the raw system calls and their
// constants here, the Landlock ruleset with the best-effort ABI
// downgrade go-landlock would do, the few path and string operations
// (text.go), and the frames in which the view and the call arrive
// instead of JSON (wire.go). The seccomp filter is assembled by
// run/sandbox (x/sys/unix's syscall numbers) and arrives ready, with the
// view.
//
// Init runs on the main goroutine locked to the main thread; the helper
// keeps it locked, and the Landlock domain and the seccomp filter it sets
// apply to that thread only, which then execs the command (the other
// threads end at the exec).
package helper

import "os"

// HelperArg is the argument that makes a program serve as the sandbox
// helper: any program linking this package does, from its init.
const HelperArg = "__sandbox"

func init() {
	if len(os.Args) > 1 && os.Args[1] == HelperArg {
		os.Exit(serveHelper())
	}
}

// ID is the user and group the command runs as inside the user
// namespace: the host's user maps to it, and it holds no capability.
const ID = 1000

// Helper file descriptors: the message and the call arrive on SpecFD;
// with Message.Network, the listener on the container's loopback leaves
// on NetFD (a Unix socket: SCM_RIGHTS) before ReadyLine;
// notes and a failed setup are reported on ReportFD, which closes on
// exec: lines starting with NotePrefix are notes, lines starting with
// HeldPrefix name the protected paths mounted read-only (before
// ReadyLine), ReadyLine says the container is built and the helper waits
// for its call, lines starting with ClosedPrefix name the directories
// Landlock closed (before ExecLine), ExecLine that it execs the command
// now, anything else is a failure.
const (
	SpecFD       = 3
	ReportFD     = 4
	NetFD        = 5
	NotePrefix   = "note: "
	HeldPrefix   = "held: "
	ClosedPrefix = "closed: "
	ReadyLine    = "ready"
	ExecLine     = "exec"
)

// ProxyPort and ProxyAddr are the listener on the container's loopback
// that Message.Network asks for.
const (
	ProxyPort = 3128
	ProxyAddr = "127.0.0.1:3128"
)

// Message is what the helper receives first: the view the container
// shows.
type Message struct {
	View *View
	Full bool
	// Network brings up the container's loopback (full containment
	// only), listens on ProxyPort there and hands the listener to the
	// parent on NetFD; the command may then connect to that port alone.
	Network bool
	// Tmp is, for reduced containment, the private temporary directory
	// Run made on the host.
	Tmp string
	// Seccomp is the filter, as the kernel's struct sock_filter array in
	// the host's byte order.
	Seccomp []byte
}

// View is the tree and bounds of the container (a run's spec without its
// call).
type View struct {
	Writable  []string
	ReadOnly  []string
	Protected []string
	Limits    Limits
}

// Limits are a run's bounds, as run/sandbox's Limits (defaults applied).
type Limits struct {
	MemoryBytes int64
	Processes   int64
	FileBytes   int64
	OpenFiles   int64
	TmpBytes    int64
	CPUSeconds  int64
	MilliCPUs   int64
}

// Call is what the helper receives second, once the container is built:
// the command to exec.
type Call struct {
	Argv []string
	Dir  string
	Env  []string
	// NullStdin makes the command's standard input /dev/null.
	NullStdin bool
}
