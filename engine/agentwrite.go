package engine

import (
	"cmp"
	"slices"

	"github.com/agentik/agentik"
)

// AgentWrite runs write, a store write of the agent outside any
// conversation that appends agent events (a memory block's change, SPEC
// §19), and publishes its events in cursor order with the conversations'
// own (agentorder.go): on SQLite, where the commit numbers them, an event
// published beside the engine's could reach a subscriber before one with a
// smaller cursor.
func (e *Engine) AgentWrite(write func() ([]agentik.AgentEvent, error)) error {
	w := e.beginAgentWrite(false)
	evs, err := write()
	if err != nil || len(evs) == 0 {
		w.done(nil)
		return err
	}
	if len(evs) > 1 && w.ordered {
		// Every event but the last is held under this write's ticket, as
		// done holds the last one: none is published before the writes
		// ticketed before this one came back.
		e.agentMu.Lock()
		for _, ev := range evs[:len(evs)-1] {
			if ev.Cursor != 0 {
				e.agentHeld = append(e.agentHeld, heldAgentEvent{ev: ev, ticket: e.agentNext})
			}
		}
		slices.SortFunc(e.agentHeld, func(a, b heldAgentEvent) int { return cmp.Compare(a.ev.Cursor, b.ev.Cursor) })
		e.agentMu.Unlock()
	} else if len(evs) > 1 {
		e.agentMu.Lock()
		for _, ev := range evs[:len(evs)-1] {
			e.publishAgentLocked(ev, false)
		}
		e.agentMu.Unlock()
	}
	w.done(&evs[len(evs)-1])
	return nil
}
