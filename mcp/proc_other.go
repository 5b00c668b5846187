//go:build !unix

package mcp

import "os/exec"

func setProcAttr(*exec.Cmd) {}

// killGroup is a no-op without process groups; the SDK's close still
// terminates the direct child.
func killGroup(int) {}
