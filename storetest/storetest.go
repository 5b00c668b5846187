// Package storetest is the contract test suite every agentik.Store must pass
// (SQLite, the in-memory store, PostgreSQL). It checks the guarantees written
// in the Store interface's doc comments — atomic commits, gap-free seqs,
// strictly increasing cursors that are never reused, cascading deletes, the
// paging rules of SPEC §4 and turn closing of SPEC §2 — through the interface
// only.
//
// Every subtest opens its own store. The suite only looks at what it created
// (fresh ids and owners, cursors compared with values read at the start of a
// subtest), so open may hand out stores over one shared database, as a
// PostgreSQL run would.
package storetest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
)

// Run runs the contract suite. open must return a ready store and arrange
// for it to be closed when the test ends (t.Cleanup); closing twice must be
// harmless.
func Run(t *testing.T, open func(t *testing.T) agentik.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s agentik.Store)
	}{
		{"CreateGet", testCreateGet},
		{"CreateDuplicate", testCreateDuplicate},
		{"GetUnknown", testGetUnknown},
		{"ListOrderAndOwner", testListOrderAndOwner},
		{"ListPaging", testListPaging},
		{"ListBadToken", testListBadToken},
		{"Rename", testRename},
		{"Delete", testDelete},
		{"DeleteCascade", testDeleteCascade},
		{"CommitSeqsAndCursors", testCommitSeqsAndCursors},
		{"CommitEmpty", testCommitEmpty},
		{"CursorsNeverReused", testCursorsNeverReused},
		{"Touch", testTouch},
		{"Tokens", testTokens},
		{"Memory", testMemory},
		{"FailedCommitUnknownConversation", testFailedCommitUnknown},
		{"FailedCommitChangesNothing", testFailedCommitChangesNothing},
		{"InvalidCommit", testInvalidCommit},
		{"NoAliasing", testNoAliasing},
		{"Cancelled", testCancelled},
		{"MessagesPaging", testMessagesPaging},
		{"MessagesWalk", testMessagesWalk},
		{"MessagesLimits", testMessagesLimits},
		{"MessageByID", testMessageByID},
		{"RoundTrip", testRoundTrip},
		{"Images", testImages},
		{"Events", testEvents},
		{"AgentEvents", testAgentEvents},
		{"OpenTurns", testOpenTurns},
		{"State", testState},
		{"LookupKeys", testLookupKeys},
		{"StatsCounts", testStatsCounts},
		{"ConcurrentCommits", testConcurrentCommits},
		{"PingClose", testPingClose},
		{"Tree", testTree},
		{"TreeRefusals", testTreeRefusals},
		{"Reopen", testReopen},
		{"ManyBranches", testManyBranches},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, open(t))
		})
	}
}

// --- helpers ---------------------------------------------------------------

// at returns a fixed millisecond-precision time, offset by n seconds, so
// orderings do not depend on the clock.
func at(n int) agentik.Time {
	return agentik.TimeOf(time.Date(2025, 3, 1, 12, 0, 0, 123e6, time.UTC).Add(time.Duration(n) * time.Second))
}

func newOwner() string { return "owner-" + agentik.NewID() }

func record(owner, title string, created, updated agentik.Time) agentik.ConversationRecord {
	return agentik.ConversationRecord{
		ID: agentik.NewID(), Owner: owner, Title: title,
		CreatedAt: created, UpdatedAt: updated,
	}
}

func create(t *testing.T, s agentik.Store, c agentik.ConversationRecord) agentik.AgentEvent {
	t.Helper()
	ev, err := s.CreateConversation(t.Context(), c)
	if err != nil {
		t.Fatalf("CreateConversation: %v", err)
	}
	return ev
}

// newConversation creates a conversation of a fresh owner.
func newConversation(t *testing.T, s agentik.Store) agentik.ConversationRecord {
	t.Helper()
	c := record(newOwner(), "test", at(0), at(0))
	create(t, s, c)
	return c
}

func userMsg(conv, text string) *agentik.Message {
	return &agentik.Message{
		ID: agentik.NewID(), ConversationID: conv, Date: agentik.Now(),
		Type: agentik.MsgUser, Content: []agentik.Content{agentik.Text(text)},
	}
}

func reply(conv, typ, replyTo string) *agentik.Message {
	m := &agentik.Message{
		ID: agentik.NewID(), ConversationID: conv, Date: agentik.Now(),
		Type: typ, ReplyTo: replyTo,
	}
	switch typ {
	case agentik.MsgAssistant:
		m.Content = []agentik.Content{agentik.Text("answer")}
	case agentik.MsgError:
		m.Code, m.Details = "llm_unavailable", "upstream 503"
	case agentik.MsgToolCall:
		m.CallID, m.Name, m.Arguments = "call_1", "current_time", agentik.RawJSON(`{}`)
	}
	return m
}

func interrupted(conv, replyTo string) agentik.Event {
	return agentik.Event{
		ConversationID: conv, Date: agentik.Now(), Type: agentik.EvInterrupted,
		ReplyTo: replyTo, Reason: agentik.ReasonUser,
	}
}

// events wraps messages in their durable events.
func events(ms ...*agentik.Message) []agentik.Event {
	evs := make([]agentik.Event, len(ms))
	for i, m := range ms {
		evs[i] = agentik.MessageEvent(m)
	}
	return evs
}

func commit(t *testing.T, s agentik.Store, w agentik.Write) ([]agentik.Event, *agentik.AgentEvent) {
	t.Helper()
	evs, aev, err := s.Commit(t.Context(), w)
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if len(evs) != len(w.Events) {
		t.Fatalf("Commit returned %d events, want %d", len(evs), len(w.Events))
	}
	return evs, aev
}

// commitN appends n user messages, one write each, and returns them.
func commitN(t *testing.T, s agentik.Store, conv string, n int) []*agentik.Message {
	t.Helper()
	ms := make([]*agentik.Message, n)
	for i := range ms {
		ms[i] = userMsg(conv, fmt.Sprintf("message %d", i+1))
	}
	// Several messages per write keeps long journals quick to build.
	for i := 0; i < n; i += 50 {
		commit(t, s, agentik.Write{ConversationID: conv, Events: events(ms[i:min(i+50, n)]...)})
	}
	return ms
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := agentik.ErrorCode(err); got != code {
		t.Fatalf("error code = %q (%v), want %q", got, err, code)
	}
}

func equal(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got  %s\n want %s", what, dump(got), dump(want))
	}
}

// dump shows a value in its JSON form, the most readable for these types.
// Owner fields are not in it; the tests check them one by one.
func dump(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

func seqs(ms []agentik.Message) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.Seq
	}
	return out
}

func seqRange(from, to int64) []int64 {
	out := []int64{}
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

func cursors(evs []agentik.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Cursor
	}
	return out
}

func strictlyIncreasing(t *testing.T, what string, cs []int64, above int64) {
	t.Helper()
	prev := above
	for _, c := range cs {
		if c <= prev {
			t.Fatalf("%s: cursors %v not strictly increasing above %d", what, cs, above)
		}
		prev = c
	}
}

func lastAgentCursor(t *testing.T, s agentik.Store) int64 {
	t.Helper()
	c, err := s.LastAgentCursor(t.Context())
	if err != nil {
		t.Fatalf("LastAgentCursor: %v", err)
	}
	return c
}

// numbered returns an agent event a write returned, with its cursor. A store
// that numbers agent events after commit (postgres.Store) returns
// them with Cursor 0: the stored copy, found among the agent events after
// the cursor before, carries the number. Otherwise it is ev itself.
func numbered(t *testing.T, s agentik.Store, before int64, ev agentik.AgentEvent) agentik.AgentEvent {
	t.Helper()
	if ev.Cursor != 0 {
		return ev
	}
	id := ev.ConversationID
	if ev.Conversation != nil {
		id = ev.Conversation.ID
	}
	for _, got := range agentEventsOf(t, s, before, id) {
		g := got
		g.Cursor = 0
		if reflect.DeepEqual(g, ev) {
			return got
		}
	}
	t.Fatalf("agent event %s is not among the stored ones", dump(ev))
	return ev
}

// agentEventsOf returns the agent events after the cursor that concern the
// given conversations (others may share the database).
func agentEventsOf(t *testing.T, s agentik.Store, after int64, ids ...string) []agentik.AgentEvent {
	t.Helper()
	all, err := s.AgentEvents(t.Context(), after, 0)
	if err != nil {
		t.Fatalf("AgentEvents: %v", err)
	}
	var out []agentik.AgentEvent
	for _, ev := range all {
		id := ev.ConversationID
		if ev.Conversation != nil {
			id = ev.Conversation.ID
		}
		if slices.Contains(ids, id) {
			out = append(out, ev)
		}
	}
	return out
}

func allMessages(t *testing.T, s agentik.Store, conv string) []agentik.Message {
	t.Helper()
	var out []agentik.Message
	var after int64
	for {
		page, more, err := s.Messages(t.Context(), conv, agentik.MessagesRequest{After: after, Limit: agentik.MaxMessagesLimit})
		if err != nil {
			t.Fatalf("Messages: %v", err)
		}
		out = append(out, page...)
		if !more {
			return out
		}
		after = page[len(page)-1].Seq
	}
}

func allEvents(t *testing.T, s agentik.Store, conv string) []agentik.Event {
	t.Helper()
	evs, err := s.Events(t.Context(), conv, 0, 0)
	if err != nil {
		t.Fatalf("Events: %v", err)
	}
	sameJSON(t, s, conv, 0, 0, evs)
	return evs
}

// sameJSON checks that the store reads events as their wire JSON
// (EventsJSON) exactly as Events reads them: byte for byte the JSON
// json.Marshal makes of each event, with its cursor and type, and decoding
// back to the event.
func sameJSON(t *testing.T, s agentik.Store, conv string, after int64, limit int, want []agentik.Event) {
	t.Helper()
	got, err := s.EventsJSON(t.Context(), conv, after, limit)
	if err != nil {
		t.Fatalf("EventsJSON: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("EventsJSON: %d events, Events: %d", len(got), len(want))
	}
	for i, sh := range got {
		b, err := sh.JSON()
		if err != nil {
			t.Fatalf("EventsJSON %d: %v", i, err)
		}
		w, _ := json.Marshal(want[i])
		if string(b) != string(w) || sh.Cursor != want[i].Cursor || sh.Type != want[i].Type {
			t.Fatalf("EventsJSON %d (cursor %d, type %s):\n got  %s\n want %s", i, sh.Cursor, sh.Type, b, w)
		}
		v, err := sh.Value()
		if err != nil {
			t.Fatalf("EventsJSON %d: Value: %v", i, err)
		}
		equal(t, "EventsJSON value", v, want[i])
	}
}

func getConv(t *testing.T, s agentik.Store, id string) agentik.ConversationRecord {
	t.Helper()
	c, err := s.GetConversation(t.Context(), id)
	if err != nil {
		t.Fatalf("GetConversation: %v", err)
	}
	return c
}

func memory(t *testing.T, s agentik.Store, conv string) []agentik.MemoryEntry {
	t.Helper()
	m, err := s.Memory(t.Context(), conv)
	if err != nil {
		t.Fatalf("Memory: %v", err)
	}
	return m
}

func orders(es []agentik.MemoryEntry) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.Order
	}
	return out
}

func texts(es []agentik.MemoryEntry) string {
	var b strings.Builder
	for _, e := range es {
		b.WriteString(agentik.JoinText(e.Message.Content))
	}
	return b.String()
}
