// Command retrace is the flight recorder, replayer and failure analyser for
// LLM tool-using agents. See the README for the commands.
//
// retrace also has a hidden subcommand, `retrace __sandbox-exec PLAN --
// PROGRAM ARGS…`, which is how every tool process starts: the re-exec
// restricts itself with the session's sandbox plan and then becomes
// PROGRAM. Package sandbox performs it from its init, before main runs,
// so it never reaches the command line parser (see agent/sandbox).
package main

import (
	"os"

	// The hidden __sandbox-exec re-exec; linked through the tools too,
	// named here so that the wiring is explicit.
	_ "github.com/retrace-dev/retrace/agent/sandbox"
)

func main() { os.Exit(Main()) }
