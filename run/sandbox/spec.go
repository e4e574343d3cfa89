package sandbox

import (
	"context"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/run/sandbox/internal/helper"
)

// HelperArg is the argument that makes a program serve as the sandbox
// helper: a program linking this package, started with it as its first
// argument, is the helper from its init on and never reaches main.
const HelperArg = helper.HelperArg

// Containment says how a command was contained.
type Containment string

const (
	// Full is namespaces, a private root, Landlock, seccomp and rlimits.
	Full Containment = "full"
	// Reduced is Landlock, seccomp and rlimits over the host's own tree,
	// PID space and network namespace: weaker (see Result.Notes).
	Reduced Containment = "reduced"
)

// Spec is one command and the tree it may see.
type Spec struct {
	// Argv is the program and its arguments; the program is looked up in
	// Env's PATH when it has no slash.
	Argv []string `json:"argv"`
	// Dir is the working directory: absolute, within a root.
	Dir string `json:"dir"`
	// Env is the command's whole environment.
	Env []string `json:"env"`
	// Writable and ReadOnly are the roots, absolute directories other
	// than / and /tmp with no symbolic link on their paths, shown at
	// their own paths (a root that is a symbolic link when the command
	// starts is refused); in full containment those within the host's
	// /tmp are mounted on the command's private /tmp.
	Writable []string `json:"writable"`
	ReadOnly []string `json:"read_only"`
	// Protected are absolute paths within writable roots that stay
	// read-only. In full containment one that exists beneath its root
	// with no symbolic link on the way is mounted read-only, and the
	// directories between the root and it are pinned (mounted on
	// themselves: a mount point cannot be renamed or removed), so it can
	// be neither written nor carried away and replaced. In reduced
	// containment one that exists is kept by Landlock, which closes the
	// directory holding it and those above it (no entry made, removed or
	// renamed directly in them: Result.Closed). A missing one closes
	// nothing: what the command makes there is moved out of the root
	// when it ends (Result.Quarantined).
	Protected []string `json:"protected"`
	// Limits bound the command's resources; zero fields take the defaults
	// of package limits.
	Limits Limits `json:"limits"`
}

// Limits are the resource bounds of one run.
type Limits struct {
	// MemoryBytes bounds each process's address space.
	MemoryBytes int64 `json:"memory_bytes"`
	// Processes bounds the processes and threads of the run.
	Processes int64 `json:"processes"`
	// FileBytes bounds the size of any file a process writes.
	FileBytes int64 `json:"file_bytes"`
	// OpenFiles bounds each process's open descriptors.
	OpenFiles int64 `json:"open_files"`
	// TmpBytes bounds the private /tmp.
	TmpBytes int64 `json:"tmp_bytes"`
	// CPUSeconds bounds each process's CPU time; zero means the run's
	// wall-clock bound rounded up.
	CPUSeconds int64 `json:"cpu_seconds"`
	// MilliCPUs bounds the run's CPU bandwidth in thousandths of a CPU
	// (cgroup cpu.max, where the cpu controller is delegated); zero sets
	// no bandwidth limit.
	MilliCPUs int64 `json:"milli_cpus"`
}

// Options configure Run. Helper is required.
type Options struct {
	// Helper is the command that serves as the sandbox helper: a program
	// linking this package, given HelperArg, e.g. [os.Executable(),
	// HelperArg].
	Helper []string
	// Stdin is the command's standard input; nil means /dev/null.
	Stdin []byte
	// MaxOutputBytes bounds what is kept of each output stream; zero means
	// limits.RunDefaultOutputBytes.
	MaxOutputBytes int
	// Reduced runs without namespaces, as where user namespaces are
	// unavailable: Landlock, seccomp and rlimits only.
	Reduced bool
	// RequireFull fails with fault.Unavailable rather than run with
	// reduced containment.
	RequireFull bool
	// Warm, when set, runs a full-containment command in the helper it
	// holds when that was built for the same view, and starts the next
	// one after the call.
	Warm *Warm
	// Proxy, when set, gives the command a network through it alone:
	// the container's loopback is brought up with a listener on
	// ProxyAddr, which Proxy serves from outside the container for the
	// command's life (its notes are Result.Network); HTTP_PROXY, HTTPS_PROXY and ALL_PROXY (and their
	// lower-case forms) name it, replacing any in Spec.Env, and NO_PROXY
	// is removed. The command may create TCP and UDP sockets, but its
	// network namespace holds nothing else (no route out, no name
	// server: names are the proxy's to resolve), and Landlock allows TCP
	// connect to the proxy's port alone and bind to none but an ephemeral
	// port (port 0, which the kernel's Landlock lets through). A network
	// needs full containment: without user namespaces (or with Reduced)
	// Run fails with fault.Unavailable, whatever RequireFull says.
	Proxy Proxy
	// Quarantine is the directory, outside every root, that receives
	// what a command leaves at a protected name; "" is capkit/quarantine
	// in the user's state directory ($XDG_STATE_HOME, or
	// ~/.local/state), or, where that lies in a root of the run,
	// capkit-quarantine-UID in the temporary directory.
	Quarantine string
	// AfterReply, when set, is handed the start of Warm's next helper
	// instead of Run starting it at once: a server runs it once the
	// call's answer is sent (kernel.Call.AfterReply), so that the start
	// (a fork of the server, the helper's own start) does not compete
	// with the answer. It must run what it is given.
	AfterReply func(func())
}

// Proxy serves the connections a command makes to its proxy
// (Options.Proxy).
type Proxy interface {
	// Serve answers the connections l accepts until l is closed or ctx
	// ends, closes every one of them, and returns notes for the
	// command's result (Result.Network: what it refused).
	Serve(ctx context.Context, l net.Listener) []string
}

// ProxyAddr is where a command's proxy listens, inside its container.
const ProxyAddr = helper.ProxyAddr

// proxyVariables are the variables Options.Proxy sets, with the value
// naming ProxyAddr, and NO_PROXY, which it removes.
var proxyVariables = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}

// proxyEnv is env with the proxy variables naming ProxyAddr.
func proxyEnv(env []string) []string {
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains(proxyVariables, k) || strings.EqualFold(k, "NO_PROXY")
	})
	for _, k := range proxyVariables {
		out = append(out, k+"=http://"+ProxyAddr)
	}
	return out
}

// Result is how a command ended.
type Result struct {
	// ExitCode is the command's exit status, or -1 when a signal ended it.
	ExitCode int `json:"exit_code"`
	// Signal names the signal that ended the command ("killed" and
	// friends), empty when it exited.
	Signal string `json:"signal,omitempty"`
	// Killed is set when the command was killed because the context
	// ended (its deadline passed or the call was canceled).
	Killed bool `json:"killed,omitempty"`
	// Duration is the command's: from the call's hand-off to the helper,
	// its container built, to its end.
	Duration time.Duration `json:"-"`
	Stdout   Output        `json:"stdout"`
	Stderr   Output        `json:"stderr"`
	// Containment is how the command was contained; Notes say what was
	// weaker than full (no cgroup, an older Landlock ABI, ...).
	Containment Containment `json:"containment"`
	Notes       []string    `json:"notes,omitempty"`
	// Closed lists the directories in which no entry could be created,
	// removed or renamed (reduced containment only): each holds or leads
	// to a protected path that exists, which Landlock kept (ClosedNote
	// says so).
	Closed []string `json:"closed,omitempty"`
	// Quarantined lists what the command left at protected names that
	// were missing when it started, each moved out of its root.
	Quarantined []Moved `json:"quarantined,omitempty"`
	// Exceeded names the bound the command was killed for passing, when
	// Run killed it for one (reduced containment: its private tmp).
	Exceeded string `json:"exceeded,omitempty"`
	// ExceededBound is that bound as a setting and its value, the policy
	// the audit names: run.tmp_bytes=N or run.tmp_entries=N.
	ExceededBound string `json:"exceeded_bound,omitempty"`
	// Leftover is a private tmp that could not be removed after the
	// command (reduced containment), with why; the next run in any
	// capkit process of this user removes it.
	Leftover string `json:"leftover,omitempty"`
	// Cgroup says which cgroup v2 limits bound the run and which did not.
	Cgroup CgroupReport `json:"cgroup"`
	// Network is what the proxy (Options.Proxy) said of the command's
	// requests: the ones it refused, and why.
	Network []string `json:"network,omitempty"`

	warm bool // the run's helper was started ahead (Options.Warm)
}

// CgroupReport says which cgroup v2 limits bound a run.
type CgroupReport struct {
	// Path is the run's cgroup directory, empty when the run had none.
	Path string `json:"path,omitempty"`
	// Applied are the limits written, as "file=value".
	Applied []string `json:"applied,omitempty"`
	// Missing says, for each limit not applied, why.
	Missing []string `json:"missing,omitempty"`
}

// Moved is an entry a command left at a protected name, moved out of its
// root.
type Moved struct {
	// Path is where the entry was, absolute.
	Path string `json:"path"`
	// To is where it is now, in the quarantine; "" when it could not be
	// kept there (Note says why; it was removed from the root).
	To string `json:"to,omitempty"`
	// Note says what of it was not kept, when something was not.
	Note string `json:"note,omitempty"`
}

// Output is what was kept of one stream.
type Output struct {
	// Text is the stream, or its head and tail around a marker stating
	// the bytes omitted.
	Text string `json:"text"`
	// Bytes is how many bytes the command wrote; Omitted how many of them
	// Text leaves out.
	Bytes   int64 `json:"bytes"`
	Omitted int64 `json:"omitted,omitempty"`
}

// check refuses a spec the container cannot honour.
func (s *Spec) check() error {
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		return fault.New(fault.InvalidInput, "sandbox: no command given")
	}
	if len(s.Writable)+len(s.ReadOnly) == 0 {
		return fault.New(fault.InvalidInput, "sandbox: no root given; a command runs within at least one root")
	}
	for _, r := range append(slices.Clone(s.Writable), s.ReadOnly...) {
		if !filepath.IsAbs(r) || filepath.Clean(r) != r || r == "/" {
			return fault.New(fault.InvalidInput, "sandbox: root %q is not a clean absolute directory other than /", r)
		}
		if r == "/tmp" {
			return fault.New(fault.InvalidInput, "sandbox: the host's /tmp cannot be a root of a contained command, whose /tmp is a private one of its own; grant a directory within /tmp instead")
		}
	}
	for _, p := range s.Protected {
		if !filepath.IsAbs(p) || !slices.ContainsFunc(s.Writable, func(r string) bool { return p != r && capability.Within(r, p) }) {
			return fault.New(fault.InvalidInput, "sandbox: protected path %q is not inside a writable root", p)
		}
	}
	if !filepath.IsAbs(s.Dir) || !slices.ContainsFunc(append(slices.Clone(s.Writable), s.ReadOnly...), func(r string) bool { return capability.Within(r, s.Dir) }) {
		return fault.New(fault.InvalidInput, "sandbox: working directory %q is not inside a root", s.Dir)
	}
	l := s.Limits
	for _, b := range []struct {
		what    string
		v, hard int64
	}{
		{"memory bytes", l.MemoryBytes, limits.RunHardMemoryBytes},
		{"processes", l.Processes, limits.RunHardProcesses},
		{"file bytes", l.FileBytes, limits.RunHardFileBytes},
		{"open files", l.OpenFiles, limits.RunHardOpenFiles},
		{"tmp bytes", l.TmpBytes, limits.RunHardTmpBytes},
		{"cpu seconds", l.CPUSeconds, int64(limits.RunHardTimeout.Seconds())},
		{"milli-CPUs", l.MilliCPUs, limits.RunHardMilliCPUs},
	} {
		if b.v < 0 || b.v > b.hard {
			return fault.New(fault.InvalidInput, "sandbox: %s %d outside 0..%d", b.what, b.v, b.hard)
		}
	}
	if l.Processes != 0 && l.Processes < limits.RunMinProcesses {
		return fault.New(fault.InvalidInput, "sandbox: processes %d below the least of %d", l.Processes, limits.RunMinProcesses)
	}
	if l.MilliCPUs != 0 && l.MilliCPUs < limits.RunMinMilliCPUs {
		return fault.New(fault.InvalidInput, "sandbox: milli-CPUs %d below the least of %d", l.MilliCPUs, limits.RunMinMilliCPUs)
	}
	return nil
}

// withDefaults returns a copy of s with zero limits set to the defaults.
func (s *Spec) withDefaults() *Spec {
	c := *s
	l := &c.Limits
	def := func(v *int64, d int64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&l.MemoryBytes, limits.RunDefaultMemoryBytes)
	def(&l.Processes, limits.RunDefaultProcesses)
	def(&l.FileBytes, limits.RunDefaultFileBytes)
	def(&l.OpenFiles, limits.RunDefaultOpenFiles)
	def(&l.TmpBytes, limits.RunDefaultTmpBytes)
	def(&l.CPUSeconds, int64(limits.RunHardTimeout.Seconds()))
	return &c
}

// ClosedNote explains a directory of Result.Closed, for a command that
// failed perhaps because of it.
func ClosedNote(dir string) string {
	return dir + " was closed: no entry could be created, removed or renamed directly in it (reduced containment: it holds or leads to a protected path, such as .git, that Landlock keeps read-only, and Landlock cannot keep one entry of a directory alone); its files stayed writable and its subdirectories open; full containment (user namespaces) keeps it open"
}
