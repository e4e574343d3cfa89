package host

import (
	"os"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/run"
	"github.com/capkit/capkit/run/sandbox"
)

// registerRun registers run_shell, and run_test and run_build for the
// commands [test] and [build] declare, with capkit itself as the sandbox
// helper, the next command's container built ahead (killed when the host
// closes), and the audit log told how each command was contained.
func registerRun(b *kernel.Builder, h *Host) error {
	helper, err := SandboxHelper()
	if err != nil {
		return err
	}
	warm := sandbox.NewWarm()
	h.OnClose(func() error { warm.Close(); return nil })
	return run.RegisterTools(b, &run.ToolOptions{Config: h.Config.RunOptions(), Helper: helper, Audit: h.audit, Warm: warm})
}

// SandboxHelper is the command that starts capkit as the sandbox helper
// (capkit with sandbox.HelperArg, which run/sandbox serves from its
// package init).
func SandboxHelper() ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fault.Wrap(fault.Unavailable, err, "cannot locate the capkit executable for the sandbox helper")
	}
	return []string{exe, sandbox.HelperArg}, nil
}
