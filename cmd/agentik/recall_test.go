package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/llmtest"
)

// recallModel answers "recall <words>" with a conversation_search call for
// the words, a tool result with "searched", anything else with an echo.
func recallModel(r llmtest.Request) llmtest.Reply {
	if last := r.Messages[len(r.Messages)-1]; last.Role == "tool" {
		return llmtest.Text("searched")
	}
	if words, ok := strings.CutPrefix(r.LastUserText(), "recall "); ok {
		args, _ := json.Marshal(map[string]any{"query": words})
		return llmtest.ToolCalls(llmtest.Call("conversation_search", string(args)))
	}
	return echo(r)
}

type searchHits struct {
	Hits []agentik.SearchHit `json:"hits"`
}

// recallTurn sends text to conv and waits for the answer that closes its
// turn.
func recallTurn(t *testing.T, conv agentik.Conversation, text string) {
	t.Helper()
	ctx := context.Background()
	events, err := conv.Events(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	res := send(t, conv, text)
	until(t, events, "the answer to "+text, func(ev agentik.Event) bool {
		return ev.Type == agentik.EvAssistantMessage && ev.Message.ReplyTo == res.MessageID
	})
}

// toolResult is the conversation_search result the model was sent last.
func toolResult(t *testing.T, llm *llmtest.Server) searchHits {
	t.Helper()
	reqs := llm.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		msgs := reqs[i].Messages
		if last := msgs[len(msgs)-1]; last.Role == "tool" {
			var hits searchHits
			if err := json.Unmarshal([]byte(last.Text()), &hits); err != nil {
				t.Fatalf("tool result %q: %v", last.Text(), err)
			}
			return hits
		}
	}
	t.Fatal("no request carried a tool result")
	return searchHits{}
}

// getSearch calls GET /agentik/memory/search with query as token and
// returns the status and body.
func getSearch(t *testing.T, base, token, query string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", base+"/agentik/memory/search?"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestConversationSearch(t *testing.T) {
	testConversationSearch(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "agentik.db"))
}

func TestPostgresConversationSearch(t *testing.T) {
	testConversationSearch(t, "AGENTIK_DATABASE_URL="+pgSchema(t))
}

// testConversationSearch: through the real server, the model's
// conversation_search finds what its principal said in another
// conversation, and neither another principal's words nor those of a
// deleted conversation; GET {p}/memory/search answers the same way, to a
// second tenant too.
func testConversationSearch(t *testing.T, db string) {
	llm := llmtest.NewServer()
	t.Cleanup(llm.Close)
	llm.Handle(recallModel)
	p := startProc(t, db, "OPENAI_BASE_URL="+llm.URL(), "OPENAI_MODEL=test", "AGENTIK_MEMORY=on",
		"AGENTIK_AUTH_TOKENS=alice:"+aliceToken+",bob:"+bobToken)
	alice := httpapi.NewClient(p.url+"/agentik", httpapi.WithToken(aliceToken))
	bob := httpapi.NewClient(p.url+"/agentik", httpapi.WithToken(bobToken))
	ctx := context.Background()
	open := func(a agentik.Agent) agentik.Conversation {
		t.Helper()
		info, err := a.CreateConversation(ctx, agentik.CreateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		conv, err := a.Conversation(ctx, info.ID)
		if err != nil {
			t.Fatal(err)
		}
		return conv
	}
	first, gone, asking := open(alice), open(alice), open(alice)
	recallTurn(t, first, "my locker code is marmalade")
	recallTurn(t, gone, "the secret word is gooseberry")
	if err := alice.DeleteConversation(ctx, gone.ID()); err != nil {
		t.Fatal(err)
	}
	bobs := open(bob)
	recallTurn(t, bobs, "bob hides marmalade and gooseberry in a zeppelin")

	recallTurn(t, asking, "recall marmalade")
	hits := toolResult(t, llm).Hits
	// Newest first: the question itself, then the echo and the message of
	// the first conversation.
	if len(hits) != 3 || hits[0].ConversationID != asking.ID() || hits[1].ConversationID != first.ID() || hits[1].Role != agentik.RoleAssistant ||
		hits[2].ConversationID != first.ID() || hits[2].Seq != 1 || hits[2].Role != agentik.RoleUser || !strings.Contains(hits[2].Snippet, "locker code is marmalade") {
		t.Fatalf("alice's search for marmalade: %+v", hits)
	}
	recallTurn(t, asking, "recall gooseberry")
	if hits := toolResult(t, llm).Hits; len(hits) != 1 || hits[0].ConversationID != asking.ID() {
		t.Fatalf("alice's search for gooseberry finds more than her question (bob's, or the deleted conversation's): %+v", hits)
	}
	recallTurn(t, asking, "recall zeppelin")
	if hits := toolResult(t, llm).Hits; len(hits) != 1 || hits[0].ConversationID != asking.ID() {
		t.Fatalf("alice finds bob's zeppelin: %+v", hits)
	}

	// The API, as bob: his own words only.
	code, body := getSearch(t, p.url, bobToken, "q=marmalade+gooseberry&limit=5")
	var got searchHits
	if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil {
		t.Fatalf("bob's search: %d %s", code, body)
	}
	if len(got.Hits) != 2 || got.Hits[0].ConversationID != bobs.ID() || got.Hits[1].ConversationID != bobs.ID() {
		t.Fatalf("bob's search: %s", body)
	}
	for _, q := range []string{"q=locker", "q=locker+code", "q=" + url.QueryEscape(`"locker" OR *`), "q=" + url.QueryEscape("recall NOT zeppelin"), "q=recall"} {
		if code, body := getSearch(t, p.url, bobToken, q); code != 200 || strings.TrimSpace(body) != `{"hits":[]}` {
			t.Fatalf("bob searching %q for alice's words: %d %s", q, code, body)
		}
	}
	code, body = getSearch(t, p.url, aliceToken, "q=locker&limit=1")
	if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil || len(got.Hits) != 1 || got.Hits[0].ConversationID != first.ID() {
		t.Fatalf("alice's search: %d %s", code, body)
	}
	for _, bad := range []struct {
		query string
		code  int
	}{
		{"", 422}, {"q=", 422}, {"q=+++", 422}, {"q=***", 422}, {"q=a&limit=0", 422}, {"q=a&limit=51", 422}, {"q=a&limit=x", 422},
		{"q=" + strings.Repeat("a", agentik.MaxSearchQueryBytes+1), 422}, {"q=a%00b", 422},
	} {
		code, body := getSearch(t, p.url, aliceToken, bad.query)
		if code != bad.code || !strings.Contains(body, `"error":{"code":"invalid"`) {
			t.Fatalf("?%s: %d %s, want %d with the error envelope", bad.query, code, body, bad.code)
		}
	}
	if code, _ := getSearch(t, p.url, "", "q=marmalade"); code != 401 {
		t.Fatalf("without a token: %d", code)
	}
}
