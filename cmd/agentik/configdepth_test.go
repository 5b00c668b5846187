package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik/llmtest"
)

// deepYAML are 20 KB configuration files nested 9,999 deep, which cost
// 342 MiB of memory in agentik config check and 245 MiB more in a running
// server on SIGHUP before they were refused.
var deepYAML = map[string]struct{ yaml, want string }{
	"flow":  {"agents: " + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + "\n", ":1: nested deeper than 64 levels"},
	"block": {"agents:\n" + strings.Repeat("- ", 9999) + "x\n", ":2: nested deeper than 64 levels"},
}

// TestConfigCheckRefusesDeepYAML: agentik config check refuses the file
// with its line, and its peak memory stays that of a small program.
func TestConfigCheckRefusesDeepYAML(t *testing.T) {
	// check runs config check on text and returns its peak RSS in KiB
	// (Linux reports KiB) with its exit code and output.
	check := func(t *testing.T, text string) (int64, int, string) {
		file := filepath.Join(t.TempDir(), "config.yaml")
		os.WriteFile(file, []byte(text), 0o600)
		cmd := exec.Command(binary, "config", "check", file)
		out, _ := cmd.CombinedOutput()
		ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		if !ok {
			t.Skip("no resource usage on this system")
		}
		return ru.Maxrss, cmd.ProcessState.ExitCode(), strings.ReplaceAll(string(out), file, "FILE")
	}
	// The program's own size depends on the build (a -race binary is
	// larger): the deep files may cost little more than a small mistake.
	base, _, _ := check(t, "agents: [[1]]\n")
	for name, tc := range deepYAML {
		t.Run(name, func(t *testing.T) {
			rss, code, out := check(t, tc.yaml)
			if code != exitConfig || !strings.Contains(out, "FILE"+tc.want) {
				t.Fatalf("exit %d:\n%.500s", code, out)
			}
			if rss > base+32<<10 {
				t.Errorf("config check peaked at %d MiB of memory, %d MiB for a small mistake", rss>>10, base>>10)
			}
			t.Logf("peak RSS %d MiB (small mistake: %d MiB)", rss>>10, base>>10)
		})
	}
}

// TestReloadRefusesDeepYAML: a SIGHUP with the file replaced by a deep one
// keeps the configuration in force, logs the line, and the server's peak
// memory barely moves.
func TestReloadRefusesDeepYAML(t *testing.T) {
	hwm := func(pid int) int64 { // peak RSS in KiB, Linux only
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		if err != nil {
			return -1
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
				n, _ := strconv.ParseInt(f[1], 10, 64)
				return n
			}
		}
		return -1
	}
	llm := llmtest.NewServer()
	defer llm.Close()
	dir := t.TempDir()
	file := filepath.Join(dir, "agentik.yaml")
	os.WriteFile(file, []byte("database: ./agentik.db\nagents:\n  - id: alpha\n    model: {base_url: \""+llm.URL()+"\", model: m}\n"), 0o600)
	p := startProc(t, "AGENTIK_CONFIG="+file)
	for i, name := range []string{"flow", "block"} {
		time.Sleep(100 * time.Millisecond) // the server settles after start-up
		before := hwm(p.cmd.Process.Pid)
		os.WriteFile(file, []byte(deepYAML[name].yaml), 0o600)
		p.cmd.Process.Signal(syscall.SIGHUP)
		p.waitLog(t, "configuration reload failed", i+1)
		if !strings.Contains(p.log(), file+deepYAML[name].want) {
			t.Fatalf("%s: the log names no line:\n%s", name, p.log())
		}
		if before > 0 {
			after := hwm(p.cmd.Process.Pid)
			if after-before > 32<<10 {
				t.Errorf("%s: the reload raised the peak memory by %d MiB", name, (after-before)>>10)
			}
			t.Logf("%s: peak RSS %d → %d MiB", name, before>>10, after>>10)
		}
	}
	if status, _ := get(t, p.url+"/health", ""); status != 200 {
		t.Fatalf("health after the reloads: %d", status)
	}
}
