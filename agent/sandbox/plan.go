package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// plan is what the re-exec applies before it executes the command. The
// parent computes it once per session and writes it to the private
// directory, so a tool call pays only for reading it.
type plan struct {
	// ABI is the kernel's Landlock ABI version.
	ABI int `json:"abi"`
	// ReadDirs may be read, listed and executed from, with all beneath.
	ReadDirs []string `json:"read_dirs"`
	// ListDirs may be listed only: directories on the way to a secret.
	ListDirs []string `json:"list_dirs"`
	// ReadFiles may be read and executed: the files next to a secret.
	ReadFiles []string `json:"read_files"`
	// WriteDirs may be read and changed, with all beneath.
	WriteDirs []string `json:"write_dirs"`
	// WriteFiles are device files that may be read and written.
	WriteFiles []string `json:"write_files"`
	// Network leaves TCP unrestricted; else only Ports may be connected to.
	Network bool     `json:"network"`
	Ports   []uint16 `json:"ports"`
	// Cgroups are cgroup.procs files the process joins first.
	Cgroups []string `json:"cgroups"`
	// NProc is RLIMIT_NPROC when no cgroup bounds the process count.
	NProc uint64 `json:"nproc"`
	// Protect are paths inside the workspace made read-only with a bind
	// mount in a mount namespace of the process's own, those of them that
	// exist when it starts: Landlock can only grant, so it cannot take
	// back part of the writable workspace.
	Protect []string `json:"protect"`
	// ReadOnlyRoot makes every mount read-only in the process's mount
	// namespace but WriteDirs (and Protect stays read-only within them):
	// Landlock does not govern chmod, chown, utimes or extended
	// attributes, so without it a process running as root could still
	// `chmod u+s /bin/bash`, which it owns.
	ReadOnlyRoot bool `json:"read_only_root"`
}

// protectedIn are the paths of a workspace whose change runs code on the
// next git command: its hooks and its configuration (core.fsmonitor,
// core.hooksPath, aliases…).
var protectedIn = []string{".git/hooks", ".git/config"}

// readRules covers the whole file system with read rules except the
// denied paths. Landlock only grants, and a grant on a directory reaches
// everything beneath it, so a directory with a denied path beneath gets
// only the right to be listed, and each of its entries is covered in
// turn: the entries away from the secret in full, the one towards it
// recursively. Symbolic links get no rule of their own (Landlock checks
// the file they lead to), so a link cannot carry a grant to a secret.
func readRules(denied []string) (dirs, list, files []string) {
	var cover func(dir string, under []string)
	cover = func(dir string, under []string) {
		var beneath []string
		for _, d := range under {
			if d == dir {
				return
			}
			if within(d, dir) {
				beneath = append(beneath, d)
			}
		}
		if len(beneath) == 0 {
			dirs = append(dirs, dir)
			return
		}
		list = append(list, dir)
		entries, err := os.ReadDir(dir)
		if err != nil {
			return // unreadable: nothing is granted beneath
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			switch {
			case e.Type()&os.ModeSymlink != 0:
			case e.IsDir():
				cover(p, beneath)
			case !slices.Contains(beneath, p):
				files = append(files, p)
			}
		}
	}
	cover("/", cleanAll(denied))
	return dirs, list, files
}

func cleanAll(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if p = filepath.Clean(p); strings.HasPrefix(p, "/") {
			out = append(out, p)
		}
	}
	return out
}
