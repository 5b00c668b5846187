package agentik

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// TestSimpleJSONCoversEvent: setting any field the fast encoder does not
// write makes it decline, so a field added to Event later cannot be
// dropped from the wire silently.
func TestSimpleJSONCoversEvent(t *testing.T) {
	written := map[string]bool{"ConversationID": true, "Date": true, "Type": true, "ReplyTo": true, "Text": true}
	typ := reflect.TypeFor[Event]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if written[f.Name] {
			continue
		}
		var e Event
		v := reflect.ValueOf(&e).Elem().Field(i)
		switch v.Kind() {
		case reflect.String:
			v.SetString("x")
		case reflect.Int, reflect.Int64:
			v.SetInt(1)
		case reflect.Pointer:
			v.Set(reflect.New(f.Type.Elem()))
		case reflect.Slice:
			v.Set(reflect.ValueOf([]byte("1")).Convert(f.Type))
		case reflect.Struct: // Time
			v.Set(reflect.ValueOf(Now()))
		default:
			t.Fatalf("field %s of kind %s: teach this test, and appendSimpleJSON, about it", f.Name, v.Kind())
		}
		if _, ok := e.appendSimpleJSON(nil); ok {
			t.Errorf("appendSimpleJSON writes an event with %s set, which it does not encode", f.Name)
		}
	}
}

// FuzzSimpleJSON: what the fast encoder writes is json.Marshal's bytes.
func FuzzSimpleJSON(f *testing.F) {
	f.Add("c1", int64(1733097600123), EvAppendText, "u1", "word ")
	f.Add("", int64(0), EvEnd, "", "")
	f.Add("<&>", int64(-1), "\u2028", "bad\xff", "\"\\\n\b\f\x00é😀")
	f.Fuzz(func(t *testing.T, conv string, ms int64, typ, replyTo, text string) {
		e := Event{ConversationID: conv, Date: TimeOf(time.UnixMilli(ms)), Type: typ, ReplyTo: replyTo, Text: text}
		got, ok := e.appendSimpleJSON(nil)
		if !ok {
			t.Fatalf("declined %+v", e)
		}
		want, err := json.Marshal(e)
		if err != nil {
			return // a date json.Marshal refuses (none today)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	})
}

// BenchmarkDeltaJSON: a text delta's wire JSON, written directly and by
// json.Marshal (go test -run '^$' -bench DeltaJSON -benchmem .).
func BenchmarkDeltaJSON(b *testing.B) {
	e := Event{ConversationID: NewID(), Date: Now(), Type: EvAppendText, ReplyTo: NewID(), Text: "word "}
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			e.appendSimpleJSON(make([]byte, 0, 192+len(e.Text)))
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(e); err != nil {
				b.Fatal(err)
			}
		}
	})
}
