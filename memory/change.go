package memory

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentik/agentik"
)

// maxTries bounds the retries of a change that raced another one.
const maxTries = 8

// Blocks returns principal's blocks, in the configuration's order.
func (s *Service) Blocks(ctx context.Context, principal string) ([]agentik.MemoryBlock, error) {
	st, err := s.load(ctx, s.key(principal))
	if err != nil {
		return nil, err
	}
	return append([]agentik.MemoryBlock(nil), st.blocks...), nil
}

// Block returns principal's block label; ENotFound for a label the agent
// does not have.
func (s *Service) Block(ctx context.Context, principal, label string) (agentik.MemoryBlock, error) {
	i, ok := s.byName[label]
	if !ok {
		return agentik.MemoryBlock{}, unknown(label)
	}
	st, err := s.load(ctx, s.key(principal))
	if err != nil {
		return agentik.MemoryBlock{}, err
	}
	return st.blocks[i], nil
}

func unknown(label string) error {
	return agentik.Errorf(agentik.ENotFound, "no memory block labelled %q", label)
}

// change is who makes a change and where.
type change struct {
	principal      string // whose set (and who the event goes to)
	by             string // the principal, or agentik.MemoryByAgent
	conversationID string
}

// edit changes block label of c.principal's set to what fn makes of its
// current value, and returns the block. fn's error is returned as it is;
// a value over the limit is ETooLarge, a read-only block EConflict.
func (s *Service) edit(ctx context.Context, c change, label string, reset bool, fn func(cur string) (string, error)) (agentik.MemoryBlock, error) {
	i, ok := s.byName[label]
	if !ok {
		return agentik.MemoryBlock{}, unknown(label)
	}
	key := s.key(c.principal)
	for try := 0; ; try++ {
		st, err := s.load(ctx, key)
		if err != nil {
			return agentik.MemoryBlock{}, err
		}
		blk := st.blocks[i]
		if blk.ReadOnly {
			return blk, agentik.Errorf(agentik.EConflict, "memory block %q is read-only", label)
		}
		next := s.opts.Blocks[i].Value // reset: the configuration's value
		if !reset {
			if next, err = fn(blk.Value); err != nil {
				return blk, err
			}
		}
		if strings.ContainsRune(next, 0) || !utf8.ValidString(next) {
			return blk, agentik.Errorf(agentik.EInvalid, "a memory block holds text: no NUL character and valid UTF-8")
		}
		if n := agentik.MemoryChars(next); n > blk.Limit {
			return blk, agentik.Errorf(agentik.ETooLarge, "memory block %q would hold %d characters, over its limit of %d", label, n, blk.Limit)
		}
		if next == blk.Value && (!reset || blk.UpdatedBy == "") {
			return blk, nil // nothing changes: nothing to record
		}
		mc := agentik.MemoryChange{Owner: key, Label: label, Seed: s.opts.Blocks[i].Value, Old: blk.Value, New: next, Reset: reset,
			By: c.by, ConversationID: c.conversationID, Principal: c.principal, Date: s.opts.Now()}
		err = s.write(func() ([]agentik.AgentEvent, error) {
			ev, err := s.opts.Store.ChangeMemory(ctx, mc)
			if err != nil {
				return nil, err
			}
			return []agentik.AgentEvent{ev}, nil
		})
		s.drop(key)
		if agentik.ErrorCode(err) == agentik.EConflict && try < maxTries {
			continue // another change came first: read it and edit again
		}
		if err != nil {
			return blk, err
		}
		blk.Value, blk.UpdatedAt, blk.UpdatedBy = next, mc.Date, c.by
		if reset {
			blk.UpdatedAt, blk.UpdatedBy = agentik.Time{}, ""
		}
		return blk, nil
	}
}

// write runs a store write that appends agent events, and publishes them.
func (s *Service) write(fn func() ([]agentik.AgentEvent, error)) error {
	if s.opts.Order != nil {
		return s.opts.Order(fn)
	}
	evs, err := fn()
	if s.opts.Bus != nil {
		for _, ev := range evs {
			s.opts.Bus.PublishAgent(ev)
		}
	}
	return err
}

// Set gives principal's block label the value, as principal.
func (s *Service) Set(ctx context.Context, principal, label, value string) (agentik.MemoryBlock, error) {
	return s.edit(ctx, change{principal: principal, by: principal}, label, false, func(string) (string, error) { return value, nil })
}

// Reset gives principal's block label the configuration's value again.
func (s *Service) Reset(ctx context.Context, principal, label string) (agentik.MemoryBlock, error) {
	return s.edit(ctx, change{principal: principal, by: principal}, label, true, nil)
}

// History returns the past changes of principal's block label, newest
// first.
func (s *Service) History(ctx context.Context, principal, label string, before int64, limit int) ([]agentik.MemoryHistoryEntry, error) {
	if _, ok := s.byName[label]; !ok {
		return nil, unknown(label)
	}
	return s.opts.Store.MemoryHistory(ctx, s.key(principal), label, before, limit)
}

// Forget removes what principal's set holds: every block has the
// configuration's value again, and the history is gone. An agent whose
// scope is agent has one set: forgetting it is everyone's.
func (s *Service) Forget(ctx context.Context, principal string) error {
	key := s.key(principal)
	err := s.write(func() ([]agentik.AgentEvent, error) {
		return s.opts.Store.ForgetMemory(ctx, key, principal, s.opts.Now())
	})
	s.drop(key)
	return err
}

// Append adds text to the turn's owner's block label, on a line of its
// own (memory_append).
func (s *Service) Append(ctx context.Context, label, text string) (agentik.MemoryBlock, error) {
	return s.edit(ctx, s.agentChange(ctx), label, false, func(cur string) (string, error) {
		if cur == "" {
			return text, nil
		}
		return cur + "\n" + text, nil
	})
}

// Replace replaces the one occurrence of old in the turn's owner's block
// label with new (memory_replace); no occurrence, or several, is EInvalid.
func (s *Service) Replace(ctx context.Context, label, old, new string) (agentik.MemoryBlock, error) {
	return s.edit(ctx, s.agentChange(ctx), label, false, func(cur string) (string, error) {
		switch n := strings.Count(cur, old); {
		case old == "":
			return "", agentik.Errorf(agentik.EInvalid, "old_text is empty: give the exact text to replace")
		case n == 0:
			return "", agentik.Errorf(agentik.EInvalid, "old_text does not occur in memory block %q: give its exact text", label)
		case n > 1:
			return "", agentik.Errorf(agentik.EInvalid, "old_text occurs %d times in memory block %q: give more of the text around it so it matches once", n, label)
		}
		return strings.Replace(cur, old, new, 1), nil
	})
}

// agentChange is a change the agent makes in the turn of ctx.
func (s *Service) agentChange(ctx context.Context) change {
	return change{principal: agentik.PrincipalFrom(ctx), by: agentik.MemoryByAgent, conversationID: agentik.ConversationFrom(ctx)}
}

// describe tells the model where a block stands after its change.
func describe(b agentik.MemoryBlock) string {
	return fmt.Sprintf("memory block %q now holds %d of %d characters", b.Label, agentik.MemoryChars(b.Value), b.Limit)
}

// Scope is the agent's memory scope.
func (s *Service) Scope() string { return s.opts.Scope }

var _ agentik.Memory = (*Service)(nil)
