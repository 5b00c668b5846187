package agentik

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// wireEncoder is a type with a hand-written encoder (eventjson.go).
type wireEncoder interface {
	appendJSON(b []byte) ([]byte, bool)
}

// TestWireJSONCoversFields sets every field the wire carries, one at a
// time and at every depth (an event's message, its content parts, its
// tokens), and holds each hand-written encoding to json.Marshal's bytes. A
// field added later that the encoder does not write, or does not decline,
// fails here.
func TestWireJSONCoversFields(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[Event](), reflect.TypeFor[Message](), reflect.TypeFor[MemoryEntry](), reflect.TypeFor[AgentEvent]()} {
		covered := 0
		vs := variants(t, typ)
		for _, v := range vs {
			p := reflect.New(typ)
			p.Elem().Set(v)
			got, ok := p.Interface().(wireEncoder).appendJSON([]byte("prefix"))
			if !bytes.HasPrefix(got, []byte("prefix")) {
				t.Fatalf("%s: the encoder changed what it was appending to: %q", typ, got)
			}
			if !ok {
				if string(got) != "prefix" {
					t.Fatalf("%s: declined, but kept what it wrote: %q", typ, got)
				}
				continue
			}
			covered++
			want, err := json.Marshal(p.Interface())
			if err != nil {
				t.Fatalf("%s: encoded %s, which json.Marshal refuses: %v", typ, got, err)
			}
			if got := got[len("prefix"):]; !bytes.Equal(got, want) {
				t.Errorf("%s:\ngot  %s\nwant %s", typ, got, want)
			}
		}
		if covered == 0 { // what it must take: TestWireJSONTakesTurnShapes
			t.Errorf("%s: the encoder took none of %d shapes", typ, len(vs))
		}
	}
}

// TestWireJSONTakesTurnShapes: the shapes every turn writes do not fall
// back to reflection.
func TestWireJSONTakesTurnShapes(t *testing.T) {
	at := Now()
	user := &Message{ID: NewID(), ConversationID: NewID(), Seq: 1, Date: at, Type: MsgUser, Content: []Content{Text("hello")}}
	answer := &Message{ID: NewID(), ConversationID: user.ConversationID, Seq: 2, Date: at, Type: MsgAssistant,
		Content: []Content{Text("hi")}, Tokens: &TurnTokens{Input: 12, Output: 3}, ReplyTo: user.ID}
	for _, e := range []wireEncoder{
		&Event{ConversationID: user.ConversationID, Date: at, Type: EvUserMessage, Message: user},
		&Event{Cursor: 9, ConversationID: user.ConversationID, Date: at, Type: EvAssistantMessage, Message: answer},
		&Event{ConversationID: user.ConversationID, Date: at, Type: EvAppendText, ReplyTo: user.ID, Text: "hi"},
		&Event{ConversationID: user.ConversationID, Date: at, Type: EvEnd, ReplyTo: user.ID, Tokens: &TurnTokens{Input: 12, Output: 3}},
		user, answer,
		&AgentEvent{Date: at, Type: AgentEvTouched, ConversationID: user.ConversationID, UpdatedAt: at},
		&MemoryEntry{Order: 4, SourceID: answer.ID, ReplyTo: user.ID, Message: ModelMessage{Role: "assistant", Content: []Content{Text("hi")}}},
	} {
		if _, ok := e.appendJSON(nil); !ok {
			t.Errorf("%T %+v fell back to json.Marshal", e, e)
		}
	}
}

// variants returns values of t with, each, one leaf field set (and what
// holds it), to values json.Marshal writes with escapes, signs and
// omitempty in play.
func variants(t *testing.T, typ reflect.Type) []reflect.Value {
	t.Helper()
	one := func(v any) []reflect.Value { return []reflect.Value{reflect.ValueOf(v).Convert(typ)} }
	switch {
	case typ == reflect.TypeFor[Time]():
		return []reflect.Value{reflect.ValueOf(TimeOf(time.UnixMilli(1733097600123))), reflect.ValueOf(Time{})}
	case typ == reflect.TypeFor[RawJSON]():
		return one(RawJSON(`{"a": "<b>"}`))
	}
	var out []reflect.Value
	switch typ.Kind() {
	case reflect.String:
		for _, s := range []string{"x", "<&>\u2028\"é\xff\n"} {
			out = append(out, reflect.ValueOf(s).Convert(typ))
		}
	case reflect.Int, reflect.Int64:
		out = append(out, reflect.ValueOf(7).Convert(typ), reflect.ValueOf(-7).Convert(typ))
	case reflect.Bool:
		out = one(true)
	case reflect.Pointer:
		out = append(out, reflect.New(typ.Elem()))
		for _, e := range variants(t, typ.Elem()) {
			p := reflect.New(typ.Elem())
			p.Elem().Set(e)
			out = append(out, p)
		}
	case reflect.Slice:
		out = append(out, reflect.MakeSlice(typ, 0, 0))
		for _, e := range variants(t, typ.Elem()) {
			s := reflect.MakeSlice(typ, 2, 2)
			s.Index(1).Set(e)
			out = append(out, s)
		}
	case reflect.Map:
		m := reflect.MakeMap(typ)
		m.SetMapIndex(reflect.ValueOf("k<"), reflect.ValueOf("v&"))
		out = append(out, m)
	case reflect.Struct:
		for i := range typ.NumField() {
			f := typ.Field(i)
			if f.Tag.Get("json") == "-" {
				continue
			}
			for _, fv := range variants(t, f.Type) {
				v := reflect.New(typ).Elem()
				v.Field(i).Set(fv)
				out = append(out, v)
			}
		}
	default:
		t.Fatalf("%s: teach variants, and the encoders of eventjson.go, about kind %s", typ, typ.Kind())
	}
	return out
}

// FuzzWireJSON: what the hand-written encoders write is json.Marshal's
// bytes, for the events, messages and memory entries a turn writes.
func FuzzWireJSON(f *testing.F) {
	f.Add("c1", int64(1733097600123), EvAppendText, "u1", "word ", int64(3), uint16(0))
	f.Add("", int64(0), EvEnd, "", "", int64(0), uint16(0xffff))
	f.Add("<&>", int64(-1), "\u2028", "bad\xff", "\"\\\n\b\f\x00é😀", int64(-9), uint16(0x5555))
	f.Fuzz(func(t *testing.T, id string, ms int64, typ, ref, text string, n int64, set uint16) {
		at := TimeOf(time.UnixMilli(ms))
		pick := func(bit uint, s string) string {
			if set&(1<<bit) != 0 {
				return s
			}
			return ""
		}
		var content []Content
		if set&1 != 0 {
			content = []Content{{Type: typ, Text: text, Data: pick(1, ref), MIME: pick(2, id)}, Text(ref)}
		}
		var tokens *TurnTokens
		if set&(1<<3) != 0 {
			tokens = &TurnTokens{Input: n, Output: -n}
		}
		m := &Message{ID: id, ConversationID: ref, Seq: n, Date: at, Type: typ, Content: content,
			Reasoning: pick(4, text), Tokens: tokens, Interrupted: set&(1<<5) != 0, InterruptReason: pick(13, ref), Continued: set&(1<<11) == 0, CallID: pick(6, id),
			Name: pick(7, typ), IsError: set&(1<<8) != 0, Code: pick(9, typ), Details: pick(10, text), ReplyTo: pick(11, ref)}
		e := &Event{ConversationID: id, Date: at, Type: typ, ReplyTo: pick(12, ref), Text: text, Tokens: tokens,
			Reason: pick(13, text), Data: pick(14, ref), MIME: pick(15, typ), Dropped: int(n), CallID: pick(6, ref), Name: pick(7, id)}
		if set&(1<<2) != 0 {
			e.Message = m
			e.Cursor = n
		}
		me := &MemoryEntry{Order: n, SourceID: pick(12, id), ReplyTo: pick(13, ref),
			Message: ModelMessage{Role: typ, Content: content, Reasoning: pick(4, text), CallID: pick(6, id), Name: pick(7, ref), IsError: set&(1<<8) != 0}}
		ae := &AgentEvent{Cursor: n, Date: at, Type: typ, ConversationID: pick(12, id), Title: pick(13, text), Label: pick(14, id), By: pick(15, text)}
		if set&(1<<14) != 0 {
			ae.UpdatedAt = TimeOf(time.UnixMilli(-ms))
		}
		for _, v := range []wireEncoder{e, m, me, ae} {
			got, ok := v.appendJSON(nil)
			if !ok {
				t.Fatalf("declined %+v", v)
			}
			want, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("json.Marshal: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%T\ngot  %s\nwant %s", v, got, want)
			}
		}
	})
}

// BenchmarkWireJSON: a text delta and a message event (what a turn
// publishes and stores), written directly and by json.Marshal
// (go test -run '^$' -bench WireJSON -benchmem .).
func BenchmarkWireJSON(b *testing.B) {
	at := Now()
	m := &Message{ID: NewID(), ConversationID: NewID(), Seq: 12, Date: at, Type: MsgAssistant,
		Content: []Content{Text("The quick brown fox jumps over the lazy dog, and then it answers in twenty words or so.")},
		Tokens:  &TurnTokens{Input: 120, Output: 21}, ReplyTo: NewID()}
	for _, c := range []struct {
		name string
		e    *Event
	}{
		{"delta", &Event{ConversationID: m.ConversationID, Date: at, Type: EvAppendText, ReplyTo: m.ReplyTo, Text: "word "}},
		{"message", &Event{Cursor: 41, ConversationID: m.ConversationID, Date: at, Type: EvAssistantMessage, Message: m}},
	} {
		b.Run(c.name+"/direct", func(b *testing.B) {
			for b.Loop() {
				if _, err := MarshalEvent(c.e); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/json.Marshal", func(b *testing.B) {
			for b.Loop() {
				if _, err := json.Marshal(c.e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
