// Package compare finds and classifies every place where two sessions of
// the same task part: a recording and its replay, or a run before and
// after a change. It imports only trajectory, so replay, mock serve --from
// and the before/after diff share one notion of "the same".
//
// Sessions aligns the two event streams by meaning — tool calls by
// tool_use_id, model requests and responses by turn and their order in
// the turn, defenses by the call or turn they acted on — never by
// position, and reports what differs as Divergences from a closed set of
// classes (Class). Event times, sequence numbers, session ids and
// measured durations are never compared.
//
// # Normalisation
//
// Before two texts are compared, both sides are rewritten the same way:
// first Options.PathRewrites (the workspace and blob directories), then
// the caller's Rules (a configuration's replay.normalize, then the
// command line's --normalize), then the built-in rules (Builtins) unless
// Options.NoDefaults. A Rule is a regular expression and a replacement,
// limited to some tools (Rule.Tools) and kinds of text (Rule.In: tool
// output, tool input, model text). The built-in rules replace timestamps,
// date(1) and ls -l times, durations, temporary paths, UUIDs and long hex
// ids, and process ids with markers such as <timestamp>. A tool's output
// reaches the model again in the next request, so it is normalised there
// by the same rules. Result.Normalized says which rules replaced text and
// how often on each side, so a rule that hides too much is visible.
//
// Options.Tools sets a comparison Level per tool: exact (the default),
// exit_code (only how each call ended) or ignore (neither output nor
// outcome; permission decisions, hooks and the call itself still count).
//
// # Reports
//
// A Result renders as an aligned table with one row per call or turn
// (Table, Rows), as Markdown, and as JSON; Details and MarkdownDetails add
// a unified diff of every changed text. Long values are cut with "…"; the
// full ones are in the trajectories.
package compare
