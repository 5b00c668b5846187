package main

import (
	"github.com/agentik/agentik"
	"github.com/agentik/agentik/memory"
)

// setupMemory builds the agent's memory blocks (SPEC §19, docs/memory.md)
// on its store view and Bus when its configuration turns memory on: the
// context source the engine asks before each model call, the tools
// setupTools adds to the built-in ones, and the API httpapi serves. The
// agent's writes are published through its engine (set later), in cursor
// order with its other agent events.
func (a *app) setupMemory(ag *agent, store agentik.Store, events agentik.Bus) error {
	m := ag.cfg.Memory
	if !m.Enabled || len(m.Blocks) == 0 {
		return nil
	}
	ms, ok := store.(agentik.MemoryStore)
	if !ok {
		return nil // a store without memory: none
	}
	svc := memory.New(memory.Options{
		Store:  ms,
		Bus:    events,
		Scope:  m.Scope,
		Blocks: m.Blocks,
		Order:  func(write func() ([]agentik.AgentEvent, error)) error { return ag.eng.AgentWrite(write) },
	})
	svc.Start()
	a.onClose = append(a.onClose, svc.Close)
	ag.memory = svc
	return nil
}

// memoryContext is the agent's context sources of memory (none without).
func (ag *agent) memoryContext() []agentik.ContextSource {
	if ag.memory == nil {
		return nil
	}
	return []agentik.ContextSource{ag.memory}
}

// memoryTools are the agent's memory tools (none without memory).
func (ag *agent) memoryTools() []agentik.Tool {
	if ag.memory == nil {
		return nil
	}
	return ag.memory.Tools()
}

// memoryAPI is what httpapi serves at {p}/memory (nil: 404).
func (ag *agent) memoryAPI() agentik.Memory {
	if ag.memory == nil {
		return nil
	}
	return ag.memory
}
