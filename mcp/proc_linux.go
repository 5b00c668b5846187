package mcp

import "syscall"

// setDeathSignal asks the kernel to SIGKILL the child when agentik exits,
// even by SIGKILL. (It fires when the spawning OS thread exits; Go does not
// end threads that are not locked, so in practice that is process exit.)
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
