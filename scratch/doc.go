// Package scratch makes the temporary directories retrace writes large
// intermediate files to, such as DuckDB's spill files and a load's staged
// lines, and removes the ones a killed process left behind.
//
// A load of ten million events spills gigabytes. A process that exits
// removes its directory; one that is killed (out of memory, a CI timeout,
// kill -9) cannot, and nothing else would: the system's temporary
// directory fills run after run. So each directory holds a lock file that
// its process keeps locked (flock(2)) until it removes the directory, and
// Make, before making a new one, removes every directory of the same name
// prefix next to it that no process holds and that has not changed for a
// while. A held lock is never taken, so a live process's directory is
// never touched; a directory without a lock file (made by something else,
// or by an older retrace) is left alone; so is one of another user, or a
// symbolic link. Where flock(2) is missing, nothing is swept.
package scratch
