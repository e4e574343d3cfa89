package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// sandboxID is the user and group the command runs as inside the user
// namespace: the host's user maps to it, and it holds no capability.
const sandboxID = 1000

// Helper file descriptors: the spec arrives on one; notes and a failed
// setup are reported on the other, which closes on exec: lines starting
// with notePrefix are notes, anything else a failure.
const (
	specFD   = 3
	reportFD = 4
)

const notePrefix = "note: "

// message is what Run sends the helper.
type message struct {
	Spec *Spec `json:"spec"`
	Full bool  `json:"full"`
	// Tmp is, for reduced containment, the private temporary directory
	// Run made on the host.
	Tmp string `json:"tmp,omitempty"`
}

// Run runs spec's command in a container until it exits or ctx ends (then
// every process it started is killed and the result says Killed). A
// command that could not be started is a *fault.Error; a command that ran
// and failed is a Result with its exit code.
func Run(ctx context.Context, spec *Spec, opts *Options) (*Result, error) {
	if opts == nil || len(opts.Helper) == 0 {
		return nil, fault.New(fault.Internal, "sandbox: no helper command configured")
	}
	if err := spec.check(); err != nil {
		return nil, err
	}
	msg := message{Spec: spec.withDefaults(), Full: !opts.Reduced}
	var notes []string
	if msg.Full {
		why := userNamespacesUnavailable()
		if why == "" {
			res, err := run(ctx, &msg, opts)
			var ns *namespaceError
			if !errors.As(err, &ns) {
				return withNotes(res, err, hostNotes())
			}
			why = ns.Error()
		}
		msg.Full = false
		notes = append(notes, "user namespaces unavailable ("+why+")")
	}
	if landlockABI() == 0 {
		return nil, fault.New(fault.Unavailable, "neither user namespaces nor Landlock are available here, so a command cannot be contained; nothing was run")
	}
	if opts.RequireFull {
		return nil, fault.New(fault.Unavailable, "full containment is required but %s; nothing was run", reducedReason(opts, notes))
	}
	tmp, err := os.MkdirTemp("", "capkit-run-")
	if err != nil {
		return nil, fault.Wrap(fault.Unavailable, err, "the sandbox's temporary directory cannot be made")
	}
	defer os.RemoveAll(tmp)
	msg.Tmp = tmp
	res, err := run(ctx, &msg, opts)
	return withNotes(res, err, append(append(notes, reducedNotes...), hostNotes()...))
}

func withNotes(res *Result, err error, notes []string) (*Result, error) {
	if err != nil {
		return nil, err
	}
	res.Notes = append(notes, res.Notes...)
	return res, nil
}

// namespaceError is the kernel refusing the helper its namespaces (a
// container runtime's seccomp profile, an LSM): Run falls back to reduced
// containment.
type namespaceError struct{ err error }

func (e *namespaceError) Error() string { return "starting in new namespaces: " + e.err.Error() }

func reducedReason(opts *Options, notes []string) string {
	if opts.Reduced {
		return "reduced containment was asked for"
	}
	return notes[0]
}

// reducedNotes say what reduced containment does not give.
var reducedNotes = []string{
	"reduced containment: no namespaces; the host's tree is limited by Landlock alone",
	"reduced containment: processes that leave the command's process group (setsid) may outlive the call",
	"reduced containment: the command shares the host's network namespace (sockets are denied by seccomp)",
	"reduced containment: the host's processes and their command lines are visible in /proc (their memory and environment are not)",
	"reduced containment: the mode and times of protected paths can be changed (Landlock does not govern them)",
	"reduced containment: new entries cannot be made in a directory holding a protected path (.git, capkit.toml)",
}

// run starts the helper, feeds it msg, and waits for the command.
func run(ctx context.Context, msg *message, opts *Options) (*Result, error) {
	data, err := json.Marshal(msg)
	if err != nil {
		return nil, fault.Wrap(fault.Internal, err, "sandbox: encoding the spec failed")
	}
	if len(data) > limits.RunMaxSpecBytes {
		return nil, fault.LimitExceeded("sandbox: the run's description bytes", limits.RunMaxSpecBytes, int64(len(data)))
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, fault.Wrap(fault.Unavailable, err, "sandbox: cannot start the helper")
	}
	defer specW.Close()
	reportR, reportW, err := os.Pipe()
	if err != nil {
		specR.Close()
		return nil, fault.Wrap(fault.Unavailable, err, "sandbox: cannot start the helper")
	}
	defer reportR.Close()

	max := opts.MaxOutputBytes
	if max == 0 {
		max = limits.RunDefaultOutputBytes
	}
	stdout, stderr := newHeadTail(max), newHeadTail(max)
	cmd := exec.Command(opts.Helper[0], opts.Helper[1:]...)
	cmd.Env = []string{}
	cmd.Dir = "/"
	if opts.Stdin != nil {
		cmd.Stdin = bytes.NewReader(opts.Stdin)
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.ExtraFiles = []*os.File{specR, reportW}
	cmd.SysProcAttr = helperAttr(msg.Full)
	cmd.WaitDelay = limits.RunKillGrace
	start := time.Now()
	err = cmd.Start()
	specR.Close()
	reportW.Close()
	if err != nil {
		if msg.Full && (errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC)) {
			return nil, &namespaceError{err}
		}
		return nil, fault.Wrap(fault.Unavailable, err, "sandbox: the helper cannot be started")
	}
	var once sync.Once
	var killed atomic.Bool
	kill := func() {
		once.Do(func() {
			killed.Store(true)
			// The helper is the PID namespace's init (full containment):
			// its death kills every process of the namespace. Reduced
			// containment kills the process group.
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Process.Kill()
		})
	}
	stop := context.AfterFunc(ctx, kill)
	defer stop()
	_, werr := specW.Write(data)
	specW.Close()
	report, _ := io.ReadAll(io.LimitReader(reportR, limits.RunMaxHelperErrorBytes))
	err = cmd.Wait()
	stop()
	// What is left of the command's process group (reduced containment:
	// background jobs; full: nothing, the namespace is gone) dies with it.
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	res := &Result{Duration: time.Since(start), Stdout: stdout.output(), Stderr: stderr.output(), Containment: Reduced}
	if msg.Full {
		res.Containment = Full
	}
	notes, failure := splitReport(string(report))
	res.Notes = notes
	if failure != "" && !killed.Load() {
		return nil, fault.Wrap(fault.Unavailable, errors.New(failure), "sandbox: the container could not be set up")
	}
	if werr != nil && !killed.Load() {
		return nil, fault.Wrap(fault.Unavailable, werr, "sandbox: the helper did not take its spec")
	}
	return res, exitStatus(res, cmd, err, killed.Load())
}

// splitReport separates the helper's notes from its failure.
func splitReport(report string) (notes []string, failure string) {
	for report != "" {
		line, rest, ok := strings.Cut(report, "\n")
		n, isNote := strings.CutPrefix(line, notePrefix)
		if !isNote || !ok {
			return notes, report
		}
		notes = append(notes, n)
		report = rest
	}
	return notes, ""
}

// exitStatus records how the command ended.
func exitStatus(res *Result, cmd *exec.Cmd, err error, killed bool) error {
	res.Killed = killed
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) && !errors.Is(err, exec.ErrWaitDelay) {
		return fault.Wrap(fault.Unavailable, err, "sandbox: waiting for the command failed")
	}
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case !ok:
		res.ExitCode = cmd.ProcessState.ExitCode()
	case ws.Signaled():
		res.ExitCode = -1
		res.Signal = unix.SignalName(ws.Signal())
	default:
		res.ExitCode = ws.ExitStatus()
	}
	return nil
}

// helperAttr starts the helper in new namespaces (full containment), with
// the host's user mapped to sandboxID and just the capabilities needed to
// build the container (dropped before the command runs), in a session of
// its own, killed if the host dies.
func helperAttr(full bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if !full {
		return a
	}
	a.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
		syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: sandboxID, HostID: os.Getuid(), Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: sandboxID, HostID: os.Getgid(), Size: 1}}
	a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP}
	return a
}

// userNamespacesUnavailable says why user namespaces cannot be used, or
// "" when they can.
func userNamespacesUnavailable() string {
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && string(bytes.TrimSpace(b)) == "0" {
		return "user.max_user_namespaces is 0"
	}
	if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && string(bytes.TrimSpace(b)) == "0" && os.Getuid() != 0 {
		return "kernel.unprivileged_userns_clone is 0"
	}
	return ""
}

// hostNotes say what of the container this host does not offer.
func hostNotes() []string {
	var notes []string
	if v := landlockABI(); v == 0 {
		notes = append(notes, "no Landlock: the container's mounts are the only filesystem layer")
	} else if v < landlockWantABI {
		notes = append(notes, fmt.Sprintf("Landlock ABI %d (of %d): the rights of later versions are not enforced", v, landlockWantABI))
	}
	notes = append(notes, "no cgroup limits: memory is bounded per process (address space), processes and threads by the run's process limit")
	return notes
}
