package procgroup

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// setDeathSignal sets the parent-death signal.
func setDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }

// busyGroups returns the process groups that have a running member other
// than their leader (a group's sentinel leads it), from one pass over
// /proc. A zombie runs nothing, and where PID 1 never reaps, orphans stay
// zombies, so they do not count.
func busyGroups() (map[int]bool, error) {
	dir, err := os.Open("/proc")
	if err != nil {
		return nil, errUnknown
	}
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return nil, errUnknown
	}
	busy := map[int]bool{}
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		stat, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		state, group := statFields(stat)
		if group == name || state == "Z" || state == "X" {
			continue
		}
		if pgid, err := strconv.Atoi(group); err == nil {
			busy[pgid] = true
		}
	}
	return busy, nil
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
