package helper

import (
	"errors"
	"io"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"

	"github.com/capkit/capkit/limits"
)

// serveHelper reads the view from the parent, builds the container, and
// execs the call's command. It returns only when that failed, after
// telling the parent why; the caller exits with the code returned.
func serveHelper() int {
	runtime.LockOSThread()
	if !isPipe(SpecFD) || !isPipe(ReportFD) {
		io.WriteString(os.Stderr, "sandbox helper: no spec pipe on descriptor 3 or report pipe on 4; it is started by sandbox.Run\n")
		return 125
	}
	report := os.NewFile(ReportFD, "sandbox-report")
	note := func(msg string) { io.WriteString(report, NotePrefix+oneLine(msg)+"\n") }
	io.WriteString(report, serve(report, note).Error())
	return 125
}

// isPipe reports whether fd is an open pipe, as Run's spec and report
// descriptors are (started by hand, those numbers may be the runtime's
// own files, or nothing).
func isPipe(fd int) bool {
	var st syscall.Stat_t
	return syscall.Fstat(fd, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFIFO
}

// maxFilter is BPF_MAXINSNS, the most instructions a filter may have.
const maxFilter = 4096

func serve(report *os.File, note func(string)) error {
	in := os.NewFile(SpecFD, "sandbox-spec")
	// The view, then (after the container is built) the call.
	msg, err := DecodeMessage(in, limits.RunMaxSpecBytes)
	if err != nil {
		return wrap("sandbox helper: bad spec", err)
	}
	syscall.CloseOnExec(ReportFD)
	v, err := build(msg, note)
	if err != nil {
		return err
	}
	// Everything that does not depend on the call is done before it, so
	// a helper started ahead waits restricted, and its call costs the
	// exec alone.
	if v.closed, err = restrict(msg, v); err != nil {
		return err
	}
	var held string
	for _, p := range msg.View.Protected {
		if v.mounted[p] {
			held += HeldPrefix + oneLine(p) + "\n"
		}
	}
	if _, err := io.WriteString(report, held+ReadyLine+"\n"); err != nil {
		return wrap("sandbox helper", err)
	}
	c, err := DecodeCall(in, limits.RunMaxSpecBytes)
	if err == nil && len(c.Argv) == 0 {
		err = errors.New("no command")
	}
	if err != nil {
		return wrap("sandbox helper: bad call", err)
	}
	in.Close()
	return execCall(report, msg, v, c)
}

// built is what the helper prepared before its call.
type built struct {
	tmp     string          // the private tmp: HOME is in it, TMPDIR is it
	mounted map[string]bool // protected paths mounted read-only
	filter  []syscall.SockFilter
	closed  []string // the directories of the writable roots Landlock closed
}

// build makes the container's view (full containment: its root) and
// everything else that does not depend on the call.
func build(msg *Message, note func(string)) (*built, error) {
	filter, err := decodeFilter(msg.Seccomp)
	if err != nil {
		return nil, err
	}
	v := &built{tmp: msg.Tmp, filter: filter}
	if msg.Full {
		if v.mounted, err = buildRoot(msg.View, note); err != nil {
			return nil, err
		}
		v.tmp = "/tmp"
		if err := syscall.Sethostname([]byte("capkit-sandbox")); err != nil {
			return nil, wrap("sandbox helper: hostname", err)
		}
	}
	switch {
	case msg.Network && !msg.Full:
		return nil, errNetworkReduced
	case msg.Network:
		if err := startNetwork(); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(join(v.tmp, "home"), 0o700); err != nil {
		return nil, wrap("sandbox helper: "+join(v.tmp, "home"), err)
	}
	return v, nil
}

// decodeFilter reads the seccomp filter Run assembled: struct
// sock_filter (code u16, jt u8, jf u8, k u32) in the host's byte order.
func decodeFilter(b []byte) ([]syscall.SockFilter, error) {
	const size = int(unsafe.Sizeof(syscall.SockFilter{}))
	if len(b) == 0 || len(b)%size != 0 || len(b)/size > maxFilter {
		return nil, errors.New("sandbox helper: bad seccomp filter of " + strconv.Itoa(len(b)) + " bytes")
	}
	f := make([]syscall.SockFilter, len(b)/size)
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), len(b)), b)
	return f, nil
}

// execCall sets the rlimits and execs the call's command in the
// restricted helper.
func execCall(report io.Writer, msg *Message, v *built, c *Call) error {
	if c.NullStdin {
		if err := nullStdin(); err != nil {
			return err
		}
	}
	env := append(c.Env[:len(c.Env):len(c.Env)], "HOME="+join(v.tmp, "home"), "TMPDIR="+v.tmp)
	path, err := lookPath(c.Argv[0], env)
	if err != nil {
		return err
	}
	// The exec's arguments are made before the address-space limit, which
	// the helper's own mappings may exceed (the Go runtime then could not
	// allocate).
	pathp, err := syscall.BytePtrFromString(path)
	if err != nil {
		return wrap("sandbox helper: exec "+c.Argv[0], err)
	}
	argvp, err := syscall.SlicePtrFromStrings(c.Argv)
	if err != nil {
		return wrap("sandbox helper: exec "+c.Argv[0], err)
	}
	envp, err := syscall.SlicePtrFromStrings(env)
	if err != nil {
		return wrap("sandbox helper: exec "+c.Argv[0], err)
	}
	if err := syscall.Chdir(c.Dir); err != nil {
		return wrap("sandbox helper: working directory "+c.Dir, err)
	}
	if err := setLimits(msg.View.Limits); err != nil {
		return err
	}
	var lines string
	for _, d := range v.closed {
		lines += ClosedPrefix + oneLine(d) + "\n"
	}
	if _, err := io.WriteString(report, lines+ExecLine+"\n"); err != nil {
		return wrap("sandbox helper", err)
	}
	_, _, e := syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(pathp)), uintptr(unsafe.Pointer(&argvp[0])), uintptr(unsafe.Pointer(&envp[0])))
	return wrap("sandbox helper: exec "+c.Argv[0], e)
}

// restrict drops the helper's capabilities and enforces Landlock and the
// seccomp filter (the rlimits come with the call: the address-space
// limit would bound the helper's own allocations). It returns the
// directories of the writable roots Landlock closed.
func restrict(msg *Message, v *built) (closed []string, err error) {
	if err := dropCapabilities(); err != nil {
		return nil, err
	}
	if closed, err = restrictLandlock(msg, v.tmp); err != nil {
		return nil, wrap("sandbox helper", err)
	}
	if err := loadSeccomp(v.filter); err != nil {
		return nil, wrap("sandbox helper: seccomp filter", err)
	}
	// Descriptors the host process inherited without close-on-exec (from
	// whatever started it) would pass into the command: none but 0, 1 and
	// 2 survive the exec.
	if err := closeRangeCloexec(3); err != nil {
		return nil, wrap("sandbox helper: closing inherited descriptors", err)
	}
	return closed, nil
}

// nullStdin makes /dev/null the standard input.
func nullStdin() error {
	fd, err := syscall.Open("/dev/null", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return wrap("sandbox helper: /dev/null", err)
	}
	defer syscall.Close(fd)
	if err := syscall.Dup3(fd, 0, 0); err != nil {
		return wrap("sandbox helper: standard input", err)
	}
	return nil
}

// lookPath finds the program as os/exec's LookPath would, in env's PATH:
// the first executable regular file of that name, refused when it is
// found through a relative entry (one naming the working directory).
func lookPath(name string, env []string) (string, error) {
	for i := 0; i < len(name); i++ {
		if name[i] == '/' {
			return name, nil
		}
	}
	var path string
	for _, kv := range env {
		if hasPrefix(kv, "PATH=") {
			path = kv[len("PATH="):]
		}
	}
	for _, dir := range splitList(path) {
		if dir == "" {
			dir = "."
		}
		p := dir + "/" + name
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() || syscall.Access(p, 1) != nil {
			continue
		}
		if !hasPrefix(p, "/") {
			return "", errors.New("sandbox helper: " + name + " resolves to " + p + ", relative to the working directory, in the container's PATH")
		}
		return p, nil
	}
	return "", errors.New("sandbox helper: " + name + " not found in the container's PATH " + strconv.Quote(path))
}

// setLimits sets the rlimits of the command (and every process it starts).
func setLimits(l Limits) error {
	set := []struct {
		res int
		v   int64
	}{
		{syscall.RLIMIT_AS, l.MemoryBytes},
		{rlimitNproc, l.Processes},
		{syscall.RLIMIT_FSIZE, l.FileBytes},
		{syscall.RLIMIT_NOFILE, l.OpenFiles},
		{syscall.RLIMIT_CPU, l.CPUSeconds},
		{syscall.RLIMIT_CORE, 0},
		{rlimitMemlock, 0},
		{rlimitMsgqueue, 0},
	}
	for _, r := range set {
		if err := setrlimit(r.res, r.v); err != nil {
			return wrap("sandbox helper: rlimit "+strconv.Itoa(r.res)+" to "+strconv.FormatInt(r.v, 10), err)
		}
	}
	return nil
}

// dropCapabilities leaves the process, and whatever it execs, without any
// capability: the ambient and inheritable sets cleared, the bounding set
// emptied (so neither root nor file capabilities regain any on exec), and
// the effective and permitted sets cleared last.
func dropCapabilities() error {
	if err := prctl(prCapAmbient, prCapAmbientClear, 0); err != nil {
		return wrap("sandbox helper: clearing ambient capabilities", err)
	}
	// Capabilities are numbered from 0 without gaps: the kernel refuses
	// (EINVAL) the first one past those it knows. Without CAP_SETPCAP
	// (reduced containment as an unprivileged user) the bounding set
	// cannot be changed (EPERM), and need not be: such a process holds
	// no capability, and no_new_privs, set before the exec, keeps the
	// command from gaining one from a file.
	for c := 0; c < 64; c++ {
		err := prctl(prCapbsetDrop, uintptr(c), 0)
		if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.EPERM) && !holdsCapability(capSetpcap) {
			break
		}
		if err != nil {
			return wrap("sandbox helper: dropping capability "+strconv.Itoa(c), err)
		}
	}
	if err := clearCapabilities(); err != nil {
		return wrap("sandbox helper: clearing capabilities", err)
	}
	return nil
}
