package storeutil

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/agentik/agentik"
)

func TestMigrations(t *testing.T) {
	ms, err := Migrations(fstest.MapFS{
		"m/0002_b.sql": {Data: []byte("two")},
		"m/0001_a.sql": {Data: []byte("one")},
		"m/notes.txt":  {Data: []byte("ignored")},
	}, "m")
	if err != nil || len(ms) != 2 || ms[0] != (Migration{1, "0001_a.sql", "one"}) || ms[1].Version != 2 {
		t.Fatalf("Migrations = %+v, %v", ms, err)
	}
	for name, fsys := range map[string]fstest.MapFS{
		"gap":      {"m/0001_a.sql": {}, "m/0003_c.sql": {}},
		"no start": {"m/0002_b.sql": {}},
		"bad name": {"m/first.sql": {}},
		"twice":    {"m/0001_a.sql": {}, "m/0001_b.sql": {}},
	} {
		if _, err := Migrations(fsys, "m"); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := TooNew(5, 4); !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("TooNew: %v", err)
	}
}

func TestListPaging(t *testing.T) {
	if ListLimit(0) != DefaultListLimit || ListLimit(-3) != DefaultListLimit || ListLimit(7) != 7 || ListLimit(10000) != MaxListLimit {
		t.Fatal("ListLimit")
	}
	list := []agentik.ConversationRecord{{ID: agentik.NewID()}, {ID: agentik.NewID(), UpdatedAt: agentik.Now()}, {ID: agentik.NewID()}}
	page, next := ListPage(slices.Clone(list), 2)
	if len(page) != 2 || next != agentik.ListToken(list[1].UpdatedAt, list[1].ID) {
		t.Fatalf("ListPage: %d, %q", len(page), next)
	}
	if page, next := ListPage(slices.Clone(list), 3); len(page) != 3 || next != "" {
		t.Fatalf("last page: %d, %q", len(page), next)
	}
}

func TestMessagesPaging(t *testing.T) {
	if _, err := MessagesLimit(agentik.MessagesRequest{Offset: -1}); agentik.ErrorCode(err) != agentik.EInvalid {
		t.Fatalf("negative offset: %v", err)
	}
	if n, _ := MessagesLimit(agentik.MessagesRequest{}); n != agentik.DefaultMessagesLimit {
		t.Fatalf("default limit %d", n)
	}
	if n, _ := MessagesLimit(agentik.MessagesRequest{Limit: 1 << 20}); n != agentik.MaxMessagesLimit {
		t.Fatalf("capped limit %d", n)
	}
	desc := []agentik.Message{{Seq: 9}, {Seq: 8}, {Seq: 7}}
	page, more := MessagesPage(desc, 2, agentik.MessagesRequest{Before: 10})
	if !more || len(page) != 2 || page[0].Seq != 8 || page[1].Seq != 9 {
		t.Fatalf("before page %+v, %v", page, more)
	}
	page, more = MessagesPage([]agentik.Message{{Seq: 1}, {Seq: 2}}, 2, agentik.MessagesRequest{})
	if more || len(page) != 2 || page[0].Seq != 1 {
		t.Fatalf("after page %+v, %v", page, more)
	}
}

func TestDropIndexes(t *testing.T) {
	if got := DropIndexes([]int{10, 11, 12, 13}, []int{0, 2}); !slices.Equal(got, []int{11, 13}) {
		t.Fatalf("DropIndexes = %v", got)
	}
	if got := DropIndexes([]int{1}, nil); !slices.Equal(got, []int{1}) {
		t.Fatalf("DropIndexes(nil) = %v", got)
	}
}

func TestDecode(t *testing.T) {
	if _, err := DecodeEvent(3, []byte(`{"type":"interrupted"}`), "abc"); agentik.ErrorCode(err) != agentik.EInternal {
		t.Fatalf("images without a message: %v", err)
	}
	ev, err := DecodeAgentEvent(4, "alice", []byte(`{"type":"created","conversation":{"id":"x"}}`))
	if err != nil || ev.Cursor != 4 || ev.Owner != "alice" || ev.Conversation.Owner != "alice" {
		t.Fatalf("DecodeAgentEvent = %+v, %v", ev, err)
	}
	if _, err := DecodeMessage([]byte("{")); agentik.ErrorCode(err) != agentik.EInternal {
		t.Fatalf("bad message: %v", err)
	}
}

// TestWireEvent: the stored form of an event with its cursor put first is
// json.Marshal of the event with its cursor; other forms are refused.
func TestWireEvent(t *testing.T) {
	for _, ev := range []agentik.Event{
		{ConversationID: "c", Date: agentik.Now(), Type: agentik.EvInterrupted, ReplyTo: "u", Reason: "user"},
		agentik.MessageEvent(&agentik.Message{ID: "m", ConversationID: "c", Seq: 3, Type: agentik.MsgUser,
			Content: []agentik.Content{agentik.Text("<b> \u2028 ñ \"q\"")}}),
		{},
	} {
		payload, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		ev.Cursor = 42
		want, _ := json.Marshal(ev)
		if got := WireEvent(42, payload); string(got) != string(want) {
			t.Fatalf("WireEvent:\n got  %s\n want %s", got, want)
		}
	}
	for _, bad := range []string{``, `{`, `[]`, `{"cursor":1,"type":"x"}`} {
		if got := WireEvent(1, []byte(bad)); got != nil {
			t.Fatalf("WireEvent(%q) = %s, want nil", bad, got)
		}
	}
	if got := WireEvent(0, []byte(`{"type":"x"}`)); got != nil {
		t.Fatalf("WireEvent with cursor 0 = %s", got)
	}
}

// TestEncodeMessage: a stored message is json.Marshal of its stored form,
// whichever of what the wire does not carry it has, and decodes back.
func TestEncodeMessage(t *testing.T) {
	base := agentik.Message{ID: "m", ConversationID: "c", Seq: 3, Date: agentik.Now(), Type: agentik.MsgUser,
		Content: []agentik.Content{agentik.Text("<b> \u2028 ñ \"q\"")}}
	tools := []agentik.ToolSpec{{Name: "lookup", Parameters: agentik.RawJSON(`{"type":"object"}`)}}
	for _, c := range []struct{ traceParent, name string }{{"", "plain"}, {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "traced"}, {"<&>", "escaped"}} {
		for _, ct := range [][]agentik.ToolSpec{nil, tools} {
			m := base
			m.TraceParent, m.ClientTools = c.traceParent, ct
			got, err := EncodeMessage(&m)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := json.Marshal(storedMessage{Message: &m, ClientTools: m.ClientTools, TraceParent: m.TraceParent})
			if string(got) != string(want) {
				t.Fatalf("%s, %d client tools:\n got  %s\n want %s", c.name, len(ct), got, want)
			}
			back, err := DecodeMessage(got)
			if err != nil || back.TraceParent != m.TraceParent || len(back.ClientTools) != len(ct) || back.ID != m.ID {
				t.Fatalf("%s: decoded %+v, %v", c.name, back, err)
			}
		}
	}
}
