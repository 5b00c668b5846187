package main

import (
	"fmt"

	"github.com/agentik/agentik/config"
	"github.com/agentik/agentik/local"
)

// openLocalModels loads the GGUF models of the agents on the local backend
// before anything starts (each file once; the agents naming it share it),
// so that a missing or incompatible library or model is a configuration
// error (exit 2) that names it.
func openLocalModels(cfg config.Config) error {
	for _, c := range cfg.Agents {
		if c.Backend != config.BackendLocal {
			continue
		}
		if _, err := openLocal(c); err != nil {
			return fmt.Errorf("agent %s: %w", c.ID, err)
		}
	}
	return nil
}

// openLocal opens an agent's local model (the one already loaded when
// another agent names the same file).
func openLocal(c config.Agent) (*local.Model, error) {
	return local.Open(local.Options{
		Path:          c.ModelPath,
		Library:       c.LlamaLib,
		Threads:       c.Threads,
		Slots:         c.Slots,
		ContextTokens: c.ContextTokens,
		Temperature:   0.7,
	})
}
