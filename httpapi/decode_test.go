package httpapi

import (
	"net/url"
	"reflect"
	"testing"

	"github.com/agentik/agentik"
)

func TestDecodeSend(t *testing.T) {
	tests := []struct {
		body string
		code string // "" = accepted
	}{
		{`{"content":[{"type":"text","text":"hi"}]}`, ""},
		{`{"content":[{"type":"text","text":"hi"}],"if_busy":"reject","unknown":1}`, ""},
		{`{"content":[{"type":"image","mime":"image/png","data":"aGk="}]}`, ""},
		{` {"content":[{"type":"text","text":"hi"}]} ` + "\n", ""},
		{``, agentik.EMalformed},
		{`{`, agentik.EMalformed},
		{`{"content":[]}{}`, agentik.EMalformed},
		{`{"content":[{"type":"text","text":"hi"}]} x`, agentik.EMalformed},
		{`null`, agentik.EInvalid},
		{`[]`, agentik.EInvalid},
		{`{"content":"hi"}`, agentik.EInvalid},
		{`{"content":[]}`, agentik.EInvalid},
		{`{"content":[{"type":"text","text":""}]}`, agentik.EInvalid},
		{`{"content":[{"type":"video"}]}`, agentik.EInvalid},
		{`{"content":[{"type":"image","mime":"image/png","data":"%%%"}]}`, agentik.EInvalid},
		{`{"content":[{"type":"image","mime":"image/bmp","data":"aGk="}]}`, agentik.EInvalid},
		{`{"content":[{"type":"text","text":"hi"}],"if_busy":"later"}`, agentik.EInvalid},
		{`{"content":[{"type":"text","text":"hi"}],"context":{"metadata":{"a":1}}}`, agentik.EInvalid},
	}
	for _, tt := range tests {
		_, err := decodeSend([]byte(tt.body))
		if got := agentik.ErrorCode(err); got != tt.code {
			t.Errorf("decodeSend(%s) = %v, want code %q", tt.body, err, tt.code)
		}
	}
}

func TestDecodeCreateAndRename(t *testing.T) {
	if req, err := decodeCreate(nil); err != nil || !reflect.DeepEqual(req, agentik.CreateRequest{}) {
		t.Errorf("empty create body: %+v, %v", req, err)
	}
	if req, err := decodeCreate([]byte(`{"temporal":true,"title":"x"}`)); err != nil || !req.Temporal || req.Title != "x" {
		t.Errorf("create: %+v, %v", req, err)
	}
	if _, err := decodeCreate([]byte(`{"temporal":"yes"}`)); agentik.ErrorCode(err) != agentik.EInvalid {
		t.Errorf("create with a string temporal: %v", err)
	}
	if title, err := decodeRename([]byte(`{"title":""}`)); err != nil || title != "" {
		t.Errorf("rename to empty: %q, %v", title, err)
	}
	if _, err := decodeRename([]byte(`{}`)); agentik.ErrorCode(err) != agentik.EInvalid {
		t.Errorf("rename without title: %v", err)
	}
}

func TestParseQueries(t *testing.T) {
	q := func(s string) url.Values { v, _ := url.ParseQuery(s); return v }
	if req, err := parseMessagesQuery(q("after=3&offset=2&limit=9999")); err != nil ||
		req != (agentik.MessagesRequest{After: 3, Offset: 2, Limit: agentik.MaxMessagesLimit}) {
		t.Errorf("messages query: %+v, %v", req, err)
	}
	if req, _ := parseMessagesQuery(q("")); req.Limit != agentik.DefaultMessagesLimit {
		t.Errorf("default limit = %d", req.Limit)
	}
	for _, bad := range []string{"limit=0", "limit=-1", "limit=x", "after=-2", "before=1.5", "offset=99999999999"} {
		if _, err := parseMessagesQuery(q(bad)); agentik.ErrorCode(err) != agentik.EInvalid {
			t.Errorf("messages query %q: %v, want invalid", bad, err)
		}
	}
	if _, err := parseListQuery(q("before=nope")); agentik.ErrorCode(err) != agentik.EInvalid {
		t.Errorf("list with a bad token: %v", err)
	}
	tok := agentik.ListToken(agentik.Now(), agentik.NewID())
	if req, err := parseListQuery(q("limit=5&before=" + tok)); err != nil || req.Limit != 5 || req.Before != tok {
		t.Errorf("list query: %+v, %v", req, err)
	}

	cursors := []struct {
		header, query string
		want          int64
		code          string
	}{
		{"", "", agentik.LiveOnly, ""},
		{"", "after=0", 0, ""},
		{"", "after=12", 12, ""},
		{"15", "after=12", 15, ""}, // the header wins
		{" 15 ", "", 15, ""},
		{"x", "after=12", 0, agentik.EInvalid},
		{"", "after=-1", 0, agentik.EInvalid},
	}
	for _, c := range cursors {
		got, err := parseCursor(c.header, q(c.query))
		if agentik.ErrorCode(err) != c.code || (err == nil && got != c.want) {
			t.Errorf("parseCursor(%q, %q) = %d, %v; want %d, code %q", c.header, c.query, got, err, c.want, c.code)
		}
	}
}

// The fuzz targets hold the decoders to their contract: never panic, refuse
// only with a request-error code, and accept only what the core would accept.

func FuzzDecodeSend(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hi"}],"if_busy":"enqueue"}`,
		`{"content":[{"type":"image","mime":"image/gif","data":"R0lGOA=="}],"context":{"origin":{"channel":"x"},"metadata":{"k":"v"}}}`,
		`{"content":[]}`, `{"content":[{"type":"text","text":""}]}`, `[]`, `null`, `{"a":1}{}`, `"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := decodeSend(b)
		if err != nil {
			if c := agentik.ErrorCode(err); c != agentik.EMalformed && c != agentik.EInvalid {
				t.Fatalf("code %q for %q", c, b)
			}
			return
		}
		if agentik.ValidateContent(req.Content) != nil || !agentik.ValidBusyPolicy(req.IfBusy) {
			t.Fatalf("accepted an invalid request %+v", req)
		}
	})
}

func FuzzDecodeCreate(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"temporal":true,"title":"t"}`, `{"temporal":1}`, `{} {}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := decodeCreate(b); err != nil {
			if c := agentik.ErrorCode(err); c != agentik.EMalformed && c != agentik.EInvalid {
				t.Fatalf("code %q for %q", c, b)
			}
		}
	})
}

func FuzzDecodeRename(f *testing.F) {
	for _, s := range []string{`{"title":"x"}`, `{"title":null}`, `{}`, `{"title":1}`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := decodeRename(b); err != nil {
			if c := agentik.ErrorCode(err); c != agentik.EMalformed && c != agentik.EInvalid {
				t.Fatalf("code %q for %q", c, b)
			}
		}
	})
}

func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{"after=1&before=2&offset=3&limit=4", "limit=501", "limit=-1", "after=x", "before=abc", "%zz"} {
		f.Add(s, "")
	}
	f.Add("after=3", "7")
	f.Fuzz(func(t *testing.T, rawQuery, lastEventID string) {
		q, _ := url.ParseQuery(rawQuery)
		if req, err := parseMessagesQuery(q); err == nil {
			if req.After < 0 || req.Before < 0 || req.Offset < 0 || req.Limit < 1 || req.Limit > agentik.MaxMessagesLimit {
				t.Fatalf("accepted %+v", req)
			}
		} else if agentik.ErrorCode(err) != agentik.EInvalid {
			t.Fatalf("messages query %q: %v", rawQuery, err)
		}
		if req, err := parseListQuery(q); err == nil {
			if req.Limit < 1 || req.Limit > agentik.MaxMessagesLimit {
				t.Fatalf("accepted %+v", req)
			}
		} else if agentik.ErrorCode(err) != agentik.EInvalid {
			t.Fatalf("list query %q: %v", rawQuery, err)
		}
		if c, err := parseCursor(lastEventID, q); err == nil && c < agentik.LiveOnly {
			t.Fatalf("cursor %d", c)
		} else if err != nil && agentik.ErrorCode(err) != agentik.EInvalid {
			t.Fatalf("cursor: %v", err)
		}
	})
}

// FuzzDecodeBranching: the bodies of regenerate, head and fork (SPEC §18)
// are refused as malformed or invalid, never accepted with a negative seq
// (or, for head, without a positive one).
func FuzzDecodeBranching(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"seq":3}`, `{"seq":-1}`, `{"seq":0}`, `{"seq":"3"}`, `{"seq":1.5}`,
		`{"seq":3,"if_busy":"reject"}`, `{"if_busy":"later"}`, `[]`, `null`, `{"seq":1}{}`, `{"seq":9223372036854775808}`} {
		f.Add([]byte(s))
	}
	check := func(t *testing.T, b []byte, err error) {
		if err != nil {
			if c := agentik.ErrorCode(err); c != agentik.EMalformed && c != agentik.EInvalid {
				t.Fatalf("code %q for %q", c, b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := decodeRegenerate(b)
		check(t, b, err)
		if err == nil && (req.Seq < 0 || !agentik.ValidBusyPolicy(req.IfBusy)) {
			t.Fatalf("regenerate accepted %+v", req)
		}
		seq, err := decodeHead(b)
		check(t, b, err)
		if err == nil && seq <= 0 {
			t.Fatalf("head accepted seq %d", seq)
		}
		fork, err := decodeFork(b)
		check(t, b, err)
		if err == nil && fork.Seq < 0 {
			t.Fatalf("fork accepted %+v", fork)
		}
		send, err := decodeSend(b)
		if err == nil && send.Parent != nil && *send.Parent < 0 {
			t.Fatalf("send accepted parent %d", *send.Parent)
		}
	})
}

// FuzzParseSearchQuery: GET {p}/memory/search's parameters are accepted
// with a query the search can parse and a limit in bounds, or refused as
// invalid.
func FuzzParseSearchQuery(f *testing.F) {
	for _, s := range []string{"q=a", "q=a&limit=5", "q=&limit=1", "limit=51&q=x", "q=%22a%22+OR+*", "q=a&limit=-1", "q=a%00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		req, err := parseSearchQuery(v)
		if err != nil {
			if agentik.ErrorCode(err) != agentik.EInvalid {
				t.Fatalf("%q: %v", raw, err)
			}
			return
		}
		if _, err := agentik.ParseSearchQuery(req.Query); err != nil {
			t.Fatalf("%q: accepted a query the search refuses: %v", raw, err)
		}
		if req.Limit < 0 || req.Limit > agentik.MaxSearchLimit {
			t.Fatalf("%q: limit %d", raw, req.Limit)
		}
	})
}
