// Package scaffold writes a new user's first retrace project (retrace
// init): two scenarios, one a task that passes and one that shows a
// refused call and a detector expectation, a retrace.yaml with every
// top-level key commented and set to its default, and a GitHub Actions
// job that runs the suite with a JUnit report. The files are embedded
// templates under template/; `retrace eval DIR` passes on what Write
// writes, and the package's tests hold it to that.
package scaffold
