package cli

import (
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// Version is set at link time with -ldflags "-X github.com/capkit/capkit/cmd/capkit/internal/cli.Version=…";
// otherwise it comes from the build information (module version and VCS
// revision).
var Version = "dev"

// BuildInfo is what capkit version reports.
type BuildInfo struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitzero"`
	Time     string `json:"time,omitzero"`
	Modified bool   `json:"modified,omitzero"`
	Go       string `json:"go,omitzero"`
}

// readBuildInfo is the version set at link time, else the module version
// and VCS stamp of the build ("(devel)" only when the build has neither).
func readBuildInfo() BuildInfo {
	info := BuildInfo{Version: Version}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	info.Go = bi.GoVersion
	if info.Version == "dev" && bi.Main.Version != "" {
		info.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.time":
			info.Time = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

func (b BuildInfo) String() string {
	var extra []string
	if b.Revision != "" {
		extra = append(extra, "revision "+b.Revision)
	}
	if b.Time != "" {
		extra = append(extra, b.Time)
	}
	if b.Modified {
		extra = append(extra, "with local changes")
	}
	if b.Go != "" {
		extra = append(extra, b.Go)
	}
	if len(extra) == 0 {
		return "capkit " + b.Version
	}
	return "capkit " + b.Version + " (" + strings.Join(extra, ", ") + ")"
}

func newVersionCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print capkit's version and the revision it was built from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			info := readBuildInfo()
			return env.Print(info, info.String())
		},
	}
}
