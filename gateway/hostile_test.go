package gateway

import "github.com/capkit/capkit/internal/testkit/hostile"

// This test binary serves as the hostile upstream (internal/testkit/hostile)
// when its environment asks.
func init() { hostile.ServeIfAsked() }

const (
	hostileEnv    = hostile.Env
	hostileDirEnv = hostile.DirEnv
)

var (
	hostileTools = hostile.Tools
	writeDefs    = hostile.WriteDefs
)
