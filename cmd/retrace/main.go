// Command retrace is the flight recorder, replayer and failure analyser for
// LLM tool-using agents. See the README for the commands.
package main

import "os"

func main() { os.Exit(Main()) }
