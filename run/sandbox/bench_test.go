package sandbox

import (
	"context"
	"os/exec"
	"testing"
)

// BenchmarkRunTrue is the cost of a contained `true`: starting the helper,
// building the container, exec, wait.
func BenchmarkRunTrue(b *testing.B) {
	for _, reduced := range []bool{false, true} {
		name := "full"
		if reduced {
			name = "reduced"
		}
		b.Run(name, func(b *testing.B) {
			root := b.TempDir()
			s := &Spec{Argv: []string{"/bin/true"}, Dir: root, Writable: []string{root}, Env: []string{"PATH=/usr/bin:/bin"}}
			o := &Options{Helper: helper(b), Reduced: reduced}
			for b.Loop() {
				res, err := Run(context.Background(), s, o)
				if err != nil || res.ExitCode != 0 {
					b.Fatal(err, res)
				}
			}
		})
	}
}

// BenchmarkBwrapTrue is the peer: bubblewrap starting `true` with every
// namespace unshared (bench/run.sh installs it).
func BenchmarkBwrapTrue(b *testing.B) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skip("bwrap is not installed (bench/run.sh installs it)")
	}
	for b.Loop() {
		if err := exec.Command(bwrap, "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}
