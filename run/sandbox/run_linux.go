package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/run/sandbox/internal/helper"
)

// message is what Run sends the helper first: the view the container
// shows (the spec without its command, working directory and
// environment, which come with the call), and call what it sends once
// the container is built.
type (
	message = helper.Message
	call    = helper.Call
)

// Run runs spec's command in a container until it exits or ctx ends (then
// every process it started is killed and the result says Killed). A
// command that could not be started is a *fault.Error; a command that ran
// and failed is a Result with its exit code.
func Run(ctx context.Context, spec *Spec, opts *Options) (*Result, error) {
	return run(ctx, spec, opts, nil)
}

// run is Run, or, with a stream, the run Start makes: the command's
// standard input and output go to st once it runs, instead of Run's
// stdin bytes and bounded copy.
func run(ctx context.Context, spec *Spec, opts *Options, st *stream) (*Result, error) {
	if opts == nil || len(opts.Helper) == 0 {
		return nil, fault.New(fault.Internal, "sandbox: no helper command configured")
	}
	if err := spec.check(); err != nil {
		return nil, err
	}
	s := spec.withDefaults()
	c := call{Argv: s.Argv, Dir: s.Dir, Env: s.Env, NullStdin: opts.Stdin == nil && st == nil}
	if opts.Proxy != nil {
		c.Env = proxyEnv(s.Env)
	}
	// The helper takes the paths as clean (check made the roots so).
	protected := make([]string, len(s.Protected))
	for i, p := range s.Protected {
		protected[i] = filepath.Clean(p)
	}
	view := helper.View{Writable: s.Writable, ReadOnly: s.ReadOnly, Protected: protected, Limits: helper.Limits(s.Limits)}
	msg := message{View: &view, Full: !opts.Reduced, Network: opts.Proxy != nil}
	g := newGuard(s.Writable, protected, newQuarantine(opts.Quarantine, slices.Concat(s.Writable, s.ReadOnly)))
	defer g.q.close()
	var notes []string
	if msg.Full {
		why := userNamespacesUnavailable()
		if why == "" {
			res, err := runFull(ctx, &msg, c, opts, g, st)
			var ns *namespaceError
			if !errors.As(err, &ns) {
				return withNotes(res, err, hostNotes())
			}
			why = ns.Error()
		}
		msg.Full = false
		notes = append(notes, "user namespaces unavailable ("+why+")")
	}
	if msg.Network {
		return nil, fault.New(fault.Unavailable, "a network policy needs full containment (a network namespace of the command's own, reached only through the proxy), but %s; nothing was run", reducedReason(opts, notes))
	}
	if helper.LandlockABI() < helper.MinReducedABI {
		return nil, fault.New(fault.Unavailable, "neither user namespaces nor Landlock of ABI %d or later (this kernel's: %d) are available here, so a command cannot be contained; nothing was run", helper.MinReducedABI, helper.LandlockABI())
	}
	if opts.RequireFull {
		return nil, fault.New(fault.Unavailable, "full containment is required but %s; nothing was run", reducedReason(opts, notes))
	}
	sc, err := newScratch()
	if err != nil {
		return nil, fault.Wrap(fault.Unavailable, err, "the sandbox's temporary directory cannot be made")
	}
	msg.Tmp = sc.dir
	res, err := runCold(ctx, &msg, c, opts, g, st)
	rerr := sc.remove()
	if err == nil {
		notes = append(notes, reducedNotes...)
		if res.Cgroup.Path == "" {
			notes = append(notes, reducedWithoutCgroup)
		}
		if rerr != nil {
			res.Leftover = sc.dir + " (" + rerr.Error() + ")"
			notes = append(notes, "its private /tmp "+res.Leftover+" could not be removed; the next command run by capkit removes it")
		}
	}
	return withNotes(res, err, append(notes, hostNotes()...))
}

// reducedWithoutCgroup says how reduced containment without a cgroup ends
// every process of a command.
const reducedWithoutCgroup = "reduced containment without a cgroup: setsid and setpgid fail (EPERM), so that every process of the command stays in its process group and is killed with it"

// runFull runs with full containment, in the warm helper when one is
// ready for this view, and then starts the next one.
func runFull(ctx context.Context, msg *message, c call, opts *Options, g *guard, st *stream) (*Result, error) {
	if opts.Warm == nil || st != nil {
		return runCold(ctx, msg, c, opts, g, st)
	}
	key := viewKey(msg, opts.Helper)
	res, err := runWarm(ctx, msg, key, c, opts, g)
	if err == nil {
		opts.Warm.refill(msg, key, opts.Helper, opts.AfterReply)
	}
	return res, err
}

func runWarm(ctx context.Context, msg *message, key string, c call, opts *Options, g *guard) (*Result, error) {
	if h := opts.Warm.take(msg, key); h != nil {
		res, err := h.finish(ctx, c, opts, g, nil)
		if err == nil {
			res.warm = true
		}
		if !errors.Is(err, errNotBuilt) && !errors.Is(err, errStale) {
			return res, err
		}
		// The warm helper failed before its call, or shows a protected
		// path as it was before the host changed it (nothing ran):
		// start one for the call.
	}
	return runCold(ctx, msg, c, opts, g, nil)
}

func runCold(ctx context.Context, msg *message, c call, opts *Options, g *guard, st *stream) (*Result, error) {
	h, err := startHelper(msg, opts.Helper)
	if err != nil {
		return nil, err
	}
	return h.finish(ctx, c, opts, g, st)
}

func withNotes(res *Result, err error, notes []string) (*Result, error) {
	if err != nil {
		return nil, err
	}
	for _, m := range res.Cgroup.Missing {
		notes = append(notes, "cgroup limit not applied: "+m)
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
	"reduced containment: the command shares the host's network namespace (sockets are denied by seccomp)",
	"reduced containment: the host's processes and their command lines are visible in /proc (their memory and environment are not)",
	"reduced containment: the mode and times of protected paths can be changed (Landlock does not govern them)",
}

// errNotBuilt is a helper that ended before its container was built or
// before it reached the exec of its call: nothing ran.
var errNotBuilt = fault.NewMark("the sandbox helper ended before running anything")

// helperProc is one started helper: its view sent, its call not yet.
type helperProc struct {
	cmd              *exec.Cmd
	full             bool
	tmp              string // reduced containment: the private tmp, and its bound
	tmpBytes         int64
	specW, stdinW    *os.File
	stdoutR, stderrR *os.File
	reportR          *os.File
	report           *bufio.Reader
	// netR receives the listener on the container's loopback
	// (Message.Network), which the parent then serves: proxy.
	netR     *os.File
	proxy    net.Listener
	cg       *cgroup
	cgReport CgroupReport
	ready    chan struct{} // closed when the view is built or the helper failed
	notes    []string      // the helper's, until ready
	held     []string      // the protected paths mounted read-only, until ready
	failure  string        // set before ready closes when the build failed
	released atomic.Bool
}

// startHelper starts a helper for msg's view, in a cgroup of its own
// where one can be made, and sends it the view; the container is built
// while the caller goes on.
func startHelper(msg *message, helperCmd []string) (*helperProc, error) {
	m := *msg
	var err error
	h := &helperProc{full: msg.Full, tmp: msg.Tmp, tmpBytes: msg.View.Limits.TmpBytes, ready: make(chan struct{})}
	// The helper's ends: it reads the spec and stdin, writes the report
	// and both output streams.
	var specR, reportW, stdinR, stdoutW, stderrW, netW *os.File
	defer func() {
		for _, f := range []*os.File{specR, reportW, stdinR, stdoutW, stderrW, netW} {
			if f != nil {
				f.Close()
			}
		}
	}()
	for _, p := range []struct{ r, w **os.File }{
		{&specR, &h.specW}, {&h.reportR, &reportW}, {&stdinR, &h.stdinW},
		{&h.stdoutR, &stdoutW}, {&h.stderrR, &stderrW},
	} {
		if *p.r, *p.w, err = os.Pipe(); err != nil {
			h.release()
			return nil, fault.Wrap(fault.Unavailable, err, "sandbox: cannot start the helper")
		}
	}
	if msg.Network {
		if h.netR, netW, err = socketPair(); err != nil {
			h.release()
			return nil, fault.Wrap(fault.Unavailable, err, "sandbox: cannot start the helper")
		}
	}
	h.report = bufio.NewReader(io.LimitReader(h.reportR, limits.RunMaxHelperErrorBytes))
	h.cg, h.cgReport = newCgroup(Limits(msg.View.Limits))
	for {
		cmd := exec.Command(helperCmd[0], helperCmd[1:]...)
		// One processor for the runtime: the helper's work is one
		// thread's, and with GOMAXPROCS set the runtime neither reads
		// the cgroup's CPU limit nor starts threads it would not use.
		// The command gets its own environment, not this one.
		cmd.Env = []string{"GOMAXPROCS=1"}
		cmd.Dir = "/"
		cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, stderrW
		cmd.ExtraFiles = []*os.File{specR, reportW}
		if netW != nil {
			cmd.ExtraFiles = append(cmd.ExtraFiles, netW)
		}
		cmd.SysProcAttr = helperAttr(msg.Full, msg.Network)
		if h.cg != nil {
			cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, h.cg.fd
		}
		err = cmd.Start()
		if err != nil && h.cg != nil {
			// The group cannot be joined (an LSM, a cgroup the kernel
			// refuses to clone into): run without it, and say so.
			dir := h.cg.dir
			h.cg.remove()
			h.cg, h.cgReport = nil, noCgroup(fmt.Sprintf("the helper cannot start in %s (%v)", dir, err))
			continue
		}
		h.cmd = cmd
		break
	}
	if err != nil {
		h.release()
		if msg.Full && (errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC)) {
			return nil, &namespaceError{err}
		}
		return nil, fault.Wrap(fault.Unavailable, err, "sandbox: the helper cannot be started")
	}
	// Without a cgroup to kill them by, reduced containment keeps every
	// process in the command's process group.
	if m.Seccomp, err = seccompFilter(socketsFor(&m), h.cg != nil); err != nil {
		h.discard()
		return nil, fault.Wrap(fault.Unavailable, err, "sandbox: no seccomp filter for this system")
	}
	data := m.Encode()
	if len(data) > limits.RunMaxSpecBytes {
		h.discard()
		return nil, fault.LimitExceeded("sandbox: the run's description bytes", limits.RunMaxSpecBytes, int64(len(data)))
	}
	if _, err := h.specW.Write(data); err != nil {
		h.discard()
		return nil, fault.Wrap(fault.Unavailable, err, "sandbox: the helper did not take its spec")
	}
	go h.awaitReady()
	return h, nil
}

// awaitReady reads the helper's notes until it reports the container
// built, or its failure.
func (h *helperProc) awaitReady() {
	defer close(h.ready)
	for {
		line, err := h.report.ReadString('\n')
		if err != nil {
			h.failure = line
			if line == "" {
				h.failure = errNotBuilt.Error()
			}
			return
		}
		line = strings.TrimSuffix(line, "\n")
		if line == helper.ReadyLine {
			if h.netR != nil {
				if h.proxy, err = receiveListener(h.netR); err != nil {
					h.failure = "sandbox: the proxy's listener did not arrive from the helper: " + err.Error()
				}
			}
			return
		}
		if n, ok := strings.CutPrefix(line, helper.NotePrefix); ok {
			h.notes = append(h.notes, n)
			continue
		}
		if p, ok := strings.CutPrefix(line, helper.HeldPrefix); ok {
			h.held = append(h.held, p)
			continue
		}
		rest, _ := io.ReadAll(h.report)
		h.failure = line + "\n" + string(rest)
		return
	}
}

// kill kills the helper, its process group and its cgroup.
func (h *helperProc) kill() {
	// The helper is the PID namespace's init (full containment): its
	// death kills every process of the namespace. Reduced containment
	// kills the process group, and the cgroup whatever left it.
	syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
	h.cmd.Process.Kill()
	h.cg.kill()
}

// discard kills a helper that will not be used and frees what it holds.
func (h *helperProc) discard() {
	h.kill()
	h.cmd.Wait()
	h.release()
}

// release closes the parent's pipe ends and removes the cgroup.
func (h *helperProc) release() {
	if h.released.Swap(true) {
		return
	}
	for _, f := range []*os.File{h.specW, h.stdinW, h.stdoutR, h.stderrR, h.reportR, h.netR} {
		if f != nil {
			f.Close()
		}
	}
	if h.proxy != nil {
		h.proxy.Close()
	}
	h.cg.remove()
}

// finish sends the helper its call once the container is built (and g
// has taken the protected names), waits for the command and every process
// it started, and has g move what it left at protected names. With a
// stream, the command's standard input and output are handed to it once
// the call is sent, and are no longer this run's to close.
func (h *helperProc) finish(ctx context.Context, c call, opts *Options, g *guard, st *stream) (*Result, error) {
	defer h.release()
	var killed atomic.Bool
	kill := sync.OnceFunc(func() { killed.Store(true); h.kill() })
	stop := context.AfterFunc(ctx, kill)
	defer stop()
	<-h.ready
	if h.failure != "" && !killed.Load() {
		h.kill()
		h.cmd.Wait()
		return nil, fault.Wrap(fault.Unavailable, errNotBuilt.With(errors.New(h.failure)), "sandbox: the container could not be set up")
	}
	if err := g.start(h.full, h.held); err != nil {
		h.kill()
		h.cmd.Wait()
		if errors.Is(err, errStale) {
			return nil, fault.Wrap(fault.Unavailable, err, "sandbox: nothing was run; retry")
		}
		return nil, fault.Wrap(fault.Unavailable, err, "sandbox: the protected names of the roots cannot be read, so a command cannot be kept from planting one; nothing was run")
	}
	start := time.Now()
	data := c.Encode()
	if len(data) > limits.RunMaxSpecBytes {
		h.kill()
		h.cmd.Wait()
		return nil, fault.LimitExceeded("sandbox: the call's description bytes", limits.RunMaxSpecBytes, int64(len(data)))
	}
	_, werr := h.specW.Write(data)
	h.specW.Close()
	served := h.serveProxy(ctx, opts.Proxy)
	max := opts.MaxOutputBytes
	if max == 0 {
		max = limits.RunDefaultOutputBytes
	}
	stdout, stderr := newHeadTail(max), newHeadTail(max)
	var copies sync.WaitGroup
	copies.Go(func() { copyOutput(stderr, h.stderrR) })
	// A stream gets the pipes once the command runs: the report ends at
	// the exec (its descriptor closes on exec), with the exec line and no
	// failure when the command started.
	var report []byte
	reported := false
	if st != nil && werr == nil {
		report, _ = io.ReadAll(h.report)
		reported = true
		if rep := splitReport(string(report)); rep.execd && rep.failure == "" {
			st.launched <- pipes{stdin: h.stdinW, stdout: h.stdoutR}
			h.stdinW, h.stdoutR = nil, nil
		}
	}
	if h.stdinW != nil {
		go func() {
			if opts.Stdin != nil {
				h.stdinW.Write(opts.Stdin)
			}
			h.stdinW.Close()
		}()
		copies.Go(func() { copyOutput(stdout, h.stdoutR) })
	}
	var exceeded atomic.Pointer[[2]string]
	watch, unwatch := context.WithCancel(context.Background())
	if h.tmp != "" {
		go watchScratch(watch, h.tmp, h.tmpBytes, func(bound, why string) { exceeded.Store(&[2]string{bound, why}); kill() })
	}
	if !reported {
		report, _ = io.ReadAll(h.report)
	}
	err := h.cmd.Wait()
	unwatch()
	stop()
	proxyNotes := served()
	// What is left of the command's process group (reduced containment:
	// background jobs; full: nothing, the namespace is gone) and of its
	// cgroup dies with it.
	syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
	h.cg.kill()
	drain(&copies, h.stdoutR, h.stderrR)
	res := &Result{Duration: time.Since(start), Stdout: stdout.output(), Stderr: stderr.output(), Containment: Reduced, Cgroup: h.cgReport}
	if h.full {
		res.Containment = Full
	}
	rep := splitReport(string(report))
	res.Notes, res.Closed, res.Network = append(h.notes, rep.notes...), rep.closed, proxyNotes
	failure, execd := rep.failure, rep.execd
	switch {
	case killed.Load():
	case failure != "":
		return nil, fault.Wrap(fault.Unavailable, errors.New(failure), "sandbox: the container could not be set up")
	case werr != nil:
		// Without its whole call the helper cannot have run anything.
		return nil, fault.Wrap(fault.Unavailable, errNotBuilt.With(werr), "sandbox: the helper did not take its call")
	case !execd:
		// Killed or crashed (by something else) before the exec.
		return nil, fault.Wrap(fault.Unavailable, errNotBuilt.With(fmt.Errorf("%v", h.cmd.ProcessState)), "sandbox: the helper ended before running the command")
	}
	if why := exceeded.Load(); why != nil {
		res.ExceededBound, res.Exceeded = why[0], why[1]
	}
	err = exitStatus(res, h.cmd, err, killed.Load())
	h.awaitGone()
	moved, gerr := g.finish()
	res.Quarantined = moved
	if gerr != nil {
		return nil, fault.Wrap(fault.Unavailable, gerr, "sandbox: the roots' protected names could not be read after the command, so what it made there may remain")
	}
	return res, err
}

// awaitGone returns once every process of the command is gone: in full
// containment the PID namespace went with its init; a cgroup is removed
// once empty (release); in reduced containment without one, setsid and
// setpgid fail, so the process group holds them all, and it is killed
// until it is empty, for at most limits.RunKillGrace (a zombie an init
// that does not reap leaves behind counts, and runs nothing).
func (h *helperProc) awaitGone() {
	alone := !h.full && h.cg == nil
	h.release()
	if !alone {
		return
	}
	pgid := h.cmd.Process.Pid
	deadline := time.Now().Add(limits.RunKillGrace)
	for wait := 100 * time.Microsecond; syscall.Kill(-pgid, 0) == nil && time.Now().Before(deadline); wait = min(2*wait, 20*time.Millisecond) {
		syscall.Kill(-pgid, syscall.SIGKILL)
		time.Sleep(wait)
	}
}

// copyBufs are the buffers output is read through: io.Copy would make
// (and zero) 32 KiB for each stream of every call.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// copyOutput copies a command's output stream to what keeps it, through a
// pooled buffer (the reader's WriteTo hidden, which would allocate its
// own).
func copyOutput(w io.Writer, r io.Reader) {
	b := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(b)
	io.CopyBuffer(w, struct{ io.Reader }{r}, *b)
}

// drain waits for the output copies to reach the end of the pipes, up to
// limits.RunKillGrace (a process outside the namespace and the cgroup
// could hold them open), then closes them.
func drain(copies *sync.WaitGroup, pipes ...*os.File) {
	done := make(chan struct{})
	go func() { copies.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-time.After(limits.RunKillGrace):
	}
	for _, p := range pipes {
		p.Close()
	}
	<-done
}

// helperReport is what the helper reported after its call: its notes, the
// directories Landlock closed, whether it reached the exec, and a failure
// (the rest of the report from the first line that is none of those).
type helperReport struct {
	notes, closed []string
	failure       string
	execd         bool
}

// splitReport reads the report the helper wrote after its call.
func splitReport(report string) helperReport {
	var r helperReport
	for report != "" {
		line, rest, ok := strings.Cut(report, "\n")
		n, isNote := strings.CutPrefix(line, helper.NotePrefix)
		d, isClosed := strings.CutPrefix(line, helper.ClosedPrefix)
		switch {
		case ok && line == helper.ExecLine:
			r.execd = true
		case ok && isNote:
			r.notes = append(r.notes, n)
		case ok && isClosed:
			r.closed = append(r.closed, d)
		default:
			r.failure = report
			return r
		}
		report = rest
	}
	return r
}

// exitStatus records how the command ended.
func exitStatus(res *Result, cmd *exec.Cmd, err error, killed bool) error {
	res.Killed = killed
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
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
// the host's user mapped to helper.ID and just the capabilities needed to
// build the container (dropped before the command runs), in a session of
// its own, killed if the host dies.
func helperAttr(full, network bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if !full {
		return a
	}
	a.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
		syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: helper.ID, HostID: os.Getuid(), Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: helper.ID, HostID: os.Getgid(), Size: 1}}
	a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP}
	if network {
		a.AmbientCaps = append(a.AmbientCaps, unix.CAP_NET_ADMIN) // the loopback's flags
	}
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
	if v := helper.LandlockABI(); v == 0 {
		notes = append(notes, "no Landlock: the container's mounts are the only filesystem layer")
	} else if v < helper.WantABI {
		notes = append(notes, fmt.Sprintf("Landlock ABI %d (of %d): the rights of later versions are not enforced", v, helper.WantABI))
	}
	return notes
}

// serveProxy serves the helper's listener with proxy for the command's
// life (nothing without a network); the function returned stops it and
// returns the proxy's notes.
func (h *helperProc) serveProxy(ctx context.Context, proxy Proxy) func() []string {
	if h.proxy == nil || proxy == nil {
		return func() []string { return nil }
	}
	ctx, cancel := context.WithCancel(ctx)
	var notes []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		notes = proxy.Serve(ctx, h.proxy)
	}()
	return func() []string {
		cancel()
		h.proxy.Close()
		<-done
		return notes
	}
}

// socketPair is a pair of connected Unix sockets for the helper to send
// a descriptor on: the parent's end and the helper's.
func socketPair() (parent, child *os.File, err error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(fds[0]), "sandbox-net"), os.NewFile(uintptr(fds[1]), "sandbox-net-helper"), nil
}

// receiveListener reads the listener the helper sends on f (one
// descriptor, SCM_RIGHTS).
func receiveListener(f *os.File) (net.Listener, error) {
	oob := make([]byte, syscall.CmsgSpace(4))
	_, oobn, _, _, err := syscall.Recvmsg(int(f.Fd()), make([]byte, 1), oob, syscall.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, err
	}
	msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("no descriptor in the message (%v)", err)
	}
	fds, err := syscall.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			syscall.Close(fd)
		}
		return nil, fmt.Errorf("not one descriptor in the message (%v)", err)
	}
	lf := os.NewFile(uintptr(fds[0]), "sandbox-proxy")
	defer lf.Close()
	return net.FileListener(lf)
}
