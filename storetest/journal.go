package storetest

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/agentik/agentik"
)

func testMessagesPaging(t *testing.T, s agentik.Store) {
	c := newConversation(t, s)
	commitN(t, s, c.ID, 120)
	r := func(after, before int64, offset, limit int) agentik.MessagesRequest {
		return agentik.MessagesRequest{After: after, Before: before, Offset: offset, Limit: limit}
	}
	cases := []struct {
		name     string
		req      agentik.MessagesRequest
		from, to int64 // expected seqs, inclusive; from > to means none
		more     bool
	}{
		{"defaults", r(0, 0, 0, 0), 1, 50, true},
		{"after", r(100, 0, 0, 10), 101, 110, true},
		{"after to the end", r(110, 0, 0, 10), 111, 120, false},
		{"after past the end", r(120, 0, 0, 10), 1, 0, false},
		{"after far past the end", r(500, 0, 0, 10), 1, 0, false},
		{"before past the end", r(0, 121, 0, 10), 111, 120, true},
		{"before far past the end", r(0, 1000, 0, 10), 111, 120, true},
		{"before", r(0, 50, 0, 10), 40, 49, true},
		{"before to the start", r(0, 11, 0, 10), 1, 10, false},
		{"before short", r(0, 5, 0, 10), 1, 4, false},
		{"before the first", r(0, 1, 0, 10), 1, 0, false},
		{"after with offset", r(0, 0, 10, 5), 11, 15, true},
		{"after with offset to the end", r(100, 0, 15, 5), 116, 120, false},
		{"before with offset", r(0, 121, 10, 5), 106, 110, true},
		{"before with offset to the start", r(0, 21, 15, 5), 1, 5, false},
		{"offset past the end", r(0, 0, 200, 5), 1, 0, false},
		{"window", r(2, 10, 0, 3), 7, 9, true},
		{"whole window", r(2, 10, 0, 10), 3, 9, false},
		{"exact fit", r(0, 0, 0, 120), 1, 120, false},
	}
	for _, tc := range cases {
		got, more, err := s.Messages(t.Context(), c.ID, tc.req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if want := seqRange(tc.from, tc.to); !slices.Equal(seqs(got), want) || more != tc.more {
			t.Errorf("%s %+v: seqs %v has_more %v, want %v %v", tc.name, tc.req, seqs(got), more, want, tc.more)
		}
	}
	_, _, err := s.Messages(t.Context(), agentik.NewID(), agentik.MessagesRequest{})
	wantCode(t, err, agentik.ENotFound)
}

// testMessagesWalk pages a whole journal both ways: no gaps, no duplicates.
func testMessagesWalk(t *testing.T, s agentik.Store) {
	c := newConversation(t, s)
	ms := commitN(t, s, c.ID, 73)
	want := make([]agentik.Message, len(ms))
	for i, m := range ms {
		want[i] = *m
	}

	var up []agentik.Message
	var after int64
	for {
		page, more, err := s.Messages(t.Context(), c.ID, agentik.MessagesRequest{After: after, Limit: 10})
		if err != nil {
			t.Fatalf("Messages: %v", err)
		}
		up = append(up, page...)
		if !more {
			break
		}
		after = page[len(page)-1].Seq
	}
	equal(t, "walk up", up, want)

	var down []agentik.Message
	before := int64(1 << 40)
	for {
		page, more, err := s.Messages(t.Context(), c.ID, agentik.MessagesRequest{Before: before, Limit: 10})
		if err != nil {
			t.Fatalf("Messages: %v", err)
		}
		down = append(slices.Clone(page), down...)
		if !more {
			break
		}
		before = page[0].Seq
	}
	equal(t, "walk down", down, want)
}

func testMessagesLimits(t *testing.T, s agentik.Store) {
	c := newConversation(t, s)
	commitN(t, s, c.ID, agentik.MaxMessagesLimit+10)
	got, more, err := s.Messages(t.Context(), c.ID, agentik.MessagesRequest{Limit: 10 * agentik.MaxMessagesLimit})
	if err != nil || len(got) != agentik.MaxMessagesLimit || !more {
		t.Fatalf("limit over the max: %d messages, has_more %v, %v", len(got), more, err)
	}
	got, more, err = s.Messages(t.Context(), c.ID, agentik.MessagesRequest{Limit: -1})
	if err != nil || len(got) != agentik.DefaultMessagesLimit || !more {
		t.Fatalf("negative limit: %d messages, has_more %v, %v", len(got), more, err)
	}
	got, _, err = s.Messages(t.Context(), c.ID, agentik.MessagesRequest{Before: 1 << 40, Limit: 10 * agentik.MaxMessagesLimit})
	if err != nil || !slices.Equal(seqs(got), seqRange(11, agentik.MaxMessagesLimit+10)) {
		t.Fatalf("before with a limit over the max: %d messages, %v", len(got), err)
	}
	// An empty journal is an empty page.
	e := newConversation(t, s)
	got, more, err = s.Messages(t.Context(), e.ID, agentik.MessagesRequest{})
	if err != nil || len(got) != 0 || more {
		t.Fatalf("empty journal: %v, %v, %v", got, more, err)
	}
}

func testMessageByID(t *testing.T, s agentik.Store) {
	c := newConversation(t, s)
	other := newConversation(t, s)
	ms := commitN(t, s, c.ID, 3)
	got, err := s.Message(t.Context(), c.ID, ms[1].ID)
	if err != nil {
		t.Fatalf("Message: %v", err)
	}
	equal(t, "message", got, *ms[1])
	_, err = s.Message(t.Context(), c.ID, agentik.NewID())
	wantCode(t, err, agentik.ENotFound)
	_, err = s.Message(t.Context(), other.ID, ms[1].ID)
	wantCode(t, err, agentik.ENotFound)
	_, err = s.Message(t.Context(), agentik.NewID(), ms[1].ID)
	wantCode(t, err, agentik.ENotFound)
}

// testRoundTrip stores every kind of journal message and durable event and
// reads them back equal, field for field.
func testRoundTrip(t *testing.T, s agentik.Store) {
	c := newConversation(t, s)
	u := &agentik.Message{
		ID: agentik.NewID(), ConversationID: c.ID, Date: at(1), Type: agentik.MsgUser,
		Content: []agentik.Content{agentik.Text("what is this? ñ \u2028 \"quoted\" <b>"),
			agentik.Image("image/jpeg", []byte{0xff, 0xd8, 0xff, 0x00, 0x01})},
		Context: &agentik.MessageContext{
			Origin:   &agentik.Origin{Channel: "irc", User: "alice", DisplayName: "Alice"},
			Metadata: map[string]string{"thread": "42", "lang": "fr"},
		},
	}
	call := &agentik.Message{
		ID: agentik.NewID(), ConversationID: c.ID, Date: at(2), Type: agentik.MsgToolCall,
		CallID: "call_9", Name: "lookup", ReplyTo: u.ID,
		Arguments: agentik.RawJSON(`{"q":"x","n":[1,2.5,null],"deep":{"ok":true}}`),
	}
	failed := &agentik.Message{
		ID: agentik.NewID(), ConversationID: c.ID, Date: at(3), Type: agentik.MsgToolResult,
		CallID: "call_9", Name: "lookup", IsError: true, ReplyTo: u.ID,
		Content: []agentik.Content{agentik.Text("boom")},
	}
	result := &agentik.Message{
		ID: agentik.NewID(), ConversationID: c.ID, Date: at(4), Type: agentik.MsgToolResult,
		CallID: "call_10", Name: "snap", ReplyTo: u.ID,
		Content: []agentik.Content{agentik.Image("image/png", []byte("png"))},
	}
	partial := &agentik.Message{
		ID: agentik.NewID(), ConversationID: c.ID, Date: at(5), Type: agentik.MsgAssistant,
		Content: []agentik.Content{agentik.Text("It is")}, Reasoning: "hmm",
		Tokens: &agentik.TurnTokens{Input: 1234, Output: 56}, Interrupted: true, ReplyTo: u.ID,
	}
	errMsg := &agentik.Message{
		ID: agentik.NewID(), ConversationID: c.ID, Date: at(6), Type: agentik.MsgError,
		Code: "tool_rounds_exceeded", Details: "16 rounds", ReplyTo: u.ID,
	}
	evs := events(u, call, failed, result, partial)
	if evs[2].Type != agentik.EvToolFailed {
		t.Fatalf("MessageEvent: %s", evs[2].Type)
	}
	evs = append(evs,
		agentik.Event{ConversationID: c.ID, Date: at(5), Type: agentik.EvInterrupted, ReplyTo: u.ID, Reason: agentik.ReasonBusyPolicy},
		agentik.MessageEvent(errMsg),
		agentik.Event{ConversationID: c.ID, Date: at(7), Type: agentik.EvCompactionTriggered, Dropped: 4, SummaryTokens: 300,
			Compaction: &agentik.Compaction{FromSeq: 1, ToSeq: 4, Summary: "s", Model: "m", TokensBefore: 9000, TokensAfter: 400}},
		agentik.Event{ConversationID: c.ID, Date: at(8), Type: agentik.EvConversationClosing},
	)
	written, _ := commit(t, s, agentik.Write{ConversationID: c.ID, Events: evs})

	wantMsgs := []agentik.Message{*u, *call, *failed, *result, *partial, *errMsg}
	equal(t, "journal", allMessages(t, s, c.ID), wantMsgs)
	for _, m := range wantMsgs {
		got, err := s.Message(t.Context(), c.ID, m.ID)
		if err != nil {
			t.Fatalf("Message: %v", err)
		}
		equal(t, "message "+m.Type, got, m)
	}
	equal(t, "events", allEvents(t, s, c.ID), written)
	for i, ev := range written {
		want := evs[i]
		want.Cursor = ev.Cursor
		equal(t, "returned event", ev, want)
	}
}

func testEvents(t *testing.T, s agentik.Store) {
	c := newConversation(t, s)
	other := newConversation(t, s)
	if last, err := s.LastCursor(t.Context(), c.ID); err != nil || last != 0 {
		t.Fatalf("LastCursor of a new conversation = %d, %v", last, err)
	}
	var written []agentik.Event
	for i := range 10 {
		evs, _ := commit(t, s, agentik.Write{ConversationID: c.ID, Events: events(userMsg(c.ID, fmt.Sprint(i)))})
		written = append(written, evs...)
		// Interleave another conversation's events.
		commit(t, s, agentik.Write{ConversationID: other.ID, Events: events(userMsg(other.ID, "x"))})
	}
	strictlyIncreasing(t, "events", cursors(written), 0)
	equal(t, "all events", allEvents(t, s, c.ID), written)

	got, err := s.Events(t.Context(), c.ID, written[3].Cursor, 3)
	if err != nil {
		t.Fatalf("Events: %v", err)
	}
	equal(t, "events after, limited", got, written[4:7])
	sameJSON(t, s, c.ID, written[3].Cursor, 3, written[4:7])
	sameJSON(t, s, c.ID, written[9].Cursor, 10, nil)
	_, err = s.EventsJSON(t.Context(), agentik.NewID(), 0, 10)
	wantCode(t, err, agentik.ENotFound)
	// A cursor between two of this conversation's events (another's) works.
	got, err = s.Events(t.Context(), c.ID, written[3].Cursor+1, 1)
	if err != nil {
		t.Fatalf("Events: %v", err)
	}
	equal(t, "events after a foreign cursor", got, written[4:5])
	got, err = s.Events(t.Context(), c.ID, written[9].Cursor, 10)
	if err != nil || len(got) != 0 {
		t.Fatalf("events after the last: %v, %v", got, err)
	}
	last, err := s.LastCursor(t.Context(), c.ID)
	if err != nil || last != written[9].Cursor {
		t.Fatalf("LastCursor = %d, %v; want %d", last, err, written[9].Cursor)
	}
	_, err = s.Events(t.Context(), agentik.NewID(), 0, 10)
	wantCode(t, err, agentik.ENotFound)
	_, err = s.LastCursor(t.Context(), agentik.NewID())
	wantCode(t, err, agentik.ENotFound)
}

func testAgentEvents(t *testing.T, s agentik.Store) {
	before := lastAgentCursor(t, s)
	c := record(newOwner(), "a", at(0), at(0))
	created := create(t, s, c)
	_, renamed, err := s.RenameConversation(t.Context(), c.ID, "b", at(1))
	if err != nil {
		t.Fatalf("RenameConversation: %v", err)
	}
	_, touched := commit(t, s, agentik.Write{ConversationID: c.ID, Touch: at(2)})
	deleted, err := s.DeleteConversation(t.Context(), c.ID, at(3))
	if err != nil {
		t.Fatalf("DeleteConversation: %v", err)
	}
	// Numbered after the fact where the store numbers after commit: in the
	// order they were committed all the same.
	created, renamed, deleted = numbered(t, s, before, created), numbered(t, s, before, renamed), numbered(t, s, before, deleted)
	*touched = numbered(t, s, before, *touched)
	want := []agentik.AgentEvent{created, renamed, *touched, deleted}
	strictlyIncreasing(t, "agent events", []int64{created.Cursor, renamed.Cursor, touched.Cursor, deleted.Cursor}, before)
	// The stream outlives the conversation.
	equal(t, "agent events", agentEventsOf(t, s, before, c.ID), want)
	got, err := s.AgentEvents(t.Context(), created.Cursor, 1)
	if err != nil || len(got) != 1 || got[0].Cursor <= created.Cursor || got[0].Cursor > renamed.Cursor {
		t.Fatalf("AgentEvents(after created, 1) = %s, %v", dump(got), err)
	}
	if last := lastAgentCursor(t, s); last < deleted.Cursor {
		t.Fatalf("LastAgentCursor = %d, want >= %d", last, deleted.Cursor)
	}
}

func testOpenTurns(t *testing.T, s agentik.Store) {
	a := newConversation(t, s)
	b := newConversation(t, s)
	w := func(conv string, evs ...agentik.Event) {
		commit(t, s, agentik.Write{ConversationID: conv, Events: evs})
	}
	msg := func(m *agentik.Message) agentik.Event { return agentik.MessageEvent(m) }
	interruptedMsg := func(conv, replyTo string) *agentik.Message {
		m := reply(conv, agentik.MsgAssistant, replyTo)
		m.Interrupted = true
		return m
	}
	answered := userMsg(a.ID, "answered")
	w(a.ID, msg(answered))
	w(a.ID, msg(reply(a.ID, agentik.MsgToolCall, answered.ID)), msg(reply(a.ID, agentik.MsgAssistant, answered.ID)))

	cut := userMsg(a.ID, "cut short, no interrupted event yet")
	w(a.ID, msg(cut), msg(interruptedMsg(a.ID, cut.ID)))

	failed := userMsg(a.ID, "failed")
	w(a.ID, msg(failed))
	w(a.ID, msg(reply(a.ID, agentik.MsgError, failed.ID)))

	stopped := userMsg(a.ID, "interrupted")
	w(a.ID, msg(stopped), interrupted(a.ID, stopped.ID))

	stoppedWithText := userMsg(a.ID, "interrupted with text")
	w(a.ID, msg(stoppedWithText))
	w(a.ID, msg(interruptedMsg(a.ID, stoppedWithText.ID)), interrupted(a.ID, stoppedWithText.ID))

	inTools := userMsg(a.ID, "mid tool loop")
	w(a.ID, msg(inTools), msg(reply(a.ID, agentik.MsgToolCall, inTools.ID)))

	// Client tools, the traceparent and the sampling parameters are kept
	// with the message (never in its event).
	queued := userMsg(a.ID, "queued")
	temperature, seed := 0.25, int64(7)
	queued.Params = &agentik.ModelParams{Temperature: &temperature, Seed: &seed}
	queued.ClientTools = []agentik.ToolSpec{{Name: "pick_color", Description: "Ask the user", Parameters: agentik.RawJSON(`{"type":"object"}`)}}
	queued.TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	evs, _ := commit(t, s, agentik.Write{ConversationID: a.ID, Events: []agentik.Event{msg(queued)}})
	if stored, err := s.Events(t.Context(), a.ID, evs[0].Cursor-1, 1); err != nil || len(stored) != 1 || stored[0].Message.ClientTools != nil || stored[0].Message.TraceParent != "" || stored[0].Message.Params != nil {
		t.Fatalf("the event of a message carries its client tools: %+v, %v", stored, err)
	}

	// A reply in another conversation does not close b's turn, and an
	// interrupted event replying to another message does not either.
	waiting := userMsg(b.ID, "waiting")
	w(b.ID, msg(waiting), interrupted(b.ID, answered.ID))
	w(a.ID, msg(reply(a.ID, agentik.MsgAssistant, waiting.ID)))

	want := map[string][]agentik.Message{
		a.ID: {*cut, *inTools, *queued},
		b.ID: {*waiting},
	}
	// More conversations with open turns, created in descending id order, so
	// that neither creation order nor chance gives the right order.
	extra := []string{agentik.NewID(), agentik.NewID(), agentik.NewID(), agentik.NewID()}
	slices.Reverse(extra)
	for _, id := range extra {
		c := record(newOwner(), "extra", at(0), at(0))
		c.ID = id
		create(t, s, c)
		m := userMsg(c.ID, "open")
		w(c.ID, msg(m))
		want[c.ID] = []agentik.Message{*m}
	}

	checkOpenTurns(t, s, want)
	// Closing a turn later removes it.
	w(a.ID, interrupted(a.ID, cut.ID), msg(reply(a.ID, agentik.MsgAssistant, inTools.ID)))
	got, err := s.OpenTurns(t.Context())
	if err != nil {
		t.Fatalf("OpenTurns: %v", err)
	}
	for _, m := range got {
		if m.ID == cut.ID || m.ID == inTools.ID {
			t.Fatalf("closed turn %q still open", agentik.JoinText(m.Content))
		}
	}
	of, err := s.OpenTurnsOf(t.Context(), a.ID)
	if err != nil {
		t.Fatalf("OpenTurnsOf: %v", err)
	}
	equal(t, "open turns of a after closing two", of, []agentik.Message{*queued})
}

// checkOpenTurns checks that the store's open turns, of every conversation
// and of each, are want's (conversation → its open user messages in order).
func checkOpenTurns(t *testing.T, s agentik.Store, want map[string][]agentik.Message) {
	t.Helper()
	got, err := s.OpenTurns(t.Context())
	if err != nil {
		t.Fatalf("OpenTurns: %v", err)
	}
	var mine []agentik.Message
	for _, m := range got {
		if _, ok := want[m.ConversationID]; ok {
			mine = append(mine, m)
		}
	}
	convs := slices.Sorted(maps.Keys(want))
	var wantAll []agentik.Message
	for _, id := range convs {
		wantAll = append(wantAll, want[id]...)
	}
	equal(t, "open turns", mine, wantAll)
	for _, m := range got {
		if m.Type != agentik.MsgUser {
			t.Fatalf("open turn of type %s", m.Type)
		}
	}
	// One conversation's queue, in seq order; none for one without open
	// turns or unknown.
	for _, id := range convs {
		of, err := s.OpenTurnsOf(t.Context(), id)
		if err != nil {
			t.Fatalf("OpenTurnsOf: %v", err)
		}
		equal(t, "open turns of "+id, of, want[id])
	}
	for _, id := range []string{newConversation(t, s).ID, agentik.NewID()} {
		if of, err := s.OpenTurnsOf(t.Context(), id); err != nil || len(of) != 0 {
			t.Fatalf("OpenTurnsOf a conversation without open turns: %v, %v", of, err)
		}
	}
}

func testPingClose(t *testing.T, s agentik.Store) {
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	wantCode(t, s.Ping(t.Context()), agentik.EUnavailable)
	_, err := s.GetConversation(t.Context(), agentik.NewID())
	wantCode(t, err, agentik.EUnavailable)
}
