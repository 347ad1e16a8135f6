// Package replay replays a recorded session through the real runtime and
// compares the replay with the recording.
//
// Run reads the recording once, restores the recorded workspace, starts
// from the configuration the session ran under (session_start's effective
// configuration, layered by config.Resolve as far as the recording is
// trusted: all of it with RunOptions.TrustRecording; the user's own
// recording, whose signature RunOptions.Key checks, without its hooks and
// MCP servers; anyone else's only to restrict), answers every model
// request with the recorded responses (mockllm.Replay; a request past the recording is
// a miss, never a live call), records a new trajectory and compares the
// two with package compare, which aligns them by meaning, normalises
// what always differs between two runs (times, durations, temporary
// paths, ids, and whatever the configuration's replay.normalize and the
// caller's rules name) and classifies what is left. The Report carries a
// what-if line for every permission decision that changed, so a new
// policy can be tried against an old incident and its effect read call by
// call, and notes on what the replay left out on purpose (an untrusted
// recording's hooks, MCP servers and approvals) or could not reproduce.
//
// The process id each bash call started is recorded in its tool_end, and
// the comparison maps the recorded ids to the replayed ones exactly. A
// batch (RunBatch) gives each recording a verdict: identical, diverged,
// expected (diverged, with settings of the recording left out),
// exhibit (marked recorder.NotReplayable), interrupted or failed.
//
// A recording of several prompts (retrace run -i) is replayed with its
// follow-ups, the user_prompt events, given again in order, each when the
// replayed model finishes its turn. A continued recording (session_start's
// continues) starts from the conversation of the session it continues,
// rebuilt from that session's trajectory next to it (agent.ConversationOf),
// as retrace run --continue built it.
package replay
