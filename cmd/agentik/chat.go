package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/agentik/agentik/config"
)

// chat runs the terminal client.
func chat(ctx context.Context, cfg config.Config, args []string, getenv func(string) string, stdout, stderr io.Writer, log *slog.Logger) int {
	fmt.Fprintln(stderr, "agentik chat: not available in this build")
	return exitFail
}

// conversations runs the conversation commands.
func conversations(ctx context.Context, cfg config.Config, args []string, getenv func(string) string, stdout, stderr io.Writer, log *slog.Logger) int {
	fmt.Fprintln(stderr, "agentik conversations: not available in this build")
	return exitFail
}
