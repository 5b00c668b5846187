//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// setProcAttr starts the child in its own process group, so closing the
// server kills everything it spawned, and (on Linux) has the kernel kill it
// if agentik dies without closing it.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setDeathSignal(cmd.SysProcAttr)
}

// killGroup kills a process group; an already-gone group is fine.
func killGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}
