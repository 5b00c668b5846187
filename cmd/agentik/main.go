// Command agentik runs the Agentik agent server and its tools.
//
//	agentik serve     run the server (configuration from the environment)
//	agentik tools     list the tools the model would see
//	agentik mcp       serve a running server's agent over MCP on stdio
//	agentik version   print the version
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	_ "time/tzdata" // current_time must know every IANA zone on any machine

	"github.com/agentik/agentik/config"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = ""

// Exit codes.
const (
	exitOK     = 0
	exitFail   = 1
	exitConfig = 2
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

const usage = `usage: agentik <command> [--config FILE]

commands:
  serve          run the agent server (configured by a file, --config or AGENTIK_CONFIG,
                 and AGENTIK_* and OPENAI_* variables)
  config         check a configuration file, or print an example
  chat           talk to the agent in the terminal
  conversations  list, show, rename or delete conversations
  admin          a running server's open turns (list, cancel) and stats, with an admin's token
  tools          list every tool the model would see
  mcp            serve a running server's agent as an MCP server on stdio
  version        print the version
`

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitConfig
	}
	switch args[0] {
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "agentik", versionString())
		return exitOK
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return exitOK
	case "config":
		return configCommand(args[1:], getenv, stdout, stderr)
	case "serve", "tools", "chat", "conversations", "mcp", "admin":
	default:
		fmt.Fprintf(stderr, "agentik: unknown command %q\n\n%s", args[0], usage)
		return exitConfig
	}

	path, rest, err := configPath(args[1:], getenv)
	if err != nil {
		fmt.Fprintln(stderr, "agentik:", err)
		return exitConfig
	}
	args = append(args[:1:1], rest...)
	cfg, err := loadConfig(path, getenv)
	if err != nil {
		printConfigErrors(stderr, err)
		return exitConfig
	}
	if args[0] == "serve" || args[0] == "chat" || args[0] == "tools" {
		if err := openLocalModels(cfg); err != nil {
			fmt.Fprintln(stderr, "agentik:", err)
			return exitConfig
		}
	}
	log := newLogger(cfg, stderr)
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	switch args[0] {
	case "tools":
		return listTools(ctx, cfg, args[1:], stdout, stderr, log)
	case "chat":
		return chat(ctx, cfg, args[1:], getenv, stdout, stderr, log)
	case "conversations":
		return conversations(ctx, cfg, args[1:], getenv, stdout, stderr, log)
	case "admin":
		return adminCommand(ctx, cfg, args[1:], getenv, stdout, stderr)
	case "mcp":
		return mcpBridge(ctx, args[1:], getenv, os.Stdin, os.Stdout, stderr, log)
	default:
		if err := serve(ctx, cfg, getenv, log); err != nil {
			log.Error("agentik stopped", "err", err)
			return exitFail
		}
		return exitOK
	}
}

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
