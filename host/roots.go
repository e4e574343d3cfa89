package host

import (
	"fmt"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/host/config"
	"github.com/capkit/capkit/internal/atfile"
)

// checkRoots refuses a root that is a pseudo-filesystem (procfs, sysfs...:
// kernel state, not stored files) and returns a warning for each
// pseudo-filesystem mounted inside a root, which every tool refuses at
// use (internal/atfile checks each open and each step of a walk).
func checkRoots(roots []config.Root) ([]string, error) {
	var warnings []string
	for _, r := range roots {
		fs, err := atfile.PseudoFSOf(r.Dir)
		if err != nil {
			continue // the tools report an unusable root when it is used
		}
		if fs != "" {
			return nil, fault.New(fault.InvalidInput, "root %s is a %s pseudo-filesystem (kernel state, not stored files), which capkit never serves: grant a directory of ordinary files", r.Dir, fs)
		}
		mounts, err := atfile.PseudoMounts(r.Dir)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("the mounts inside root %s cannot be listed (%v); pseudo-filesystems there are still refused when a tool meets them", r.Dir, err))
			continue
		}
		for _, m := range mounts {
			warnings = append(warnings, fmt.Sprintf("root %s contains a %s pseudo-filesystem at %s: every tool refuses it (denied), and a walk (tree_list, glob, grep) that meets it fails; list or search below it", r.Dir, m.FS, m.Path))
		}
	}
	return warnings, nil
}
