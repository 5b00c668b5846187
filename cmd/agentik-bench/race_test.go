//go:build race

package main

// raceEnabled makes the end-to-end test build the server with -race too: the
// race-instrumented packages are then already in the build cache from
// compiling the tests, so only the link is left to do.
const raceEnabled = true
