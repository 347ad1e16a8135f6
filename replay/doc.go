// Package replay compares a recorded session with its replay through the
// real executor and classifies every place where they part.
//
// A replay is only useful if its differences mean something: timestamps,
// durations, session ids, sequence numbers and temporary paths always
// differ between two runs, so Compare aligns the two event streams by
// meaning (turn, tool_use_id, order of model calls within a turn) instead
// of by position, normalises those volatile values away, and reports what
// is left as Divergences from a closed set of classes. The Report renders
// as Markdown, as an aligned text table and as JSON, and carries a what-if
// line for every permission decision that changed, so a new policy can be
// tried against an old incident and its effect read call by call.
package replay
