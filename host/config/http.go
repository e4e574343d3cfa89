package config

import (
	"slices"
	"strings"
	"time"

	"github.com/capkit/capkit/capability"
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
//	stateless = false               # also serve the 2026-07-28 stateless protocol (one shared session per actor)
//	tokens = { assistant = "/run/secrets/assistant", reviewer = "/run/secrets/reviewer" }
//
// tokens serves several actors from one server: each key is a configured
// actor, each value the file holding that actor's bearer token (mode 600:
// a file its group or others may read is refused when serve reads it).
// A request carrying a token is served as its actor, with the actor's
// capabilities and budgets, and a session opened with one token refuses
// requests carrying another. The files are resolved like the other paths
// and may not lie inside any root: a model could read them.
type HTTPConfig struct {
	MaxSessions      int               `toml:"max_sessions"`
	SessionIdle      Duration          `toml:"session_idle"`
	MaxInFlightBytes int64             `toml:"max_in_flight_bytes"`
	BodyTimeout      Duration          `toml:"body_timeout"`
	Stateless        bool              `toml:"stateless"`
	Tokens           map[string]string `toml:"tokens"`
}

// TokenActors are the actors [http] tokens names, in name order.
func (h HTTPConfig) TokenActors() []string { return sortedKeys(h.Tokens) }

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
	if h.Tokens != nil && len(h.Tokens) == 0 {
		errs.add(c.Errorf("http.tokens", "empty: name at least one actor's token file, or remove the key"))
	}
	for _, actor := range sortedKeys(h.Tokens) {
		field := "http.tokens." + actor
		if _, ok := c.Actors[actor]; !ok && (len(c.Actors) > 0 || actor != DefaultActor) {
			errs.add(c.Errorf(field, "no actor %q is configured (configured: %s)", actor, strings.Join(c.ActorNames(), ", ")))
		}
		if p := h.Tokens[actor]; p == "" || strings.ContainsRune(p, 0) {
			errs.add(c.Errorf(field, "empty path or NUL byte: give the file holding the actor's token"))
		}
	}
}

// resolveHTTP makes the token files absolute and refuses one inside a
// root (any root: reading it is enough to act as its actor) or named for
// two actors.
func (c *Config) resolveHTTP(errs *errorList) {
	byFile := map[string]string{}
	for _, actor := range sortedKeys(c.HTTP.Tokens) {
		field := "http.tokens." + actor
		p := c.HTTP.Tokens[actor]
		if p == "" || strings.ContainsRune(p, 0) {
			continue // validateHTTP said so
		}
		abs, err := c.abs(p)
		if err != nil {
			errs.add(c.Errorf(field, "%s", err))
			continue
		}
		c.HTTP.Tokens[actor] = abs
		real := realPaths(abs)
		for _, r := range c.Roots {
			if slices.ContainsFunc(real, func(p string) bool { return capability.Within(r.Dir, p) }) {
				errs.add(c.Errorf(field, "%s lies inside root %s: a model could read the token", abs, r.Dir))
			}
		}
		for _, f := range real {
			if other, ok := byFile[f]; ok {
				errs.add(c.Errorf(field, "%s is also actor %s's token file: each actor needs a token of its own", abs, other))
				break
			}
			byFile[f] = actor
		}
	}
}
