//go:build race

package main

// raceEnabled reports a build with the race detector, whose memory use
// makes RSS measurements meaningless.
const raceEnabled = true
