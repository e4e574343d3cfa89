//go:build linux && !amd64 && !arm64

package sandbox

// Other architectures get no filter: Run fails as unavailable
// (seccompArch).
const (
	auditArch = 0
	hasX32    = false
)

var syscallNumbers []struct {
	name string
	nr   uint32
}
