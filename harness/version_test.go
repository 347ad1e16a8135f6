package harness

import (
	"runtime/debug"
	"testing"
)

func TestVersionOfReadsTheModuleVersionAndTheRevision(t *testing.T) {
	for _, tc := range []struct {
		name string
		bi   debug.BuildInfo
		want BuildVersion
	}{
		{"A build inside a checkout without vcs stamping is devel with no revision.",
			debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, BuildVersion{Version: "devel"}},
		{"A go install of a tagged version names it.",
			debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, BuildVersion{Version: "v1.2.3"}},
		{"A clean checkout gives its revision.",
			debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "false"}}},
			BuildVersion{Version: "devel", Revision: "abc123"}},
		{"A checkout with changes marks the revision dirty.",
			debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
				{Key: "vcs.modified", Value: "true"}, {Key: "vcs.revision", Value: "abc123"}}},
			BuildVersion{Version: "devel", Revision: "abc123-dirty"}},
		{"Modified without a revision gives no revision at all.",
			debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.modified", Value: "true"}}},
			BuildVersion{Version: "devel"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := versionOf(&tc.bi); got != tc.want {
				t.Fatalf("versionOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}
