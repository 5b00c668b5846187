package engine

import (
	"cmp"
	"slices"

	"github.com/agentik/agentik"
)

// Agent events reach subscribers in cursor order (SPEC §2) although the
// commits that append them run concurrently: holding one lock across those
// commits, as a simple design would, serialises every turn's writes and
// leaves the store nothing to group commit.
//
// Instead a write that may append an agent event takes a ticket before it
// goes to the store, and hands its event back once the store returned. An
// event is published when every write ticketed before it came back was
// itself done, and after every held event with a smaller cursor. That is
// enough on a single-writer store (SQLite): a write ticketed after an event
// came back went to the store after that event committed, so its cursor is
// larger; the writes that may still have a smaller one are those ticketed
// before, and the event waits for them. Every event with a cursor below the
// last published one is therefore committed (Events relies on that when it
// replays up to lastAgentSeen), and none is published later.
//
// On a Bus that numbers agent events itself (Options.BusSequencesAgentEvents)
// and for temporal conversations (whose agent events are not published), no
// ticket is taken: the event is handed straight to publishAgentLocked.

// agentWrite is one write that may append an agent event. Its done must be
// called exactly once, after the store returned.
type agentWrite struct {
	e        *Engine
	ticket   uint64
	ordered  bool
	temporal bool
}

// heldAgentEvent is a committed agent event waiting for the writes ticketed
// before it came back (those below ticket).
type heldAgentEvent struct {
	ev     agentik.AgentEvent
	ticket uint64
}

// beginAgentWrite registers a write of a conversation that may append an
// agent event. Call it before the write goes to the store.
func (e *Engine) beginAgentWrite(temporal bool) agentWrite {
	w := agentWrite{e: e, temporal: temporal}
	if temporal || e.opts.BusSequencesAgentEvents {
		return w
	}
	w.ordered = true
	e.agentMu.Lock()
	w.ticket = e.agentNext
	e.agentNext++
	e.agentBack = append(e.agentBack, false)
	e.agentMu.Unlock()
	return w
}

// done hands back the write's agent event (nil when it failed or appended
// none) and publishes every event that may go now.
func (w agentWrite) done(ev *agentik.AgentEvent) {
	e := w.e
	e.agentMu.Lock()
	defer e.agentMu.Unlock()
	if !w.ordered {
		if ev != nil {
			e.publishAgentLocked(*ev, w.temporal)
		}
		return
	}
	if ev != nil && ev.Cursor != 0 {
		// Publishable once every ticket below e.agentNext is back.
		e.agentHeld = append(e.agentHeld, heldAgentEvent{ev: *ev, ticket: e.agentNext})
		if n := len(e.agentHeld); n > 1 && e.agentHeld[n-2].ev.Cursor > ev.Cursor {
			slices.SortFunc(e.agentHeld, func(a, b heldAgentEvent) int { return cmp.Compare(a.ev.Cursor, b.ev.Cursor) })
		}
	}
	e.agentBack[w.ticket-e.agentLow] = true
	back := 0
	for back < len(e.agentBack) && e.agentBack[back] {
		back++
	}
	if back == len(e.agentBack) {
		e.agentBack = e.agentBack[:0] // keeps the array
	} else {
		e.agentBack = e.agentBack[back:]
	}
	e.agentLow += uint64(back)
	pub := 0
	for pub < len(e.agentHeld) && e.agentHeld[pub].ticket <= e.agentLow {
		e.publishAgentLocked(e.agentHeld[pub].ev, false)
		pub++
	}
	if pub > 0 {
		e.agentHeld = append(e.agentHeld[:0], e.agentHeld[pub:]...)
	}
}
