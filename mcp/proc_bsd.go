//go:build unix && !linux

package mcp

import "syscall"

// setDeathSignal: only Linux has a parent-death signal; elsewhere the
// process group kill on Close is the guarantee.
func setDeathSignal(*syscall.SysProcAttr) {}
