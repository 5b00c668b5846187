// Package memory is an agent's memory blocks (SPEC §19, docs/memory.md):
// the blocks of the caller's set rendered into the system context of
// every model call (a ContextSource), the memory_append and
// memory_replace tools the agent edits them with, and the reads and
// changes the native API and the console make.
//
// Cost: the blocks are rendered once per set and kept in this process
// until a change of that set — here, or on another process, told by the
// memory_updated agent event its Bus delivers — drops them; a model call
// then costs a look at the Bus subscription and a map lookup.
package memory

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/agentik/agentik"
)

// Options configure a Service.
type Options struct {
	Store agentik.MemoryStore // the agent's view
	// Bus delivers the agent's events: a memory_updated from another
	// process drops that set from the cache (nil: this process alone
	// changes the store).
	Bus agentik.Bus
	// Scope is agentik.MemoryScopePrincipal (default) or MemoryScopeAgent.
	Scope string
	// Blocks are the configuration's: every set has exactly these labels.
	Blocks []agentik.MemoryBlock
	// Order runs a store write that appends agent events and publishes
	// them in cursor order with the agent's other events
	// (engine.Engine.AgentWrite). Nil: they are published to Bus as
	// they come.
	Order func(write func() ([]agentik.AgentEvent, error)) error
	// Now is the clock (agentik.Now when nil).
	Now func() agentik.Time
}

// Service is one agent's memory. Safe for concurrent use.
type Service struct {
	opts   Options
	byName map[string]int // label → index in opts.Blocks

	mu    sync.Mutex
	cache map[string]*set // owner key → its blocks, rendered
	gen   uint64          // bumped by every drop: a read that started before one does not fill the cache

	subMu   sync.Mutex // drain's
	sub     agentik.Subscriber[agentik.AgentEvent]
	stopped bool
}

// set is one owner's blocks as last read, and their rendering.
type set struct {
	blocks   []agentik.MemoryBlock
	rendered string
}

// New returns the service; Start follows the Bus.
func New(opts Options) *Service {
	if opts.Scope == "" {
		opts.Scope = agentik.MemoryScopePrincipal
	}
	if opts.Now == nil {
		opts.Now = agentik.Now
	}
	s := &Service{opts: opts, byName: map[string]int{}, cache: map[string]*set{}}
	for i, b := range opts.Blocks {
		s.byName[b.Label] = i
	}
	return s
}

// Start subscribes to the Bus's agent events: each memory_updated drops
// its set from the cache. They are taken when the cache is used (drain),
// not by a goroutine of their own: once this process's Bus has a change,
// the next model call here sees it.
func (s *Service) Start() {
	if s.opts.Bus != nil {
		s.sub = s.opts.Bus.SubscribeAgent()
	}
}

// drain takes the agent events the Bus delivered since the last call. A
// subscription that was cut off (it fell behind) drops every set, since
// what it missed is unknown, and subscribes again first: a change after
// the drop is then told by the new subscription.
func (s *Service) drain() {
	if s.sub == nil {
		return
	}
	s.subMu.Lock()
	defer s.subMu.Unlock()
	for s.sub != nil {
		sh, closed := s.sub.Next()
		if closed {
			if s.stopped {
				return
			}
			s.sub = s.opts.Bus.SubscribeAgent()
			s.dropAll()
			return
		}
		if sh == nil {
			return
		}
		if ev, _ := sh.Value(); ev.Type == agentik.AgentEvMemoryUpdated {
			s.drop(s.key(ev.Owner))
		}
	}
}

// Close ends the subscription.
func (s *Service) Close() {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	if s.sub != nil && !s.stopped {
		s.sub.Close()
	}
	s.stopped = true
}

// Enabled reports whether the agent has any block.
func (s *Service) Enabled() bool { return len(s.opts.Blocks) > 0 }

// key is the cache and store key of principal's set.
func (s *Service) key(principal string) string {
	if s.opts.Scope == agentik.MemoryScopeAgent {
		return ""
	}
	return principal
}

func (s *Service) drop(key string) {
	s.mu.Lock()
	delete(s.cache, key)
	s.gen++
	s.mu.Unlock()
}

func (s *Service) dropAll() {
	s.mu.Lock()
	clear(s.cache)
	s.gen++
	s.mu.Unlock()
}

// load returns the set of key, from the cache or read and cached.
func (s *Service) load(ctx context.Context, key string) (*set, error) {
	s.drain()
	s.mu.Lock()
	st, gen := s.cache[key], s.gen
	s.mu.Unlock()
	if st != nil {
		return st, nil
	}
	stored, err := s.opts.Store.MemoryValues(ctx, key)
	if err != nil {
		return nil, err
	}
	blocks := append([]agentik.MemoryBlock(nil), s.opts.Blocks...)
	for _, v := range stored {
		if i, ok := s.byName[v.Label]; ok { // a block no longer configured is kept, unseen
			blocks[i].Value, blocks[i].UpdatedAt, blocks[i].UpdatedBy = v.Value, v.UpdatedAt, v.UpdatedBy
		}
	}
	st = &set{blocks: blocks, rendered: Render(blocks)}
	s.mu.Lock()
	if s.gen == gen {
		s.cache[key] = st
	}
	s.mu.Unlock()
	return st, nil
}

// SystemContext renders the blocks of the turn's owner's set (SPEC §19).
func (s *Service) SystemContext(ctx context.Context) (string, error) {
	if !s.Enabled() {
		return "", nil
	}
	st, err := s.load(ctx, s.key(agentik.PrincipalFrom(ctx)))
	if err != nil {
		return "", err
	}
	return st.rendered, nil
}

// Render writes blocks as the model sees them: <memory><block label="…"
// description="…">value</block>…</memory>, the text escaped so that a
// value cannot close its block or open another.
func Render(blocks []agentik.MemoryBlock) string {
	var b strings.Builder
	b.WriteString("Your memory: blocks that last across conversations. Keep them current with memory_append and memory_replace (read_only blocks cannot change).\n<memory>\n")
	for _, blk := range blocks {
		b.WriteString(`<block label="`)
		escape(&b, blk.Label, true)
		if blk.Description != "" {
			b.WriteString(`" description="`)
			escape(&b, blk.Description, true)
		}
		b.WriteString(`" chars="`)
		fmt.Fprintf(&b, "%d/%d", agentik.MemoryChars(blk.Value), blk.Limit)
		if blk.ReadOnly {
			b.WriteString(`" read_only="true`)
		}
		b.WriteString(`">`)
		escape(&b, blk.Value, false)
		b.WriteString("</block>\n")
	}
	b.WriteString("</memory>")
	return b.String()
}

// escape writes s with &, < and > (and in an attribute ") as entities.
func escape(b *strings.Builder, s string, attr bool) {
	for _, r := range s {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '"' && attr:
			b.WriteString("&quot;")
		case (r == '\n' || r == '\r') && attr:
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
}
