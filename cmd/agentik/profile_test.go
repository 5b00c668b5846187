package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik/llmtest"
)

// TestCPUProfileNamedByProcess: AGENTIK_CPUPROFILE's %p becomes the
// process id, so several processes started with one environment (a
// cluster on one machine) each write their own profile, at graceful
// shutdown, in pprof's format (gzip-compressed).
func TestCPUProfileNamedByProcess(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	dir := t.TempDir()
	env := []string{"OPENAI_BASE_URL=" + llm.URL(), "AGENTIK_CPUPROFILE=" + filepath.Join(dir, "agentik-%p.pprof")}
	var ps []*proc
	for i := range 2 {
		ps = append(ps, startProc(t, append(env, "AGENTIK_DB_PATH="+filepath.Join(dir, fmt.Sprintf("db%d", i)))...))
	}
	for _, p := range ps {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			t.Fatalf("no exit after SIGTERM\n%s", p.log())
		}
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("agentik-%d.pprof", p.cmd.Process.Pid)))
		if err != nil {
			t.Fatalf("the profile of process %d: %v\n%s", p.cmd.Process.Pid, err, p.log())
		}
		if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
			t.Fatalf("the profile of process %d is not gzip: % x", p.cmd.Process.Pid, b[:min(len(b), 8)])
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*%p*")); len(m) != 0 {
		t.Fatalf("a profile kept the pattern's name: %v", m)
	}
}
