package procgroup

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// setDeathSignal sets the parent-death signal.
func setDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }

// hasMembers reports whether a process other than the sentinel (the
// group's leader) is in process group pgid, by reading /proc.
func hasMembers(pgid int) (bool, error) {
	dir, err := os.Open("/proc")
	if err != nil {
		return false, errUnknown
	}
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return false, errUnknown
	}
	want := strconv.Itoa(pgid)
	for _, name := range names {
		if name == want || name[0] < '0' || name[0] > '9' {
			continue
		}
		stat, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		if state, group := statFields(stat); group == want && state != "Z" && state != "X" {
			// A zombie runs nothing; where PID 1 never reaps, orphans stay one.
			return true, nil
		}
	}
	return false, nil
}

// statFields returns the state and process group fields of a
// /proc/PID/stat line: "pid (comm) state ppid pgrp ...", where comm may
// hold spaces and parentheses, so fields are counted after the last ')'.
func statFields(stat []byte) (state, group string) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return "", ""
	}
	f := bytes.Fields(stat[i+1:])
	if len(f) < 3 {
		return "", ""
	}
	return string(f[0]), string(f[2])
}
