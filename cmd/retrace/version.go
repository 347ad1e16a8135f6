package main

import (
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/retrace-dev/retrace/harness"
	"github.com/retrace-dev/retrace/trajectory"
	"github.com/spf13/cobra"
)

// version is set at release time with -ldflags "-X main.version=v1.2.3";
// otherwise it comes from the module's build info (harness.Version).
var version = ""

type versionInfo struct {
	Version string `json:"version"`
	// Revision is the git revision of a build from a checkout ("-dirty"
	// with uncommitted changes), as session_start.harness_revision holds it.
	Revision          string `json:"revision,omitempty"`
	Go                string `json:"go"`
	TrajectoryVersion int    `json:"trajectory_version"`
}

func currentVersion() versionInfo {
	bv := harness.Version()
	if version != "" {
		bv.Version = version
	}
	return versionInfo{Version: bv.Version, Revision: bv.Revision, Go: runtime.Version(), TrajectoryVersion: trajectory.Version}
}

func newVersionCmd(sys *IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print retrace's version and the trajectory format it writes",
		Args:  noArgs,
	}
	format := addFormatFlag(cmd, "text", "json")
	cmd.RunE = func(*cobra.Command, []string) error {
		if err := format.check(); err != nil {
			return err
		}
		info := currentVersion()
		if format.value == "json" {
			enc := json.NewEncoder(sys.Out)
			return enc.Encode(info)
		}
		rev := ""
		if info.Revision != "" {
			rev = ", revision " + info.Revision
		}
		_, err := fmt.Fprintf(sys.Out, "retrace %s (%s%s, trajectory v%d)\n", info.Version, info.Go, rev, info.TrajectoryVersion)
		return err
	}
	return cmd
}
