package testkit

import (
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// Child is the test binary re-run as a child process that runs one test,
// for crash tests: the parent kills it with SIGKILL at some instant and
// checks what it left on disk.
type Child struct {
	cmd *exec.Cmd
	// Stdout is the child's standard output.
	Stdout io.Reader
}

// StartChild re-runs this test binary running only the test named test
// (the child's body, which should skip unless env selects it), with env
// added to its environment.
func StartChild(t testing.TB, test string, env ...string) *Child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return &Child{cmd: cmd, Stdout: out}
}

// Kill sends the child SIGKILL. A child that already exited is not an
// error; Wait tells the two apart.
func (c *Child) Kill(t testing.TB) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil && err != os.ErrProcessDone {
		t.Fatal(err)
	}
}

// Wait waits for the child to end and reports whether SIGKILL ended it,
// with its error (nil for exit status 0). Wait closes Stdout: finish
// reading it first.
func (c *Child) Wait() (killed bool, err error) {
	err = c.cmd.Wait()
	ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, err
}
