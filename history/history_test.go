package history

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/agentik/agentik"
)

// Journal messages. Turns are named by the id of their user message.
func user(id, text string) agentik.Message {
	return agentik.Message{ID: id, Type: agentik.MsgUser, Content: []agentik.Content{agentik.Text(text)}}
}

func answer(id, turn, text string) agentik.Message {
	return agentik.Message{ID: id, Type: agentik.MsgAssistant, ReplyTo: turn, Content: []agentik.Content{agentik.Text(text)}}
}

func call(id, turn, callID string) agentik.Message {
	return agentik.Message{ID: id, Type: agentik.MsgToolCall, ReplyTo: turn, CallID: callID, Name: "f"}
}

func result(id, turn, callID, text string) agentik.Message {
	return agentik.Message{ID: id, Type: agentik.MsgToolResult, ReplyTo: turn, CallID: callID, Content: []agentik.Content{agentik.Text(text)}}
}

func failure(id, turn string) agentik.Message {
	return agentik.Message{ID: id, Type: agentik.MsgError, ReplyTo: turn, Code: agentik.EUnavailable}
}

// withAliases records client ids in a stored message's metadata, as a front
// door that keeps its clients' ids does.
func withAliases(m agentik.Message, ids ...string) agentik.Message {
	b, _ := json.Marshal(ids)
	m.Context = &agentik.MessageContext{Metadata: map[string]string{"ids": string(b)}}
	return m
}

func aliases(m agentik.Message) []string {
	if m.Context == nil {
		return nil
	}
	var ids []string
	_ = json.Unmarshal([]byte(m.Context.Metadata["ids"]), &ids)
	return ids
}

// Sent messages.
func su(id, text string) Message { return Message{Role: RoleUser, ID: id, Text: text} }
func sa(id, text string, calls ...string) Message {
	return Message{Role: RoleAssistant, ID: id, Text: text, Calls: calls}
}
func st(id, callID string) Message {
	return Message{Role: RoleTool, ID: id, CallID: callID, Text: "out"}
}
func ss(id string) Message { return Message{Role: "system", ID: id, Text: "be brief"} }

func TestReconcile(t *testing.T) {
	chat := []agentik.Message{user("u1", "hi"), answer("a1", "u1", "hello"), user("u2", "how are you"), answer("a2", "u2", "fine")}
	tools := []agentik.Message{user("u1", "weather?"), answer("a1", "u1", "let me look"), call("k1", "u1", "c1"), call("k2", "u1", "c2")}
	for _, c := range []struct {
		name    string
		journal []agentik.Message
		sent    []Message
		opts    Options
		want    Result
	}{
		{name: "empty", want: Result{}},
		{name: "nothing sent to a journal", journal: chat,
			want: Result{Match: Match{}}},
		{name: "first message, id", sent: []Message{su("x", "hi")},
			want: Result{New: []int{0}}},
		{name: "first message, no id", sent: []Message{su("", "hi")},
			want: Result{New: []int{0}}},
		{name: "same history, ids", journal: chat, sent: []Message{su("u1", "hi"), sa("a1", "hello"), su("u2", "how are you"), sa("a2", "fine")},
			want: Result{Match: Match{Sent: 4, Journal: 4}}},
		{name: "same history, content", journal: chat, sent: []Message{su("", "hi"), sa("", "hello"), su("", "how are you"), sa("", "fine")},
			want: Result{Match: Match{Sent: 4, Journal: 4}}},
		{name: "longer, ids", journal: chat[:2], sent: []Message{su("u1", "hi"), sa("a1", "hello"), su("x", "how are you")},
			want: Result{New: []int{2}, Match: Match{Sent: 2, Journal: 2}}},
		{name: "longer, content", journal: chat[:2], sent: []Message{su("", "hi"), sa("", "hello"), su("", "how are you"), su("", "and?")},
			want: Result{New: []int{2, 3}, Match: Match{Sent: 2, Journal: 2}}},
		{name: "streamed answers carry the client's own ids", journal: chat[:2], sent: []Message{su("u1", "hi"), sa("random", "hello"), su("x", "more")},
			want: Result{New: []int{2}, Match: Match{Sent: 2, Journal: 2}}},
		{name: "shorter, ends at a user message: behind", journal: chat, sent: []Message{su("u1", "hi"), sa("a1", "hello"), su("u2", "how are you")},
			want: Result{Behind: true, Match: Match{Sent: 3, Journal: 3}}},
		{name: "shorter, content: behind", journal: chat, sent: []Message{su("", "hi"), sa("", "hello"), su("", "how are you")},
			want: Result{Behind: true, Match: Match{Sent: 3, Journal: 3}}},
		{name: "shorter, the first message only", journal: chat, sent: []Message{su("u1", "hi")},
			want: Result{Behind: true, Match: Match{Sent: 1, Journal: 1}}},
		{name: "shorter, ends at an answer", journal: chat, sent: []Message{su("u1", "hi"), sa("a1", "hello")},
			want: Result{Match: Match{Sent: 2, Journal: 2}}},
		{name: "only an error after the last user message: not behind", journal: []agentik.Message{user("u1", "hi"), failure("e1", "u1")}, sent: []Message{su("u1", "hi")},
			want: Result{Match: Match{Sent: 1, Journal: 1}}},
		{name: "errors are not part of the path", journal: []agentik.Message{user("u1", "hi"), failure("e1", "u1"), user("u2", "again"), answer("a2", "u2", "ok")},
			sent: []Message{su("", "hi"), su("", "again"), sa("", "ok"), su("", "more")},
			want: Result{New: []int{3}, Match: Match{Sent: 3, Journal: 4}}},
		{name: "a known id found anywhere is behind, as ids say", journal: chat, sent: []Message{su("u2", "how are you")},
			want: Result{Behind: true, Match: Match{Sent: 0, Journal: 0, Diverges: true}}},
		{name: "edited user message, ids: diverges", journal: chat, sent: []Message{su("u1", "hi"), sa("a1", "hello"), su("x", "how old are you")},
			want: Result{New: []int{2}, Match: Match{Sent: 2, Journal: 2, Diverges: true}}},
		{name: "edited user message, content: diverges", journal: chat, sent: []Message{su("", "hi"), sa("", "hello"), su("", "how old are you")},
			want: Result{New: []int{2}, Match: Match{Sent: 2, Journal: 2, Diverges: true}}},
		{name: "an edit with the same text is still a new message when ids say so", journal: chat, sent: []Message{su("u1", "hi"), sa("a1", "hello"), su("x", "how are you")},
			want: Result{New: []int{2}, Match: Match{Sent: 2, Journal: 2, Diverges: true}}},
		{name: "diverges at the first message", journal: chat, sent: []Message{su("", "bye")},
			want: Result{New: []int{0}, Match: Match{Diverges: true}}},
		{name: "edited answer: diverges there", journal: chat, sent: []Message{su("", "hi"), sa("", "HELLO"), su("", "how are you")},
			want: Result{New: []int{2}, Match: Match{Sent: 1, Journal: 1, Diverges: true}}},
		{name: "a known id in the wrong place diverges", journal: chat, sent: []Message{su("u1", "hi"), sa("a2", "fine")},
			want: Result{Match: Match{Sent: 1, Journal: 1, Diverges: true}}},
		{name: "a known id is held wherever it stands", journal: chat, sent: []Message{su("u2", "how are you"), su("u1", "hi")},
			want: Result{Behind: true, Match: Match{Diverges: true}}},
		{name: "journal ids of any kind are known", journal: chat, sent: []Message{su("a1", "?")},
			want: Result{Match: Match{Diverges: true}}},
		{name: "system and developer messages are passed over", journal: chat[:2], sent: []Message{ss(""), su("", "hi"), ss("s2"), sa("", "hello"), ss("")},
			want: Result{Match: Match{Sent: 5, Journal: 2}}},
		{name: "tool results for waiting calls", journal: tools,
			sent: []Message{su("u1", "weather?"), sa("x", "let me look", "c1", "c2"), st("t1", "c1"), st("t2", "c2")},
			want: Result{Results: []int{2, 3}, Match: Match{Sent: 2, Journal: 4}}},
		{name: "tool results, content", journal: tools,
			sent: []Message{su("", "weather?"), sa("", "let me look", "c1", "c2"), st("", "c2")},
			want: Result{Results: []int{2}, Match: Match{Sent: 2, Journal: 4}}},
		{name: "the first tool message for a call counts", journal: tools,
			sent: []Message{st("t1", "c1"), st("t2", "c1"), st("t3", "c9")},
			want: Result{Results: []int{0}, Match: Match{Diverges: true}}},
		{name: "a call with a result waits no more", journal: append(tools[:4:4], result("r1", "u1", "c1", "sun")),
			sent: []Message{su("u1", "weather?"), sa("x", "let me look", "c1", "c2"), st("r1", "c1"), st("t2", "c2")},
			want: Result{Results: []int{3}, Match: Match{Sent: 3, Journal: 5}}},
		{name: "different calls: diverges", journal: tools,
			sent: []Message{su("u1", "weather?"), sa("x", "let me look", "c1"), st("t1", "c1")},
			want: Result{Results: []int{2}, Match: Match{Sent: 1, Journal: 1, Diverges: true}}},
		{name: "calls without text make their own assistant message", journal: []agentik.Message{user("u1", "go"), call("k1", "u1", "c1"), result("r1", "u1", "c1", "done"), call("k2", "u1", "c2")},
			sent: []Message{su("u1", "go"), sa("k1", "", "c1"), st("r1", "c1"), sa("zz", "", "c2"), st("t", "c2")},
			want: Result{Results: []int{4}, Match: Match{Sent: 4, Journal: 4}}},
		{name: "a user message abandons waiting calls", journal: append(tools[:4:4], user("u2", "never mind")),
			sent: []Message{st("t1", "c1")},
			want: Result{Match: Match{Diverges: true}}},
		{name: "aliases are known ids", journal: []agentik.Message{withAliases(user("j1", "hi"), "client-1"), answer("a1", "j1", "hello")},
			opts: Options{IDs: aliases}, sent: []Message{su("client-1", "hi"), sa("c-a", "hello"), su("client-2", "bye")},
			want: Result{New: []int{2}, Match: Match{Sent: 2, Journal: 2}}},
		{name: "aliases: behind", journal: []agentik.Message{withAliases(user("j1", "hi"), "client-1"), answer("a1", "j1", "hello")},
			opts: Options{IDs: aliases}, sent: []Message{su("client-1", "hi")},
			want: Result{Behind: true, Match: Match{Sent: 1, Journal: 1}}},
		{name: "aliases unknown without the option", journal: []agentik.Message{withAliases(user("j1", "hi"), "client-1"), answer("a1", "j1", "hello")},
			sent: []Message{su("client-1", "hi")},
			want: Result{New: []int{0}, Match: Match{Diverges: true}}},
		{name: "one stored message for several client messages", journal: []agentik.Message{withAliases(user("j1", "ab"), "x", "y"), answer("a1", "j1", "ok")},
			opts: Options{IDs: aliases}, sent: []Message{su("x", "a"), su("y", "b"), sa("r", "ok"), su("z", "c")},
			want: Result{New: []int{3}, Match: Match{Sent: 3, Journal: 2}}},
		{name: "several client messages without the answer: behind", journal: []agentik.Message{withAliases(user("j1", "ab"), "x", "y"), answer("a1", "j1", "ok")},
			opts: Options{IDs: aliases}, sent: []Message{su("x", "a"), su("y", "b")},
			want: Result{Behind: true, Match: Match{Sent: 2, Journal: 1}}},
		{name: "several client messages, a new one before the answer diverges", journal: []agentik.Message{withAliases(user("j1", "ab"), "x", "y"), answer("a1", "j1", "ok")},
			opts: Options{IDs: aliases}, sent: []Message{su("x", "a"), su("y", "b"), su("z", "c")},
			want: Result{New: []int{2}, Match: Match{Sent: 2, Journal: 1, Diverges: true}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Reconcile(c.journal, c.sent, c.opts)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestWaiting(t *testing.T) {
	interrupted := answer("a1", "u1", "cut")
	interrupted.Interrupted = true
	for _, c := range []struct {
		name    string
		journal []agentik.Message
		want    map[string]bool
	}{
		{name: "empty"},
		{name: "no calls", journal: []agentik.Message{user("u1", "hi"), answer("a1", "u1", "hello")}},
		{name: "last round", journal: []agentik.Message{user("u1", "go"), call("k1", "u1", "c1"), call("k2", "u1", "c2")},
			want: map[string]bool{"c1": true, "c2": true}},
		{name: "only the last round", journal: []agentik.Message{user("u1", "go"), call("k1", "u1", "c1"), result("r1", "u1", "c1", "x"), call("k2", "u1", "c2")},
			want: map[string]bool{"c2": true}},
		{name: "results answer calls", journal: []agentik.Message{user("u1", "go"), call("k1", "u1", "c1"), call("k2", "u1", "c2"), result("r2", "u1", "c2", "x")},
			want: map[string]bool{"c1": true}},
		{name: "all answered", journal: []agentik.Message{user("u1", "go"), call("k1", "u1", "c1"), result("r1", "u1", "c1", "x")},
			want: map[string]bool{}},
		{name: "a user message abandons the round", journal: []agentik.Message{user("u1", "go"), call("k1", "u1", "c1"), user("u2", "stop")}},
		{name: "an answer closes the turn", journal: []agentik.Message{user("u1", "go"), call("k1", "u1", "c1"), answer("a1", "u1", "done")}},
		{name: "an error closes the turn", journal: []agentik.Message{user("u1", "go"), call("k1", "u1", "c1"), failure("e1", "u1")}},
		{name: "an interrupted answer does not", journal: []agentik.Message{user("u1", "go"), call("k1", "u1", "c1"), interrupted},
			want: map[string]bool{"c1": true}},
		{name: "another turn's answer does not", journal: []agentik.Message{user("u1", "go"), call("k1", "u1", "c1"), answer("a0", "u0", "late")},
			want: map[string]bool{"c1": true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Waiting(c.journal); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

// FuzzReconcile: for any journal and any resent history, Reconcile keeps
// its contract (indexes in range and of the right roles, a match within
// both histories), and a client holding exactly what the journal shows is
// found in step with it, with or without ids.
func FuzzReconcile(f *testing.F) {
	f.Add([]byte{0, 1, 0, 1}, []byte{0, 1, 2, 3})
	f.Add([]byte{0, 2, 2, 3, 4, 0}, []byte{7, 9, 11, 13, 15})
	f.Add([]byte{0, 1, 0, 4, 0, 2, 3}, []byte{})
	f.Add([]byte{}, []byte{0, 0, 0})
	f.Fuzz(func(t *testing.T, jb, sb []byte) {
		journal := journalOf(jb)
		sent := sentOf(sb, journal)
		checkResult(t, journal, sent, Reconcile(journal, sent, Options{}))

		for _, withIDs := range []bool{true, false} {
			copy := clientCopy(journal, withIDs)
			r := Reconcile(journal, copy, Options{})
			end := 0
			if v := viewOf(journal, noIDs); len(v) > 0 {
				end = v[len(v)-1].end
			}
			if r.Match != (Match{Sent: len(copy), Journal: end}) || len(r.New) > 0 || r.Behind {
				t.Fatalf("ids %v: the journal's own copy: %+v (end %d)\njournal %v\ncopy %v", withIDs, r, end, journal, copy)
			}
			next := append(copy, su("", "next"))
			if withIDs {
				next[len(next)-1].ID = "new"
			}
			r = Reconcile(journal, next, Options{})
			if !reflect.DeepEqual(r.New, []int{len(copy)}) || r.Match.Sent != len(copy) || r.Match.Diverges || r.Behind {
				t.Fatalf("ids %v: one new message: %+v", withIDs, r)
			}
		}
	})
}

func noIDs(agentik.Message) []string { return nil }

func checkResult(t *testing.T, journal []agentik.Message, sent []Message, r Result) {
	t.Helper()
	last := -1
	for _, i := range r.New {
		if i <= last || i >= len(sent) || sent[i].Role != RoleUser {
			t.Fatalf("New %v for %v", r.New, sent)
		}
		last = i
	}
	last = -1
	waiting := Waiting(journal)
	calls := map[string]bool{}
	for _, i := range r.Results {
		if i <= last || i >= len(sent) || sent[i].Role != RoleTool || !waiting[sent[i].CallID] || calls[sent[i].CallID] {
			t.Fatalf("Results %v for %v", r.Results, sent)
		}
		calls[sent[i].CallID] = true
		last = i
	}
	m := r.Match
	if m.Sent < 0 || m.Sent > len(sent) || m.Journal < 0 || m.Journal > len(journal) || m.Diverges && m.Sent == len(sent) {
		t.Fatalf("Match %+v for %d sent, %d stored", m, len(sent), len(journal))
	}
	if r.Behind && (len(sent) == 0 || sent[len(sent)-1].Role != RoleUser) {
		t.Fatalf("Behind after %v", sent)
	}
}

var texts = []string{"a", "b", ""}

// journalOf makes a journal from bytes: each byte a message of a kind and
// content it chooses, in turns opened by its user messages.
func journalOf(b []byte) []agentik.Message {
	var out []agentik.Message
	turn, calls := "", 0
	for i, x := range b {
		id := fmt.Sprintf("m%d", i)
		text := texts[int(x/5)%len(texts)]
		switch x % 5 {
		case 0:
			out = append(out, user(id, text))
			turn = id
		case 1:
			m := answer(id, turn, text)
			m.Interrupted = x&0x80 != 0
			out = append(out, m)
		case 2:
			calls++
			out = append(out, call(id, turn, fmt.Sprintf("c%d", calls)))
		case 3:
			out = append(out, result(id, turn, fmt.Sprintf("c%d", int(x/5)%(calls+1)), text))
		case 4:
			out = append(out, failure(id, turn))
		}
	}
	return out
}

// sentOf makes a resent history from bytes: roles, ids (none, the
// journal's, new ones), texts and call ids all chosen by the bytes.
func sentOf(b []byte, journal []agentik.Message) []Message {
	var out []Message
	for _, x := range b {
		m := Message{Text: texts[int(x/4)%len(texts)]}
		switch x % 4 {
		case 0:
			m.Role = RoleUser
		case 1:
			m.Role = RoleAssistant
			if x&0x40 != 0 {
				m.Calls = []string{fmt.Sprintf("c%d", x%3)}
			}
		case 2:
			m.Role, m.CallID = RoleTool, fmt.Sprintf("c%d", x%5)
		case 3:
			m.Role = "system"
		}
		switch {
		case x&0x80 == 0:
		case len(journal) > 0 && x&0x20 != 0:
			m.ID = journal[int(x)%len(journal)].ID
		default:
			m.ID = fmt.Sprintf("n%d", x)
		}
		out = append(out, m)
	}
	return out
}

// clientCopy is the history a client holds after being shown the journal.
func clientCopy(journal []agentik.Message, withIDs bool) []Message {
	var out []Message
	for _, e := range viewOf(journal, noIDs) {
		m := Message{Role: e.role, Text: e.text, CallID: e.callID, Calls: e.calls}
		if withIDs && len(e.ids) > 0 {
			m.ID = e.ids[0]
		}
		out = append(out, m)
	}
	return out
}
