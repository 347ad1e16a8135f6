// Package store keeps the loaded runs of a corpus between commands, so
// that a question over runs that mostly did not change is answered in a
// fraction of the time of reading them all again.
//
// A store is a metrics database file (metrics.Options.Path): it knows
// every trajectory file it holds by path, size, modification time, inode
// and hashes of its head and tail, opens no file whose stat did not
// change, reads a file that grew from where it stopped, reads again a
// file that changed and drops the rows of one no longer given, and keeps
// the derived tables (tool_calls, sessions, ...) refreshed for the
// sessions that changed only. Its answers are a cold load's, row for row.
//
// By default stores live in the user's cache directory (Dir), one per
// corpus, named by a hash of the corpus's paths (Key), never in
// the runs directory; retrace --db FILE puts one at FILE instead. The
// cache is bounded (DefaultMax): after an update the least recently used
// stores go until the rest fit. Info lists the stores and Clean deletes
// them.
//
// Safety. An update is one DuckDB transaction: a crash in the middle
// leaves the store as it was, and nobody reads half an update. Processes
// share a store through flock(2) on a lock file beside it: readers hold
// it shared and read the database read-only, any number at once; an
// update holds it alone. A process that cannot have the lock within
// Config.Wait (2 s by default: another process is updating the store, or
// holds it open to read while this one must update it) gets ErrBusy and
// loads cold, in memory, which answers the same, only slower. Where there
// is no flock(2) every lock is busy, and commands load cold.
package store
