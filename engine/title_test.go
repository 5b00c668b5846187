package engine_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/openai"
)

// TestTitleFromFirstMessage: a conversation created without a title is
// named after the first words of its first message before Send returns:
// whitespace folded, at most 60 characters (runes, not bytes), cut at a
// word boundary and marked with "…"; a message without words leaves it
// untitled.
func TestTitleFromFirstMessage(t *testing.T) {
	h := newCtxHarness(t, func(o *openai.Options) { o.ImageInput = true })
	pic := agentik.Image("image/png", pngBytes(t, 2, 2))
	text := func(s string) []agentik.Content { return []agentik.Content{agentik.Text(s)} }
	sixty := strings.Repeat("wordy ", 10)[:59] + "!"
	for _, tc := range []struct {
		name    string
		content []agentik.Content
		want    string
	}{
		{"one word", text("hello"), "hello"},
		{"whitespace folded", text("  Plan a   weekend\n\nin\tLisbon  "), "Plan a weekend in Lisbon"},
		{"sixty characters stay whole", text(sixty), sixty},
		{"cut at a word boundary", text(sixty + "x"), strings.Repeat("wordy ", 9)[:53] + "…"},
		{"a sentence", text("Plan a weekend in Lisbon with two kids, a museum, the old trams and the best pastéis de nata"),
			"Plan a weekend in Lisbon with two kids, a museum, the old…"},
		{"no punctuation before the mark", text("First, second, third, fourth, fifth, sixth, seventh, eighth, ninth, tenth"),
			"First, second, third, fourth, fifth, sixth, seventh…"},
		{"one long word", text(strings.Repeat("x", 100)), strings.Repeat("x", 59) + "…"},
		{"characters, not bytes", text(strings.Repeat("é", 70)), strings.Repeat("é", 59) + "…"},
		{"text parts around an image", []agentik.Content{agentik.Text("Look at"), pic, agentik.Text("this picture")}, "Look at this picture"},
		{"control characters", text("bell\x07and\x1bescape"), "bell and escape"},
		{"an image alone", []agentik.Content{pic}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := untitled(t, h)
			if _, err := c.Send(h.ctx, agentik.SendRequest{Content: tc.content}); err != nil {
				t.Fatal(err)
			}
			if got := titleOf(t, h, c.ID()); got != tc.want {
				t.Fatalf("title %q, want %q", got, tc.want)
			}
		})
	}
}

// TestTitleKeptAndRenamed: a title given at creation, or set before the
// first message, is never replaced; a title from the first message is
// renamable, later messages leave whatever title there is (none, too);
// temporal conversations, never listed, get none. The titles go out as
// renamed agent events, the same as renames.
func TestTitleKeptAndRenamed(t *testing.T) {
	h := newHarness(t)
	events, err := h.eng.Events(h.ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	create := func(req agentik.CreateRequest) string {
		t.Helper()
		info, err := h.eng.CreateConversation(h.ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return info.ID
	}
	send := func(id, text string) {
		t.Helper()
		c, err := h.eng.Conversation(h.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		h.send(c, text)
	}
	rename := func(id, title string) {
		t.Helper()
		if info, err := h.eng.RenameConversation(h.ctx, id, title); err != nil || info.Title != title {
			t.Fatalf("rename to %q: %+v, %v", title, info, err)
		}
	}
	expect := func(id, want string) {
		t.Helper()
		if got := titleOf(t, h, id); got != want {
			t.Fatalf("title %q, want %q", got, want)
		}
	}

	given := create(agentik.CreateRequest{Title: "Mine"})
	send(given, "hello there")
	expect(given, "Mine")

	early := create(agentik.CreateRequest{})
	rename(early, "Set first")
	send(early, "hello there")
	expect(early, "Set first")

	auto := create(agentik.CreateRequest{})
	send(auto, "Where is the moon tonight?")
	expect(auto, "Where is the moon tonight?")
	rename(auto, "Moon")
	send(auto, "and the sun?")
	expect(auto, "Moon")
	rename(auto, "")
	send(auto, "still there?")
	expect(auto, "")

	temp := create(agentik.CreateRequest{Temporal: true})
	send(temp, "a scratch question")
	expect(temp, "")

	// Every renamed event, in order: none for the conversation titled at
	// creation, one for the title from the first message.
	want := []string{early + " Set first", auto + " Where is the moon tonight?", auto + " Moon", auto + " "}
	var got []string
	deadline := time.After(60 * time.Second) // a bound for a loaded machine
	for len(got) < len(want) {
		select {
		case ev, ok := <-events.C():
			if !ok {
				t.Fatalf("agent stream ended: %v", events.Err())
			}
			if ev.Type == agentik.AgentEvRenamed {
				got = append(got, ev.ConversationID+" "+ev.Title)
			}
		case <-deadline:
			t.Fatalf("renamed events %q, want %q", got, want)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("renamed events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestTitleRacesARename: a rename that races the first message is never
// overwritten by the title from its first words, whichever comes first.
// (Without the title lock, some of the 100 rounds lose the rename.)
func TestTitleRacesARename(t *testing.T) {
	h := newHarness(t)
	for i := range 100 {
		c := untitled(t, h)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			if _, err := c.Send(h.ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("first words")}}); err != nil {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			if _, err := h.eng.RenameConversation(h.ctx, c.ID(), "Mine"); err != nil {
				t.Error(err)
			}
		}()
		wg.Wait()
		if got := titleOf(t, h, c.ID()); got != "Mine" {
			t.Fatalf("round %d: title %q, want the rename's", i, got)
		}
	}
}

// TestTitleThroughREST: through the native API, a conversation made
// without a title answers GET with the first words of its first message as
// soon as the message is accepted, the agent event stream says so, and
// PATCH renames it for good.
func TestTitleThroughREST(t *testing.T) {
	h := newHarness(t)
	mux := http.NewServeMux()
	httpapi.Mount(mux, "/agentik", h.eng, httpapi.Options{})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(h.ctx, 60*time.Second)
	defer cancel()
	agentEvents, err := httpapi.NewClient(srv.URL+"/agentik").Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer agentEvents.Close()

	do := func(method, path, body string, status int) (out struct{ ID, Title string }) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, srv.URL+"/agentik"+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != status {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
		}
		json.Unmarshal(raw, &out)
		return out
	}
	const question = "What is the capital of Portugal, and when was it founded?"
	conv := do("POST", "/conversations", `{}`, http.StatusCreated)
	if conv.Title != "" {
		t.Fatalf("created with title %q", conv.Title)
	}
	do("POST", "/conversations/"+conv.ID+"/messages", `{"content":[{"type":"text","text":"`+question+`"}]}`, http.StatusAccepted)
	if got := do("GET", "/conversations/"+conv.ID, "", http.StatusOK).Title; got != question {
		t.Fatalf("title %q, want %q", got, question)
	}
	var renamed *agentik.AgentEvent
	for ev := range agentEvents.C() {
		if ev.Type == agentik.AgentEvRenamed {
			renamed = &ev
			break
		}
	}
	if renamed == nil || renamed.ConversationID != conv.ID || renamed.Title != question {
		t.Fatalf("renamed event %+v (stream: %v)", renamed, agentEvents.Err())
	}
	if got := do("PATCH", "/conversations/"+conv.ID, `{"title":"Lisbon"}`, http.StatusOK).Title; got != "Lisbon" {
		t.Fatalf("renamed to %q", got)
	}
	do("POST", "/conversations/"+conv.ID+"/messages", `{"content":[{"type":"text","text":"And Porto?"}]}`, http.StatusAccepted)
	if got := do("GET", "/conversations/"+conv.ID, "", http.StatusOK).Title; got != "Lisbon" {
		t.Fatalf("title %q after the second message, want the rename's", got)
	}
}

// untitled creates a conversation without a title.
func untitled(t *testing.T, h *harness) agentik.Conversation {
	t.Helper()
	info, err := h.eng.CreateConversation(h.ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := h.eng.Conversation(h.ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// titleOf reads the title of conversation id.
func titleOf(t *testing.T, h *harness, id string) string {
	t.Helper()
	c, err := h.eng.Conversation(h.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.Title
}
