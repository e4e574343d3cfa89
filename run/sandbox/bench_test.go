package sandbox

import (
	"context"
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
