package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/internal/jsonpatch"
)

// The conversation's shared state (SPEC §19, docs/state.md): one JSON
// object kept under agentik.SharedStateKey with the conversation, changed
// by a read, a change and a commit of the new state with its
// state_updated event (the state whole, and the patch from the state
// before). stateMu orders the changes made in this process, so none is
// lost between its read and its commit; processes that share a store do
// not order theirs (the last commit wins).

var (
	_ agentik.StateSharer = (*handle)(nil)
	_ agentik.StateKeeper = (*handle)(nil)
)

// KeptState is the conversation's state by key for a front door's records.
func (h *handle) KeptState() agentik.ConversationState { return keptState{h.c} }

// keptState is a door's ConversationState: the shared state's key is only
// changed through the StateSharer methods, which publish its events.
type keptState struct{ c *conv }

func (s keptState) State(ctx context.Context, key string) (agentik.RawJSON, error) {
	if key == agentik.SharedStateKey {
		return nil, agentik.Errorf(agentik.EInvalid, "%s is the shared state's key", key)
	}
	return convState(s).State(ctx, key)
}

func (s keptState) SetState(ctx context.Context, key string, value agentik.RawJSON) error {
	if key == agentik.SharedStateKey {
		return agentik.Errorf(agentik.EInvalid, "%s is the shared state's key", key)
	}
	if err := s.c.e.accepting(); err != nil {
		return err
	}
	return convState(s).SetState(ctx, key, value)
}

// SharedState returns the state ({} when none is set).
func (h *handle) SharedState(ctx context.Context) (agentik.RawJSON, error) {
	_, b, err := h.c.readShared(ctx)
	return b, err
}

// PutSharedState replaces the state with an object.
func (h *handle) PutSharedState(ctx context.Context, state agentik.RawJSON) (agentik.RawJSON, error) {
	nv, err := jsonpatch.Unmarshal(state)
	if err != nil {
		return nil, agentik.Errorf(agentik.EInvalid, "the state is not JSON")
	}
	return h.c.changeShared(ctx, sharedBy(ctx), func(any) (any, error) { return nv, nil })
}

// PatchSharedState applies an RFC 6902 patch to the state.
func (h *handle) PatchSharedState(ctx context.Context, patch agentik.RawJSON) (agentik.RawJSON, error) {
	ops, err := jsonpatch.Decode(patch)
	if err != nil {
		return nil, agentik.Errorf(agentik.EInvalid, "%v", err)
	}
	return h.c.changeShared(ctx, sharedBy(ctx), func(old any) (any, error) {
		nv, err := jsonpatch.ApplyWithin(old, ops, agentik.MaxSharedState)
		if errors.Is(err, jsonpatch.ErrTooLarge) {
			return nil, agentik.Errorf(agentik.ETooLarge, "%v", err)
		}
		if err != nil {
			return nil, agentik.Errorf(agentik.EInvalid, "%v", err)
		}
		return nv, nil
	})
}

// byAgent marks a context whose state changes the agent makes (its
// update_state tool): state_updated's by is then "agent".
type byAgent struct{}

func sharedBy(ctx context.Context) string {
	if ctx.Value(byAgent{}) != nil {
		return "agent"
	}
	return agentik.PrincipalFrom(ctx)
}

// readShared reads the state, decoded and as stored.
func (c *conv) readShared(ctx context.Context) (any, agentik.RawJSON, error) {
	b, err := c.store.State(ctx, c.id, agentik.SharedStateKey)
	if err != nil {
		return nil, nil, c.readErr(err)
	}
	if b == nil {
		if _, err := c.store.GetConversation(ctx, c.id); err != nil {
			return nil, nil, c.readErr(err) // gone: not an empty state
		}
		return map[string]any{}, agentik.RawJSON("{}"), nil
	}
	v, err := jsonpatch.Unmarshal(b)
	if err != nil {
		return nil, nil, fmt.Errorf("read shared state: %w", err)
	}
	return v, b, nil
}

// changeShared makes the state change(old) — a copy of the state it may
// change in place — and commits it with its state_updated event, unless
// it is the same state. Nothing changes on an error.
func (c *conv) changeShared(ctx context.Context, by string, change func(old any) (any, error)) (agentik.RawJSON, error) {
	if err := c.e.accepting(); err != nil {
		return nil, err
	}
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	old, oldJSON, err := c.readShared(ctx)
	if err != nil {
		return nil, err
	}
	nv, err := change(jsonpatch.Clone(old))
	if err != nil {
		return nil, err
	}
	if _, ok := nv.(map[string]any); !ok {
		return nil, agentik.Errorf(agentik.EInvalid, "the state must be a JSON object")
	}
	b, err := json.Marshal(nv)
	if err != nil {
		return nil, fmt.Errorf("encode shared state: %w", err)
	}
	if len(b) > agentik.MaxSharedState {
		return nil, agentik.Errorf(agentik.ETooLarge, "the state is larger than %d bytes", agentik.MaxSharedState)
	}
	ops := jsonpatch.Diff(old, nv)
	if len(ops) == 0 {
		return oldJSON, nil
	}
	kept := agentik.RawJSON(b)
	if string(b) == "{}" {
		kept = nil // an empty state is no state: nothing kept
	}
	w := agentik.Write{
		State: map[string]agentik.RawJSON{agentik.SharedStateKey: kept},
		Events: []agentik.Event{{ConversationID: c.id, Date: agentik.Now(), Type: agentik.EvStateUpdated,
			State: b, Patch: jsonpatch.Marshal(ops), By: by}},
	}
	if _, err := c.commit(ctx, w); err != nil {
		return nil, err
	}
	return b, nil
}

// agentSharer is the shared state as the turn's tools change it: their
// changes are the agent's.
type agentSharer struct{ h *handle }

func (a agentSharer) SharedState(ctx context.Context) (agentik.RawJSON, error) {
	return a.h.SharedState(ctx)
}

func (a agentSharer) PutSharedState(ctx context.Context, state agentik.RawJSON) (agentik.RawJSON, error) {
	return a.h.PutSharedState(context.WithValue(ctx, byAgent{}, true), state)
}

func (a agentSharer) PatchSharedState(ctx context.Context, patch agentik.RawJSON) (agentik.RawJSON, error) {
	return a.h.PatchSharedState(context.WithValue(ctx, byAgent{}, true), patch)
}
