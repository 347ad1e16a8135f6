package harness

import (
	"runtime/debug"
)

// BuildVersion says which build of retrace is running, for session_start
// and retrace version.
type BuildVersion struct {
	// Version is the module version of the main module (v1.2.3, or a
	// pseudo-version), or "devel" when the build does not know one, as in
	// a go build or go run inside a checkout.
	Version string
	// Revision is the version control revision the binary was built from,
	// with "-dirty" appended when the checkout had uncommitted changes;
	// empty when the build recorded no revision (go test, a build outside
	// a checkout, -buildvcs=false).
	Revision string
}

// Version returns the running build's version and revision from the build
// information the Go toolchain embeds, so that two sessions recorded by
// different builds can be told apart even when both say "devel".
func Version() BuildVersion {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return BuildVersion{Version: "devel"}
	}
	return versionOf(bi)
}

// versionOf reads a BuildVersion out of bi.
func versionOf(bi *debug.BuildInfo) BuildVersion {
	v := BuildVersion{Version: "devel"}
	if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v.Version = bi.Main.Version
	}
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if v.Revision != "" && dirty {
		v.Revision += "-dirty"
	}
	return v
}
