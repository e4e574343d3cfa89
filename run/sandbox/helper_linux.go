package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/limits"
)

// Main is the sandbox helper: it reads its spec from the parent, builds
// the container, and execs the command. It returns only when that failed,
// after telling the parent why; the caller exits with the code returned.
func Main() int {
	runtime.LockOSThread()
	report := os.NewFile(reportFD, "sandbox-report")
	note := func(msg string) {
		if report != nil {
			io.WriteString(report, notePrefix+strings.ReplaceAll(msg, "\n", " ")+"\n")
		}
	}
	err := serve(report, note)
	if report != nil {
		io.WriteString(report, err.Error())
	}
	return 125
}

func serve(report *os.File, note func(string)) error {
	in := os.NewFile(specFD, "sandbox-spec")
	if in == nil || report == nil {
		return errors.New("sandbox helper: no spec on descriptor 3; it is started by sandbox.Run")
	}
	// The view, then (after the container is built) the call.
	dec := json.NewDecoder(io.LimitReader(in, 2*limits.RunMaxSpecBytes))
	var msg message
	if err := dec.Decode(&msg); err != nil || msg.Spec == nil {
		return fmt.Errorf("sandbox helper: bad spec: %v", err)
	}
	unix.CloseOnExec(reportFD)
	v, err := build(&msg, note)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(report, readyLine+"\n"); err != nil {
		return fmt.Errorf("sandbox helper: %w", err)
	}
	var c call
	if err := dec.Decode(&c); err != nil || len(c.Argv) == 0 {
		return fmt.Errorf("sandbox helper: bad call: %v", err)
	}
	in.Close()
	return execCall(report, &msg, v, &c)
}

// built is what the helper prepared before its call.
type built struct {
	tmp, tmpdir string
	mounted     map[string]bool // protected paths mounted read-only
	filter      []unix.SockFilter
}

// build makes the container's view (full containment: its root) and
// everything else that does not depend on the call.
func build(msg *message, note func(string)) (*built, error) {
	v := &built{tmp: msg.Tmp}
	if msg.Full {
		var err error
		if v.mounted, err = buildRoot(msg.Spec, note); err != nil {
			return nil, err
		}
		v.tmp = "/tmp"
		if err := unix.Sethostname([]byte("capkit-sandbox")); err != nil {
			return nil, fmt.Errorf("sandbox helper: hostname: %w", err)
		}
	}
	v.tmpdir = v.tmp
	if len(rootsUnder(msg, v.tmp)) > 0 {
		v.tmpdir = filepath.Join(v.tmp, scratchDir)
	}
	for _, d := range []string{filepath.Join(v.tmp, "home"), v.tmpdir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("sandbox helper: %s: %w", d, err)
		}
	}
	var err error
	if v.filter, err = seccompFilter(msg.Full); err != nil {
		return nil, fmt.Errorf("sandbox helper: %w", err)
	}
	return v, nil
}

// execCall restricts the helper (capabilities, Landlock, seccomp,
// rlimits) and execs the call's command.
func execCall(report io.Writer, msg *message, v *built, c *call) error {
	s := msg.Spec
	s.Argv, s.Dir, s.Env = c.Argv, c.Dir, c.Env
	if c.NullStdin {
		if err := nullStdin(); err != nil {
			return err
		}
	}
	env := append(s.Env[:len(s.Env):len(s.Env)], "HOME="+filepath.Join(v.tmp, "home"), "TMPDIR="+v.tmpdir)
	path, err := lookPath(s.Argv[0], env)
	if err != nil {
		return err
	}
	// The exec's arguments are made before the address-space limit, which
	// the helper's own mappings may exceed (the Go runtime then could not
	// allocate).
	pathp, err := syscall.BytePtrFromString(path)
	if err != nil {
		return fmt.Errorf("sandbox helper: exec %s: %w", s.Argv[0], err)
	}
	argvp, err := syscall.SlicePtrFromStrings(s.Argv)
	if err != nil {
		return fmt.Errorf("sandbox helper: exec %s: %w", s.Argv[0], err)
	}
	envp, err := syscall.SlicePtrFromStrings(env)
	if err != nil {
		return fmt.Errorf("sandbox helper: exec %s: %w", s.Argv[0], err)
	}
	if err := unix.Chdir(s.Dir); err != nil {
		return fmt.Errorf("sandbox helper: working directory %s: %w", s.Dir, err)
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	if err := restrictLandlock(msg, v.tmp, v.mounted); err != nil {
		return fmt.Errorf("sandbox helper: %w", err)
	}
	if err := loadSeccomp(v.filter); err != nil {
		return fmt.Errorf("sandbox helper: %w", err)
	}
	// Descriptors the host process inherited without close-on-exec (from
	// whatever started it) would pass into the command: none but 0, 1 and
	// 2 survive the exec.
	if err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fmt.Errorf("sandbox helper: closing inherited descriptors: %w", err)
	}
	if err := setLimits(s.Limits); err != nil {
		return err
	}
	if _, err := io.WriteString(report, execLine+"\n"); err != nil {
		return fmt.Errorf("sandbox helper: %w", err)
	}
	_, _, e := unix.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(pathp)), uintptr(unsafe.Pointer(&argvp[0])), uintptr(unsafe.Pointer(&envp[0])))
	return fmt.Errorf("sandbox helper: exec %s: %w", s.Argv[0], e)
}

// nullStdin makes /dev/null the standard input.
func nullStdin() error {
	fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("sandbox helper: /dev/null: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Dup3(fd, 0, 0); err != nil {
		return fmt.Errorf("sandbox helper: standard input: %w", err)
	}
	return nil
}

// scratchDir is the TMPDIR inside the private tmp when roots are shown
// under it (see tmpRules).
const scratchDir = "scratch"

// lookPath finds the program as a shell would, in env's PATH.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			os.Setenv("PATH", p)
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("sandbox helper: %s not found in the container's PATH: %w", name, err)
	}
	return p, nil
}

// setLimits sets the rlimits of the command (and every process it starts).
func setLimits(l Limits) error {
	set := []struct {
		res int
		v   int64
	}{
		{unix.RLIMIT_AS, l.MemoryBytes},
		{unix.RLIMIT_NPROC, l.Processes},
		{unix.RLIMIT_FSIZE, l.FileBytes},
		{unix.RLIMIT_NOFILE, l.OpenFiles},
		{unix.RLIMIT_CPU, l.CPUSeconds},
		{unix.RLIMIT_CORE, 0},
		{unix.RLIMIT_MEMLOCK, 0},
		{unix.RLIMIT_MSGQUEUE, 0},
	}
	for _, r := range set {
		lim := unix.Rlimit{Cur: uint64(r.v), Max: uint64(r.v)}
		if err := unix.Setrlimit(r.res, &lim); err != nil {
			return fmt.Errorf("sandbox helper: rlimit %d to %d: %w", r.res, r.v, err)
		}
	}
	return nil
}

// dropCapabilities leaves the process, and whatever it execs, without any
// capability: the ambient and inheritable sets cleared, the bounding set
// emptied (so neither root nor file capabilities regain any on exec), and
// the effective and permitted sets cleared last.
func dropCapabilities() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox helper: clearing ambient capabilities: %w", err)
	}
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("sandbox helper: dropping capability %d: %w", c, err)
		}
	}
	// The kernel knows capabilities CAP_LAST_CAP of this build may not:
	// drop on until it says there are no more.
	for c := unix.CAP_LAST_CAP + 1; c < 64; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			break
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("sandbox helper: clearing capabilities: %w", err)
	}
	return nil
}
