package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/retrace-dev/retrace/trajectory"
	"github.com/spf13/cobra"
)

// version is set at release time with -ldflags "-X main.version=v1.2.3";
// otherwise it comes from the module's build info.
var version = ""

type versionInfo struct {
	Version           string `json:"version"`
	Go                string `json:"go"`
	TrajectoryVersion int    `json:"trajectory_version"`
}

func currentVersion() versionInfo {
	v := version
	if v == "" {
		v = "devel"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
	}
	return versionInfo{Version: v, Go: runtime.Version(), TrajectoryVersion: trajectory.Version}
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
		_, err := fmt.Fprintf(sys.Out, "retrace %s (%s, trajectory v%d)\n", info.Version, info.Go, info.TrajectoryVersion)
		return err
	}
	return cmd
}
