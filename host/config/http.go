package config

import (
	"time"

	"github.com/capkit/capkit/limits"
)

// HTTPConfig bounds `capkit serve --http`; serve's flags of the same names
// override it. Zero (absent) keys keep the defaults in limits.
//
//	[http]
//	max_sessions = 64               # live MCP sessions; a new one evicts the least recently used idle one
//	session_idle = "30m"            # a session without requests is closed after this long
//	max_in_flight_bytes = 268435456 # request bodies held at once across all connections
//	body_timeout = "30s"            # time to send one request body
//	stateless = false               # also serve the 2026-07-28 stateless protocol (one shared session)
type HTTPConfig struct {
	MaxSessions      int      `toml:"max_sessions"`
	SessionIdle      Duration `toml:"session_idle"`
	MaxInFlightBytes int64    `toml:"max_in_flight_bytes"`
	BodyTimeout      Duration `toml:"body_timeout"`
	Stateless        bool     `toml:"stateless"`
}

// validateHTTP checks the [http] table: every bound within its range (a
// key given as 0 is an error, as for tool policies).
func (c *Config) validateHTTP(errs *errorList) {
	h := c.HTTP
	if v := h.MaxSessions; (v == 0 && c.has("http.max_sessions")) || v < 0 || v > limits.MCPHardMaxSessions {
		errs.add(c.Errorf("http.max_sessions", "%d is outside 1..%d (remove the key for the default)", v, limits.MCPHardMaxSessions))
	}
	if v := h.MaxInFlightBytes; (v == 0 && c.has("http.max_in_flight_bytes")) || v < 0 || (v > 0 && v < limits.MCPMaxMessageBytes) || v > limits.MCPHardMaxInFlightBytes {
		errs.add(c.Errorf("http.max_in_flight_bytes", "%d is outside %d..%d: it must hold one message of the largest size", v, limits.MCPMaxMessageBytes, int64(limits.MCPHardMaxInFlightBytes)))
	}
	checkDuration := func(key string, d Duration, hard time.Duration) {
		if v := time.Duration(d); (v == 0 && c.has("http."+key)) || v < 0 || v > hard {
			errs.add(c.Errorf("http."+key, "%v is outside (0, %v]", v, hard))
		}
	}
	checkDuration("session_idle", h.SessionIdle, limits.MCPHardMaxSessionIdle)
	checkDuration("body_timeout", h.BodyTimeout, limits.MCPHardMaxBodyTimeout)
}
