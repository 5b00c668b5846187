// Package history decides what of a conversation history a client resent is
// new to the server. Front doors whose clients send the whole conversation
// with every request (AG-UI, OpenAI Chat Completions, the Agent Protocol)
// hold it against the journal (the stored head path) with Reconcile: which
// user messages the server does not hold, which tool messages answer calls
// the conversation waits for, whether the client lacks an answer the journal
// has, and how far the history follows the journal before it branches off.
//
// The package knows the domain (agentik.Message) and nothing of any wire
// format: a front door maps its messages onto Message and its own ids onto
// Options. Every function is pure: no I/O, safe for concurrent use.
package history

import (
	"slices"

	"github.com/agentik/agentik"
)

// Roles of Message the reconciler acts on. A front door maps its roles onto
// these (an Agent Protocol "human" is a user); messages of any other role
// (system, developer, reasoning, …) are the client's own business and are
// passed over.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one message of a resent history, reduced to what reconciling
// needs.
type Message struct {
	// Role is RoleUser, RoleAssistant, RoleTool, or anything else (skipped).
	Role string
	// ID is the client's id for the message; "" when its protocol has none
	// (Chat Completions), and then only position and content identify it.
	ID string
	// Text is the message's text, compared with the journal's when the id
	// does not identify the message.
	Text string
	// CallID is, for a tool message, the id of the call it answers.
	CallID string
	// Calls are, for an assistant message, the ids of the tool calls it
	// makes, in order.
	Calls []string
}

// Options says how a front door's clients know the journal's messages.
type Options struct {
	// IDs returns the ids, besides its journal id, a client may know a
	// stored message by (a front door that records its clients' ids in the
	// message's metadata). A stored user message with several such ids
	// stands for as many consecutive client messages (a front door that
	// stores several of them as one). Nil: the journal id only.
	IDs func(agentik.Message) []string
}

// Result is what Reconcile found.
type Result struct {
	// New holds the indexes in sent of the user messages the journal does
	// not hold, in order. A message with an id is held when the journal
	// knows the id, wherever; one without, when it lies within Match.Sent.
	New []int
	// Results holds the indexes in sent of the tool messages that answer a
	// call the journal waits for (Waiting), the first message for each call,
	// in order.
	Results []int
	// Behind reports that sent ends at a user message the journal holds and
	// the journal has something to show after it: the client lacks the
	// answer. It dropped it (a regenerate) or never got it (a lost run, a
	// stale tab); the two cannot be told apart.
	Behind bool
	// Match is how far sent follows the journal's path.
	Match Match
}

// Match is how far a resent history follows the journal, message by
// message: sent[:Sent] is what the client holds of journal[:Journal], error
// records aside (clients are not shown them). Then one of three things:
//   - Diverges: sent[Sent] differs from the journal's next message; the
//     history branches off after journal[Journal-1] (before the first
//     message when Journal is 0).
//   - Sent < len(sent): the journal ends there; sent[Sent:] is the new tail.
//   - Sent == len(sent): the history is the journal or a prefix of it
//     (Journal < len(journal) says the journal goes on).
type Match struct {
	Sent     int
	Journal  int
	Diverges bool
}

// Reconcile holds sent, a history a client resent, against journal, the
// conversation's stored messages in order (its head path). Messages are
// identified by id where the client's id is one the journal knows, and
// otherwise by position and content: the role, the text, the call ids.
func Reconcile(journal []agentik.Message, sent []Message, opts Options) Result {
	ids := opts.IDs
	if ids == nil {
		ids = func(agentik.Message) []string { return nil }
	}
	view := viewOf(journal, ids)
	known := map[string]bool{}
	for _, m := range journal {
		known[m.ID] = true
		for _, id := range ids(m) {
			known[id] = true
		}
	}
	var r Result
	r.Match = match(view, sent, known)
	waiting := Waiting(journal)
	for i, m := range sent {
		switch {
		case m.Role == RoleUser && m.ID != "" && !known[m.ID]:
			r.New = append(r.New, i)
		case m.Role == RoleUser && m.ID == "" && i >= r.Match.Sent:
			r.New = append(r.New, i)
		case m.Role == RoleTool && waiting[m.CallID]:
			r.Results = append(r.Results, i)
			delete(waiting, m.CallID)
		}
	}
	r.Behind = behind(journal, view, sent, r.Match, ids)
	return r
}

// Waiting returns the ids of the tool calls the conversation's last turn may
// still wait for: the calls of the journal's last tool round that have no
// result, unless the round was followed by a user message (which abandons a
// waiting turn) or by a message that closed its turn. The engine has the
// final word: it refuses results for calls it does not wait for.
func Waiting(journal []agentik.Message) map[string]bool {
	last := -1
	for i := len(journal) - 1; i >= 0; i-- {
		if journal[i].Type == agentik.MsgToolCall {
			last = i
			break
		}
	}
	if last < 0 {
		return nil
	}
	turn := journal[last].ReplyTo
	waiting := map[string]bool{}
	for i := last; i >= 0 && journal[i].Type == agentik.MsgToolCall; i-- {
		waiting[journal[i].CallID] = true
	}
	for _, m := range journal[last+1:] {
		switch {
		case m.Type == agentik.MsgUser:
			return nil
		case m.ReplyTo == turn && m.ClosesTurn():
			return nil
		case m.Type == agentik.MsgToolResult:
			delete(waiting, m.CallID)
		}
	}
	return waiting
}

// behind reports Result.Behind. The user message sent ends at is found by
// its id among the journal's user messages (the last that has it), or,
// without an id, at its place in the match.
func behind(journal []agentik.Message, view []entry, sent []Message, mt Match, ids func(agentik.Message) []string) bool {
	if len(sent) == 0 {
		return false
	}
	last := sent[len(sent)-1]
	if last.Role != RoleUser {
		return false
	}
	at := -1
	if last.ID != "" {
		for i, m := range journal {
			if m.Type == agentik.MsgUser && (m.ID == last.ID || slices.Contains(ids(m), last.ID)) {
				at = i
			}
		}
	} else if mt.Sent == len(sent) && mt.Journal > 0 {
		at = mt.Journal - 1
	}
	if at < 0 {
		return false
	}
	for _, m := range journal[at+1:] {
		if m.Type != agentik.MsgError { // errors are not shown to clients
			return true
		}
	}
	return false
}

// entry is one message of the journal as a client sees it: a user message,
// an assistant message with the tool calls of its round, a tool result.
// Error records are no entries.
type entry struct {
	role   string
	ids    []string
	text   string
	callID string   // tool
	calls  []string // assistant
	end    int      // index in the journal after the last message it covers
}

// viewOf renders the journal as its clients see it. Consecutive tool calls
// of one turn join the assistant message before them (or make one of their
// own).
func viewOf(journal []agentik.Message, ids func(agentik.Message) []string) []entry {
	view := make([]entry, 0, len(journal))
	assistant := -1 // index in view of the assistant message calls may join
	var turn string
	for i, m := range journal {
		own := append([]string{m.ID}, ids(m)...)
		switch m.Type {
		case agentik.MsgUser:
			view = append(view, entry{role: RoleUser, ids: own, text: agentik.JoinText(m.Content), end: i + 1})
			assistant = -1
		case agentik.MsgAssistant:
			view = append(view, entry{role: RoleAssistant, ids: own, text: agentik.JoinText(m.Content), end: i + 1})
			assistant, turn = len(view)-1, m.ReplyTo
		case agentik.MsgToolCall:
			if assistant < 0 || turn != m.ReplyTo {
				view = append(view, entry{role: RoleAssistant})
				assistant, turn = len(view)-1, m.ReplyTo
			}
			view[assistant].calls = append(view[assistant].calls, m.CallID)
			view[assistant].ids = append(view[assistant].ids, own...)
			view[assistant].end = i + 1
		case agentik.MsgToolResult:
			view = append(view, entry{role: RoleTool, ids: own, callID: m.CallID, text: agentik.JoinText(m.Content), end: i + 1})
			assistant = -1
		}
	}
	return view
}

// match walks sent and the view side by side (see Match).
func match(view []entry, sent []Message, known map[string]bool) Match {
	var mt Match
	j := 0     // the next entry of the view
	prev := "" // the id the previous user message matched by, "" when none
	for i, m := range sent {
		mt.Sent = i
		if m.Role != RoleUser && m.Role != RoleAssistant && m.Role != RoleTool {
			continue
		}
		// A stored message that stands for several client messages takes
		// the next of them without moving on.
		if m.Role == RoleUser && prev != "" && m.ID != prev && j > 0 && len(view[j-1].ids) > 1 && slices.Contains(view[j-1].ids, m.ID) {
			prev = m.ID
			continue
		}
		if j == len(view) || !same(view[j], m, known) {
			mt.Diverges = j < len(view)
			return mt
		}
		prev = ""
		if m.Role == RoleUser && m.ID != "" {
			prev = m.ID
		}
		mt.Journal = view[j].end
		j++
	}
	mt.Sent = len(sent)
	return mt
}

// same reports whether m is the client's copy of e. A known id decides; a
// user message with an id the journal does not know is a new one. Otherwise
// the role and content decide: the text and call ids of an assistant
// message (clients may make their own ids for what they were streamed), the
// call a tool message answers.
func same(e entry, m Message, known map[string]bool) bool {
	switch {
	case e.role != m.Role:
		return false
	case m.Role == RoleTool:
		return e.callID == m.CallID
	case m.ID != "" && known[m.ID]:
		return slices.Contains(e.ids, m.ID)
	case m.ID != "" && m.Role == RoleUser:
		return false
	case m.Role == RoleAssistant:
		return e.text == m.Text && slices.Equal(e.calls, m.Calls)
	}
	return e.text == m.Text
}
