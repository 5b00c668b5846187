package langgraph

import (
	"encoding/json"
	"slices"
	"strconv"
	"testing"

	"github.com/agentik/agentik"
)

// TestImageBlocksBothWays: a human message's image blocks (image_url with a
// data URL, or a standard image block with base64) become image content,
// and stored image content goes out as image_url data URLs; a URL that
// would have to be fetched is refused.
func TestImageBlocksBothWays(t *testing.T) {
	const png = "iVBORw0KGgo="
	for _, in := range []string{
		`[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,` + png + `"}}]`,
		`[{"type":"text","text":"look"},{"type":"image_url","image_url":"data:image/png;base64,` + png + `"}]`,
		`[{"type":"text","text":"look"},{"type":"image","source_type":"base64","data":"` + png + `","mime_type":"image/png"}]`,
		`[{"type":"text","text":"look"},{"type":"image","base64":"` + png + `","mime_type":"image/png"}]`,
	} {
		c, err := fromLangChain(LCMessage{Type: "human", Content: json.RawMessage(in)})
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if len(c) != 2 || c[0].Text != "look" || c[1].Type != agentik.ContentImage || c[1].MIME != "image/png" || c[1].Data != png {
			t.Fatalf("%s: %+v", in, c)
		}
		out := toLangChain([]agentik.Message{{Type: agentik.MsgUser, ID: "u", Content: c}})
		var blocks []lcBlock
		if err := json.Unmarshal(out[0].Content, &blocks); err != nil || len(blocks) != 2 {
			t.Fatalf("out %s: %v", out[0].Content, err)
		}
		var url struct{ URL string }
		json.Unmarshal(blocks[1].ImageURL, &url)
		if blocks[1].Type != "image_url" || url.URL != "data:image/png;base64,"+png {
			t.Fatalf("out %s", out[0].Content)
		}
	}
	for _, bad := range []string{
		`[{"type":"image_url","image_url":{"url":"https://example.com/cat.png"}}]`,
		`[{"type":"image","source_type":"url","url":"https://example.com/cat.png"}]`,
		`[{"type":"audio","data":"AAAA"}]`,
		`42`, `""`, `[]`,
	} {
		if _, err := fromLangChain(LCMessage{Type: "human", Content: json.RawMessage(bad)}); agentik.ErrorCode(err) != agentik.EInvalid {
			t.Fatalf("%s: %v", bad, err)
		}
	}
	if c, err := fromLangChain(LCMessage{Role: "user", Content: json.RawMessage(`"hi"`)}); err != nil || agentik.JoinText(c) != "hi" {
		t.Fatalf("role user: %v %v", c, err)
	}
	for _, typ := range []string{"ai", "tool", "system"} {
		if _, err := fromLangChain(LCMessage{Type: typ, Content: json.RawMessage(`"x"`)}); agentik.ErrorCode(err) != agentik.EInvalid {
			t.Fatalf("%s input: %v", typ, err)
		}
	}
}

// TestRunInput: the trailing human messages are the message; earlier ones
// and ai and tool messages are its earlier context, system messages its
// instructions; input that does not end with a human message, an unknown
// type or malformed content is refused.
func TestRunInput(t *testing.T) {
	msg := func(typ, text string) LCMessage {
		return LCMessage{Type: typ, Content: json.RawMessage(strconv.Quote(text))}
	}
	for _, c := range []struct {
		in   []LCMessage
		want []string // the parts' texts
		ctx  int
		err  bool
	}{
		{in: []LCMessage{msg("human", "a"), msg("human", "b")}, want: []string{"a", "b"}},
		{in: []LCMessage{msg("system", "s"), msg("human", "a")}, want: []string{"a", "<instructions>\ns\n</instructions>"}, ctx: 1},
		{in: []LCMessage{msg("human", "a"), msg("ai", "b"), msg("human", "c"), msg("system", "s")},
			want: []string{"c", "<earlier_messages>\nuser: a\nassistant: b\n</earlier_messages>", "<instructions>\ns\n</instructions>"}, ctx: 2},
		{in: []LCMessage{msg("human", "a"), msg("ai", ""), msg("tool", "r"), msg("human", "c")},
			want: []string{"c", "<earlier_messages>\nuser: a\ntool: r\n</earlier_messages>"}, ctx: 1},
		{in: []LCMessage{msg("human", "a"), msg("ai", "b")}, err: true},
		{in: []LCMessage{msg("human", "a"), msg("tool", "r")}, err: true},
		{in: []LCMessage{msg("function", "f"), msg("human", "a")}, err: true},
		{in: []LCMessage{{Type: "ai", Content: json.RawMessage(`42`)}, msg("human", "a")}, err: true},
		{in: []LCMessage{msg("system", "s")}, err: true},
		{in: nil, err: true},
	} {
		got, n, err := runInput(c.in)
		if c.err {
			if agentik.ErrorCode(err) != agentik.EInvalid {
				t.Fatalf("%+v: %v, want invalid", c.in, err)
			}
			continue
		}
		var texts []string
		for _, p := range got {
			texts = append(texts, p.Text)
		}
		if err != nil || n != c.ctx || !slices.Equal(texts, c.want) {
			t.Fatalf("%+v: %q %d %v, want %q %d", c.in, texts, n, err, c.want, c.ctx)
		}
	}
}
