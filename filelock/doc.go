// Package filelock takes and lets go of flock(2) locks on open files.
//
// retrace uses them wherever two of its processes could meet: the
// readers and the updater of a store, two evals writing one --out
// directory, a scratch directory and the load that would sweep it. A
// flock is the kernel's, held by an open file and dropped when the
// process that holds it dies, so a crash leaves no lock behind; it is
// advisory, binding only processes that ask for it. Where flock(2) is
// missing, Try says ErrUnsupported and each caller decides what that
// means for it.
package filelock
