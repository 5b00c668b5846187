//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/agentik/agentik/llmtest"
)

// openPTY opens a pseudo-terminal pair: the test holds the master, the
// client gets the slave as its terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlock pty: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("pty number: %v", e)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open pty slave: %v", err)
	}
	return m, s
}

// ptyCLI is the agentik client on a terminal.
type ptyCLI struct {
	t       *testing.T
	cmd     *exec.Cmd
	master  *os.File
	done    chan struct{}
	mu      sync.Mutex
	out     bytes.Buffer
	changed chan struct{}
}

func startPTYCLI(t *testing.T, env []string, args ...string) *ptyCLI {
	t.Helper()
	master, slave := openPTY(t)
	c := &ptyCLI{t: t, master: master, done: make(chan struct{}), changed: make(chan struct{})}
	c.cmd = exec.Command(binary, args...)
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stdin, c.cmd.Stdout, c.cmd.Stderr = slave, slave, slave
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	read := make(chan struct{})
	go func() {
		defer close(read)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			if n > 0 {
				c.mu.Lock()
				c.out.Write(buf[:n])
				close(c.changed)
				c.changed = make(chan struct{})
				c.mu.Unlock()
			}
			if err != nil {
				return // EIO once the client has exited
			}
		}
	}()
	go func() { c.cmd.Wait(); <-read; close(c.done) }()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		master.Close()
		<-c.done
	})
	return c
}

func (c *ptyCLI) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

// waitCount waits until the terminal shows s at least n times.
func (c *ptyCLI) waitCount(s string, n int) {
	c.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		c.mu.Lock()
		has, ch := strings.Count(c.out.String(), s) >= n, c.changed
		c.mu.Unlock()
		if has {
			return
		}
		select {
		case <-ch:
		case <-c.done:
			if strings.Count(c.output(), s) >= n {
				return
			}
			c.t.Fatalf("exited without showing %q ×%d:\n%s", s, n, c.output())
		case <-deadline:
			c.t.Fatalf("no %q ×%d within 30s:\n%s", s, n, c.output())
		}
	}
}

func (c *ptyCLI) typeLine(s string) {
	c.t.Helper()
	if _, err := c.master.Write([]byte(s + "\r")); err != nil {
		c.t.Fatal(err)
	}
}

// On a terminal the question is a prompt typed after: "n reason" denies,
// "y" approves, and Ctrl-C while a call waits interrupts the turn, which
// denies it; Ctrl-D exits.
func TestChatApprovalInteractive(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	llm.Enqueue(
		llmtest.ToolCalls(llmtest.Call("current_time", `{"timezone":"UTC"}`).WithID("call_t1")),
		llmtest.Text("Denied."),
		llmtest.ToolCalls(llmtest.Call("current_time", `{}`).WithID("call_t2")),
		llmtest.Text("Approved."),
		llmtest.ToolCalls(llmtest.Call("current_time", `{}`).WithID("call_t3")),
	)
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"), "OPENAI_BASE_URL="+llm.URL(),
		"AGENTIK_TOOL_APPROVAL=current_time=ask")
	c := startPTYCLI(t, []string{"NO_COLOR=1"}, "chat", "--url", p.url)
	const question = "approve? [y/n, n may take a reason] "
	c.waitCount("you> ", 1)
	c.typeLine("time?")
	c.waitCount(`? current_time {"timezone":"UTC"}  (call_t1)`, 1)
	c.waitCount(question, 1)
	c.typeLine("n too early")
	c.waitCount("✗ current_time: denied by the user: too early", 1)
	c.waitCount("Denied.", 1)
	c.waitCount("you> ", 2)

	c.typeLine("again?")
	c.waitCount("(call_t2)", 1)
	c.typeLine("y")
	c.waitCount("← current_time: ", 1)
	c.waitCount("Approved.", 1)
	c.waitCount("you> ", 3)

	c.typeLine("once more?")
	c.waitCount("(call_t3)", 1)
	c.waitCount(question, 3)
	c.cmd.Process.Signal(syscall.SIGINT)
	c.waitCount("current_time call_t3 denied (interrupted)", 1)
	c.waitCount("[interrupted]", 1)
	c.waitCount("you> ", 4)
	if _, err := c.master.Write([]byte{4}); err != nil { // Ctrl-D
		t.Fatal(err)
	}
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("Ctrl-D did not exit:\n%s", c.output())
	}
	if code := c.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, c.output())
	}
	if n := len(llm.Requests()); n != 5 {
		t.Fatalf("the model was asked %d times, want 5", n)
	}
}
