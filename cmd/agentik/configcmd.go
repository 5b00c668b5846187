package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentik/agentik/config"
	"github.com/agentik/agentik/mcp"
)

const configUsage = `usage: agentik config check FILE | example [--full]

  check FILE      validate a configuration file without starting anything
                  (every mistake with its line; exit code 2 when there is one)
  example         print a commented file of two agents that starts as written
                  (the offline demo model, no tokens)
  example --full  print an annotated file of three agents, every setting shown
`

// configCommand runs `agentik config …`.
func configCommand(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 1 && args[0] == "example":
		fmt.Fprint(stdout, config.Example)
		return exitOK
	case len(args) == 2 && args[0] == "example" && (args[1] == "--full" || args[1] == "-full"):
		fmt.Fprint(stdout, config.ExampleFull)
		return exitOK
	case len(args) == 2 && args[0] == "check":
		cfg, err := loadConfig(args[1], getenv)
		if err != nil {
			printConfigErrors(stderr, err)
			return exitConfig
		}
		for _, w := range cfg.Warnings {
			fmt.Fprintln(stderr, "warning: "+w)
		}
		ids := make([]string, len(cfg.Agents))
		for i, a := range cfg.Agents {
			ids[i] = a.ID
		}
		fmt.Fprintf(stdout, "%s: ok, %d agents: %s (default %s)\n", args[1], len(ids), strings.Join(ids, ", "), ids[0])
		return exitOK
	case len(args) == 1 && (args[0] == "help" || args[0] == "-h" || args[0] == "--help"):
		fmt.Fprint(stdout, configUsage)
		return exitOK
	}
	fmt.Fprint(stderr, configUsage)
	return exitConfig
}

// loadConfig is config.Load plus what only the wiring can check: the MCP
// servers of each agent (inline, or its mcp.json) parse.
func loadConfig(path string, getenv func(string) string) (config.Config, error) {
	cfg, err := config.Load(path, getenv)
	if err != nil {
		return cfg, err
	}
	var errs []error
	for i, a := range cfg.Agents {
		if a.MCPConfig != "" {
			if _, err := mcp.LoadConfig(a.MCPConfig, getenv); err != nil {
				if path == "" {
					errs = append(errs, fmt.Errorf("AGENTIK_MCP_CONFIG: %w", err))
				} else {
					errs = append(errs, fmt.Errorf("%s: agents[%d].tools.mcp_config: %w", path, i, err))
				}
			}
		}
		if a.MCPServers != nil {
			if _, err := mcp.ParseConfig(a.MCPServers, getenv); err != nil {
				errs = append(errs, fmt.Errorf("%s: agents[%d].tools.mcp_servers: %s", path, i, strings.TrimPrefix(err.Error(), "mcpServers.")))
			}
		}
	}
	if len(errs) > 0 {
		return cfg, errors.Join(errs...)
	}
	return cfg, nil
}

// printConfigErrors writes each mistake on a line of its own.
func printConfigErrors(w io.Writer, err error) {
	fmt.Fprintln(w, "agentik: invalid configuration:")
	var each func(error)
	each = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				each(e)
			}
			return
		}
		fmt.Fprintln(w, "  "+err.Error())
	}
	each(err)
}

// configPath takes --config FILE (or --config=FILE) out of args; without
// it, AGENTIK_CONFIG names the file.
func configPath(args []string, getenv func(string) string) (string, []string, error) {
	out := make([]string, 0, len(args))
	path := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--config" || a == "-config":
			if i+1 >= len(args) {
				return "", nil, fmt.Errorf("--config needs a file")
			}
			path = args[i+1]
			i++
		case strings.HasPrefix(a, "--config=") || strings.HasPrefix(a, "-config="):
			path = a[strings.Index(a, "=")+1:]
		case a == "--":
			out = append(out, args[i:]...)
			i = len(args)
		default:
			out = append(out, a)
		}
	}
	if path == "" {
		path = getenv("AGENTIK_CONFIG")
	}
	if path != "" {
		if _, err := os.Stat(path); err != nil && getenv("AGENTIK_CONFIG") == path {
			return "", nil, fmt.Errorf("AGENTIK_CONFIG=%s: %v", path, err)
		}
	}
	return path, out, nil
}
