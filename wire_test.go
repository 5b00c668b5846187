package agentik_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
)

var date = agentik.TimeOf(time.Date(2026, 11, 30, 12, 1, 2, 345_678_000, time.FixedZone("X", 3600)))

// roundTrip marshals v, checks the JSON against want, and decodes it back.
func roundTrip[T any](t *testing.T, v T, want string) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Errorf("json:\n got %s\nwant %s", b, want)
	}
	var back T
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, v) {
		t.Errorf("round trip:\n got %+v\nwant %+v", back, v)
	}
}

func TestTimeWireForm(t *testing.T) {
	roundTrip(t, date, `"2026-11-30T11:01:02.345Z"`)
	var got agentik.Time
	if err := json.Unmarshal([]byte(`"2026-11-30T12:01:02.345678+01:00"`), &got); err != nil {
		t.Fatal(err)
	}
	if !got.Equal(date.Time) {
		t.Fatalf("got %v want %v", got, date)
	}
	for _, bad := range []string{`12`, `"yesterday"`, `"2026-13-01T00:00:00Z"`} {
		if err := json.Unmarshal([]byte(bad), &got); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

func TestContentWireForm(t *testing.T) {
	roundTrip(t, agentik.Text("hi"), `{"type":"text","text":"hi"}`)
	roundTrip(t, agentik.Image("image/png", []byte{1, 2, 3}), `{"type":"image","data":"AQID","mime":"image/png"}`)
}

func TestMessagesWireForm(t *testing.T) {
	tok := &agentik.TurnTokens{Input: 10, Output: 3}
	cases := []struct {
		name string
		m    agentik.Message
		want string
	}{
		{"user", agentik.Message{ID: "m1", ConversationID: "c1", Seq: 1, Date: date, Type: agentik.MsgUser,
			Content: []agentik.Content{agentik.Text("hello")},
			Context: &agentik.MessageContext{Origin: &agentik.Origin{Channel: "rest", User: "u", DisplayName: "U"}, Metadata: map[string]string{"k": "v"}}},
			`{"id":"m1","conversation_id":"c1","seq":1,"date":"2026-11-30T11:01:02.345Z","type":"user_message","content":[{"type":"text","text":"hello"}],"context":{"origin":{"channel":"rest","user":"u","display_name":"U"},"metadata":{"k":"v"}}}`},
		{"assistant", agentik.Message{ID: "m2", ConversationID: "c1", Seq: 2, Date: date, Type: agentik.MsgAssistant,
			Content: []agentik.Content{agentik.Text("hi")}, Reasoning: "think", Tokens: tok, Interrupted: true, ReplyTo: "m1"},
			`{"id":"m2","conversation_id":"c1","seq":2,"date":"2026-11-30T11:01:02.345Z","type":"assistant_message","content":[{"type":"text","text":"hi"}],"reasoning":"think","tokens":{"input":10,"output":3},"interrupted":true,"reply_to":"m1"}`},
		{"tool_call", agentik.Message{ID: "m3", ConversationID: "c1", Seq: 3, Date: date, Type: agentik.MsgToolCall,
			CallID: "call_1", Name: "current_time", Arguments: agentik.RawJSON(`{"timezone":"UTC"}`), ReplyTo: "m1"},
			`{"id":"m3","conversation_id":"c1","seq":3,"date":"2026-11-30T11:01:02.345Z","type":"tool_call","call_id":"call_1","name":"current_time","arguments":{"timezone":"UTC"},"reply_to":"m1"}`},
		{"tool_result", agentik.Message{ID: "m4", ConversationID: "c1", Seq: 4, Date: date, Type: agentik.MsgToolResult,
			CallID: "call_1", Name: "current_time", Content: []agentik.Content{agentik.Text("now")}, IsError: true, ReplyTo: "m1"},
			`{"id":"m4","conversation_id":"c1","seq":4,"date":"2026-11-30T11:01:02.345Z","type":"tool_result","content":[{"type":"text","text":"now"}],"call_id":"call_1","name":"current_time","is_error":true,"reply_to":"m1"}`},
		{"error", agentik.Message{ID: "m5", ConversationID: "c1", Seq: 5, Date: date, Type: agentik.MsgError,
			Code: "llm_error", Details: "boom", ReplyTo: "m1"},
			`{"id":"m5","conversation_id":"c1","seq":5,"date":"2026-11-30T11:01:02.345Z","type":"error","code":"llm_error","details":"boom","reply_to":"m1"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { roundTrip(t, tc.m, tc.want) })
	}
}

func TestEventsWireForm(t *testing.T) {
	m := &agentik.Message{ID: "m4", ConversationID: "c1", Seq: 4, Date: date, Type: agentik.MsgToolResult, CallID: "x", Name: "t",
		Content: []agentik.Content{agentik.Text("bad")}, IsError: true, ReplyTo: "m1"}
	ev := agentik.MessageEvent(m)
	ev.Cursor = 42
	if ev.Type != agentik.EvToolFailed {
		t.Fatalf("a failed tool result is announced as %q", ev.Type)
	}
	roundTrip(t, ev, `{"cursor":42,"conversation_id":"c1","date":"2026-11-30T11:01:02.345Z","type":"tool_failed","message":{"id":"m4","conversation_id":"c1","seq":4,"date":"2026-11-30T11:01:02.345Z","type":"tool_result","content":[{"type":"text","text":"bad"}],"call_id":"x","name":"t","is_error":true,"reply_to":"m1"}}`)

	cases := []struct {
		ev   agentik.Event
		want string
	}{
		{agentik.Event{Cursor: 7, ConversationID: "c1", Date: date, Type: agentik.EvInterrupted, ReplyTo: "m1", Reason: agentik.ReasonUser},
			`{"cursor":7,"conversation_id":"c1","date":"2026-11-30T11:01:02.345Z","type":"interrupted","reply_to":"m1","reason":"user"}`},
		{agentik.Event{Cursor: 8, ConversationID: "c1", Date: date, Type: agentik.EvCompactionTriggered, Dropped: 12, SummaryTokens: 300,
			Compaction: &agentik.Compaction{FromSeq: 1, ToSeq: 20, Summary: "s", Model: "m", TokensBefore: 9000, TokensAfter: 800}},
			`{"cursor":8,"conversation_id":"c1","date":"2026-11-30T11:01:02.345Z","type":"compaction_triggered","dropped":12,"summary_tokens":300,"compaction":{"from_seq":1,"to_seq":20,"summary":"s","model":"m","tokens_before":9000,"tokens_after":800}}`},
		{agentik.Event{ConversationID: "c1", Date: date, Type: agentik.EvWorking, ReplyTo: "m1"},
			`{"conversation_id":"c1","date":"2026-11-30T11:01:02.345Z","type":"working","reply_to":"m1"}`},
		{agentik.Event{ConversationID: "c1", Date: date, Type: agentik.EvAppendText, Text: "Hel"},
			`{"conversation_id":"c1","date":"2026-11-30T11:01:02.345Z","type":"append_text","text":"Hel"}`},
		{agentik.Event{ConversationID: "c1", Date: date, Type: agentik.EvAppendImage, Data: "AQID", MIME: "image/png"},
			`{"conversation_id":"c1","date":"2026-11-30T11:01:02.345Z","type":"append_image","data":"AQID","mime":"image/png"}`},
		{agentik.Event{ConversationID: "c1", Date: date, Type: agentik.EvEnd, ReplyTo: "m1", Reason: agentik.EndCompleted, Tokens: &agentik.TurnTokens{Input: 1, Output: 2}},
			`{"conversation_id":"c1","date":"2026-11-30T11:01:02.345Z","type":"end","reply_to":"m1","reason":"completed","tokens":{"input":1,"output":2}}`},
		{agentik.Event{ConversationID: "c1", Date: date, Type: agentik.EvStartResponse},
			`{"conversation_id":"c1","date":"2026-11-30T11:01:02.345Z","type":"start_response"}`},
	}
	for _, tc := range cases {
		t.Run(tc.ev.Type, func(t *testing.T) { roundTrip(t, tc.ev, tc.want) })
	}
	for _, typ := range []string{agentik.EvUserMessage, agentik.EvInterrupted, agentik.EvCompactionTriggered, agentik.EvConversationClosing} {
		if !agentik.Durable(typ) {
			t.Errorf("%s should be durable", typ)
		}
	}
	for _, typ := range []string{agentik.EvWorking, agentik.EvAppendText, agentik.EvEnd, agentik.EvStartReasoning} {
		if agentik.Durable(typ) {
			t.Errorf("%s should be online", typ)
		}
	}
}

func TestAgentAndConversationWireForm(t *testing.T) {
	info := agentik.ConversationInfo{ID: "c1", Temporal: false, CreatedAt: date, UpdatedAt: date, Owner: "alice"}
	b, _ := json.Marshal(info)
	want := `{"id":"c1","temporal":false,"created_at":"2026-11-30T11:01:02.345Z","updated_at":"2026-11-30T11:01:02.345Z","supports_image_input":false,"supports_image_output":false,"working":false}`
	if string(b) != want {
		t.Fatalf("conversation:\n got %s\nwant %s", b, want)
	}
	if strings.Contains(string(b), "alice") {
		t.Fatal("owner leaked onto the wire")
	}
	info.Owner = ""
	roundTrip(t, info, want)

	roundTrip(t, agentik.AgentEvent{Cursor: 3, Date: date, Type: agentik.AgentEvRenamed, ConversationID: "c1", Title: "T"},
		`{"cursor":3,"date":"2026-11-30T11:01:02.345Z","type":"renamed","conversation_id":"c1","title":"T"}`)
	roundTrip(t, agentik.AgentEvent{Cursor: 4, Date: date, Type: agentik.AgentEvTouched, ConversationID: "c1", UpdatedAt: date},
		`{"cursor":4,"date":"2026-11-30T11:01:02.345Z","type":"touched","conversation_id":"c1","updated_at":"2026-11-30T11:01:02.345Z"}`)
	roundTrip(t, agentik.AgentInfo{ID: "a", Name: "A", Model: "m", Capabilities: agentik.Capabilities{Streaming: true}},
		`{"id":"a","name":"A","model":"m","capabilities":{"image_input":false,"image_output":false,"streaming":true}}`)
	roundTrip(t, agentik.SendRequest{Content: []agentik.Content{agentik.Text("x")}, IfBusy: agentik.BusyReject},
		`{"content":[{"type":"text","text":"x"}],"if_busy":"reject"}`)
}

func TestValidateContent(t *testing.T) {
	cases := []struct {
		name  string
		parts []agentik.Content
		ok    bool
	}{
		{"text", []agentik.Content{agentik.Text("a")}, true},
		{"image", []agentik.Content{agentik.Image("image/webp", []byte("x"))}, true},
		{"empty list", nil, false},
		{"empty text", []agentik.Content{{Type: "text"}}, false},
		{"no type", []agentik.Content{{Text: "a"}}, false},
		{"unknown type", []agentik.Content{{Type: "audio", Data: "AA=="}}, false},
		{"bad base64", []agentik.Content{{Type: "image", MIME: "image/png", Data: "%%%"}}, false},
		{"bad mime", []agentik.Content{{Type: "image", MIME: "image/svg+xml", Data: "AA=="}}, false},
		{"empty image", []agentik.Content{{Type: "image", MIME: "image/png"}}, false},
	}
	for _, tc := range cases {
		err := agentik.ValidateContent(tc.parts)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err=%v", tc.name, err)
		}
		if err != nil && agentik.ErrorCode(err) != agentik.EInvalid {
			t.Errorf("%s: code %q, want invalid", tc.name, agentik.ErrorCode(err))
		}
	}
}

func TestErrorsAndTokens(t *testing.T) {
	base := agentik.Errorf(agentik.ENotFound, "conversation not found")
	wrapped := &wrapErr{base}
	if agentik.ErrorCode(wrapped) != agentik.ENotFound || agentik.ErrorMessage(wrapped) != "conversation not found" {
		t.Fatalf("code/message not found through wrapping")
	}
	plain := errString("secret detail")
	if agentik.ErrorCode(plain) != agentik.EInternal || strings.Contains(agentik.ErrorMessage(plain), "secret") {
		t.Fatal("a plain error must be internal and leak nothing")
	}
	if agentik.ErrorCode(nil) != "" {
		t.Fatal("nil error has a code")
	}
	now := agentik.Now()
	tok := agentik.ListToken(now, "0193a1c2-0000-7000-8000-000000000001")
	at, id, err := agentik.ParseListToken(tok)
	if err != nil || !at.Equal(now.Time) || id != "0193a1c2-0000-7000-8000-000000000001" {
		t.Fatalf("list token round trip: %v %v %v", at, id, err)
	}
	for _, bad := range []string{"!!", "eA", agentik.ListToken(now, "../etc")} {
		if _, _, err := agentik.ParseListToken(bad); agentik.ErrorCode(err) != agentik.EInvalid {
			t.Errorf("token %q: %v", bad, err)
		}
	}
	if !agentik.ValidID(agentik.NewID()) || agentik.ValidID("../../x") {
		t.Fatal("ValidID")
	}
}

type wrapErr struct{ err error }

func (w *wrapErr) Error() string { return "op: " + w.err.Error() }
func (w *wrapErr) Unwrap() error { return w.err }

type errString string

func (e errString) Error() string { return string(e) }

func TestCanonicalImages(t *testing.T) {
	img := agentik.Image("image/png", []byte("\x89PNG\r\n\x1a\n0123456789"))
	messy := img
	messy.Data = img.Data[:8] + "\n" + img.Data[8:]
	parts := []agentik.Content{agentik.Text("x"), messy}
	got := agentik.CanonicalImages(parts)
	if got[1].Data != img.Data {
		t.Fatalf("not canonical: %q", got[1].Data)
	}
	if parts[1].Data != messy.Data {
		t.Fatal("the caller's slice was changed")
	}
	clean := []agentik.Content{img}
	if out := agentik.CanonicalImages(clean); &out[0] != &clean[0] {
		t.Fatal("a canonical slice was copied")
	}
}
