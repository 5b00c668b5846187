// Package tools holds the tool registry the turn engine offers to the model,
// and the built-in tools.
//
// The registry merges built-in tools with dynamic sources (MCP servers, remote
// A2A agents). Names seen by the model are unique: a source tool whose name is
// already taken is offered as "<source>_<name>", and the mapping is kept so a
// call reaches the right tool.
package tools

import (
	"context"
	"sync"

	"github.com/agentik/agentik"
)

// Registry is a set of tools. Safe for concurrent use.
type Registry struct {
	mu      sync.RWMutex
	builtin []agentik.Tool
	sources []namedSource
	keep    func(name string) bool // nil: every tool
}

type namedSource struct {
	name string
	src  agentik.ToolSource
}

// NewRegistry returns a registry holding the given built-in tools.
func NewRegistry(builtin ...agentik.Tool) *Registry {
	return &Registry{builtin: builtin}
}

// AddSource adds a dynamic source; name prefixes its tools on a clash.
func (r *Registry) AddSource(name string, src agentik.ToolSource) {
	r.mu.Lock()
	r.sources = append(r.sources, namedSource{name, src})
	r.mu.Unlock()
}

// SetFilter makes Snapshot keep only the tools whose final name keep
// accepts (an agent's allow and deny lists); nil keeps every tool. It can
// change while the registry is in use: the next Snapshot applies it.
func (r *Registry) SetFilter(keep func(name string) bool) {
	r.mu.Lock()
	r.keep = keep
	r.mu.Unlock()
}

// Set is a snapshot of the tools offered for one model call.
type Set struct {
	specs  []agentik.ToolSpec
	byName map[string]agentik.Tool
}

// Snapshot lists every tool now available, with unique names.
func (r *Registry) Snapshot(ctx context.Context) *Set {
	r.mu.RLock()
	builtin, sources, keep := r.builtin, r.sources, r.keep
	r.mu.RUnlock()

	s := &Set{byName: make(map[string]agentik.Tool)}
	for _, t := range builtin {
		s.add(t.Spec().Name, "builtin", t)
	}
	for _, ns := range sources {
		for _, t := range ns.src.Tools(ctx) {
			name := t.Spec().Name
			if _, taken := s.byName[name]; taken {
				name = ns.name + "_" + name
			}
			s.add(name, "", t)
		}
	}
	if keep != nil {
		s.filter(keep)
	}
	return s
}

// Starting reports whether a source is still waiting for its first tools
// (agentik.StartingToolSource): a Snapshot that does not wait may miss some.
func (r *Registry) Starting() bool {
	r.mu.RLock()
	sources := r.sources
	r.mu.RUnlock()
	for _, ns := range sources {
		if s, ok := ns.src.(agentik.StartingToolSource); ok && s.Starting() {
			return true
		}
	}
	return false
}

// filter drops the tools keep refuses.
func (s *Set) filter(keep func(name string) bool) {
	specs := s.specs[:0]
	for _, sp := range s.specs {
		if keep(sp.Name) {
			specs = append(specs, sp)
		} else {
			delete(s.byName, sp.Name)
		}
	}
	s.specs = specs
}

func (s *Set) add(name, source string, t agentik.Tool) {
	if _, taken := s.byName[name]; taken {
		return // a clash even after prefixing: the first tool keeps the name
	}
	spec := t.Spec()
	spec.Name = name
	if spec.Source == "" {
		spec.Source = source
	}
	s.byName[name] = t
	s.specs = append(s.specs, spec)
}

// Specs returns the tools as the model sees them.
func (s *Set) Specs() []agentik.ToolSpec {
	if s == nil {
		return nil
	}
	return s.specs
}

// Lookup returns the tool offered under name.
func (s *Set) Lookup(name string) (agentik.Tool, bool) {
	if s == nil {
		return nil, false
	}
	t, ok := s.byName[name]
	return t, ok
}
