package config

import (
	"time"

	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/serve/script"
)

// ScriptConfig configures scripts: `capkit script run` and, when enabled,
// the run_script tool (effect run_script) that lets a model run a Starlark
// workflow over its other tools.
//
//	[script]
//	enabled = true                # offer run_script to actors granted run_script
//	max_steps = 10000000          # optional: Starlark steps (default 10,000,000)
//	timeout = "30s"               # optional: wall clock, tool calls included
//	max_result_bytes = 1048576    # optional: the JSON of the script's result
//	max_memory_bytes = 268435456  # optional: heap, enforced in a worker process
//	allow_time = false            # optional: grant the time module (host clock)
//
// The run_script tool's own policy is set in [tool.run_script].
type ScriptConfig struct {
	Enabled        bool     `toml:"enabled"`
	MaxSteps       int64    `toml:"max_steps"`
	Timeout        Duration `toml:"timeout"`
	MaxResultBytes int64    `toml:"max_result_bytes"`
	MaxMemoryBytes int64    `toml:"max_memory_bytes"`
	AllowTime      bool     `toml:"allow_time"`
}

// Options are the script bounds; the caller adds the provenance policy
// (Config.ProvenancePolicy), the worker and printing.
func (s ScriptConfig) Options() script.Options {
	return script.Options{
		MaxSteps:       uint64(s.MaxSteps),
		Timeout:        time.Duration(s.Timeout),
		MaxResultBytes: s.MaxResultBytes,
		MaxMemoryBytes: s.MaxMemoryBytes,
		AllowTime:      s.AllowTime,
	}
}

// validateScript checks the [script] table: every bound within 1..its hard
// limit (a key given as 0 is an error, as for tool policies).
func (c *Config) validateScript(errs *errorList) {
	s := c.Script
	check := func(key string, v, hard int64) {
		f := "script." + key
		if (v == 0 && c.has(f)) || v < 0 || v > hard {
			errs.add(c.Errorf(f, "%d is outside 1..%d (remove the key for the default)", v, hard))
		}
	}
	check("max_steps", s.MaxSteps, limits.ScriptHardSteps)
	check("max_result_bytes", s.MaxResultBytes, limits.ScriptHardResultBytes)
	check("max_memory_bytes", s.MaxMemoryBytes, limits.ScriptHardMemoryBytes)
	if d := time.Duration(s.Timeout); (d == 0 && c.has("script.timeout")) || d < 0 || d > limits.ScriptHardTimeout {
		errs.add(c.Errorf("script.timeout", "%v is outside (0, %v]", d, limits.ScriptHardTimeout))
	}
}
