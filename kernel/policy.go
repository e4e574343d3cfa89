package kernel

import (
	"fmt"
	"time"

	"github.com/capkit/capkit/limits"
)

// Policy bounds one tool. A zero field means the documented default of
// package limits (DefaultMaxCalls, DefaultMaxInputBytes,
// DefaultMaxOutputBytes, DefaultTimeout, DefaultMaxConcurrent); no field
// may exceed the matching hard limit.
type Policy struct {
	// Name is the tool's name as the model sees it.
	Name string
	// MaxCalls bounds calls per session.
	MaxCalls int
	// MaxInputBytes bounds the encoded arguments of one call.
	MaxInputBytes int64
	// MaxOutputBytes bounds the result of one call (text plus structured
	// content). A larger result is a limit failure, never truncated.
	MaxOutputBytes int64
	// Timeout bounds the handler's run time.
	Timeout time.Duration
	// MaxConcurrent bounds the calls of this tool running at once, over
	// every session of the runtime. A handler abandoned at its deadline
	// keeps its slot until it returns; a call past the bound fails with
	// limit before its handler runs.
	MaxConcurrent int
}

// withDefaults fills zero fields and checks the hard limits.
func (p Policy) withDefaults() (Policy, error) {
	if p.MaxCalls == 0 {
		p.MaxCalls = limits.DefaultMaxCalls
	}
	if p.MaxInputBytes == 0 {
		p.MaxInputBytes = limits.DefaultMaxInputBytes
	}
	if p.MaxOutputBytes == 0 {
		p.MaxOutputBytes = limits.DefaultMaxOutputBytes
	}
	if p.Timeout == 0 {
		p.Timeout = limits.DefaultTimeout
	}
	if p.MaxConcurrent == 0 {
		p.MaxConcurrent = limits.DefaultMaxConcurrent
	}
	switch {
	case p.MaxCalls < 0 || p.MaxCalls > limits.HardMaxCalls:
		return p, fmt.Errorf("kernel: tool %q: max calls %d outside 1..%d", p.Name, p.MaxCalls, limits.HardMaxCalls)
	case p.MaxInputBytes < 0 || p.MaxInputBytes > limits.HardMaxInputBytes:
		return p, fmt.Errorf("kernel: tool %q: max input bytes %d outside 1..%d", p.Name, p.MaxInputBytes, limits.HardMaxInputBytes)
	case p.MaxOutputBytes < 0 || p.MaxOutputBytes > limits.HardMaxOutputBytes:
		return p, fmt.Errorf("kernel: tool %q: max output bytes %d outside 1..%d", p.Name, p.MaxOutputBytes, limits.HardMaxOutputBytes)
	case p.MaxConcurrent < 0 || p.MaxConcurrent > limits.HardMaxConcurrent:
		return p, fmt.Errorf("kernel: tool %q: max concurrent calls %d outside 1..%d", p.Name, p.MaxConcurrent, limits.HardMaxConcurrent)
	case p.Timeout < 0 || p.Timeout > limits.HardMaxTimeout:
		return p, fmt.Errorf("kernel: tool %q: timeout %v outside 0..%v", p.Name, p.Timeout, limits.HardMaxTimeout)
	}
	return p, nil
}

// RaiseHint is the part of a bound's failure that says how a host raises
// it for one tool: the key of [tool.NAME] in capkit.toml (applied through
// Options.PolicyOverride).
func RaiseHint(tool, key string) string {
	return "or have the host raise [tool." + tool + "] " + key + " in capkit.toml"
}
