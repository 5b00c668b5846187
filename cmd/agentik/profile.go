package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
)

// startCPUProfile writes a CPU profile of the whole serve run to path
// (AGENTIK_CPUPROFILE, a debugging aid: `go tool pprof` reads it); the
// returned stop ends it on graceful shutdown.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(strings.ReplaceAll(path, "%p", strconv.Itoa(os.Getpid())))
	if err != nil {
		return nil, fmt.Errorf("AGENTIK_CPUPROFILE: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("AGENTIK_CPUPROFILE: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
