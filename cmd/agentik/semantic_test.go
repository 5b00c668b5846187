package main

import (
	"context"
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/internal/testenv"
	"github.com/agentik/agentik/llmtest"
)

func TestSemanticRecall(t *testing.T) {
	testSemanticRecall(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "agentik.db"))
}

func TestPostgresSemanticRecall(t *testing.T) {
	testSemanticRecall(t, "AGENTIK_DATABASE_URL="+pgSchema(t))
}

// semanticSearch is GET {p}/memory/search?q=query as token's principal.
func semanticSearch(t *testing.T, base, token, query string) []agentik.SearchHit {
	t.Helper()
	code, body := getSearch(t, base, token, "q="+url.QueryEscape(query))
	var got searchHits
	if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil {
		t.Fatalf("search %q: %d %s", query, code, body)
	}
	return got.Hits
}

// waitFound polls the search for query as token's principal until a hit
// of role in conversation conv comes back (the indexer stored its vector).
func waitFound(t *testing.T, base, token, query, conv, role string) []agentik.SearchHit {
	t.Helper()
	ctx := testenv.Wait(t)
	for {
		hits := semanticSearch(t, base, token, query)
		for _, h := range hits {
			if h.ConversationID == conv && h.Role == role {
				return hits
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%q never found the %s message of %s: %+v", query, role, conv, hits)
		case <-time.After(20 * time.Millisecond): // polling the condition, not standing in for it
		}
	}
}

// testSemanticRecall: through the real server, with memory.embeddings on
// llmtest's /v1/embeddings (a bag of words where car means automobile):
// turns complete while the endpoint is blocked; the indexer embeds each
// message in the background; a search by meaning finds what no word of it
// matches, never another principal's message nor a deleted
// conversation's; a restart embeds nothing twice; with the endpoint down,
// search answers by words.
func testSemanticRecall(t *testing.T, db string) {
	llm := llmtest.NewServer()
	t.Cleanup(llm.Close)
	llm.Handle(echo)
	llm.Embed(llmtest.BagOfWords(map[string]string{"car": "automobile", "airship": "zeppelin", "cycle": "bicycle"}))
	gate := llmtest.NewGate()
	llm.PauseEmbeddings(gate)
	env := []string{db, "OPENAI_BASE_URL=" + llm.URL(), "OPENAI_MODEL=test", "AGENTIK_MEMORY=on",
		"AGENTIK_MEMORY_EMBEDDINGS_URL=" + llm.URL(), "AGENTIK_MEMORY_EMBEDDINGS_MODEL=bag-of-words",
		"AGENTIK_AUTH_TOKENS=alice:" + aliceToken + ",bob:" + bobToken}
	p := startProc(t, env...)
	alice := httpapi.NewClient(p.url+"/agentik", httpapi.WithToken(aliceToken))
	bob := httpapi.NewClient(p.url+"/agentik", httpapi.WithToken(bobToken))
	open := func(a agentik.Agent) agentik.Conversation {
		t.Helper()
		ctx := context.Background()
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

	// The endpoint holds the indexer's first request; turns go on.
	parked, gone := open(alice), open(alice)
	recallTurn(t, parked, "I parked the automobile by the lighthouse")
	select {
	case <-gate.Reached():
	case <-testenv.Wait(t).Done():
		t.Fatal("the indexer never asked for an embedding")
	}
	recallTurn(t, gone, "my old bicycle is blue")
	bobs := open(bob)
	recallTurn(t, bobs, "bob washes his automobile")
	llm.PauseEmbeddings(nil)
	gate.Release()

	// car finds the automobile by meaning: no word of the query is in it.
	waitFound(t, p.url, aliceToken, "car", parked.ID(), agentik.RoleAssistant)
	waitFound(t, p.url, aliceToken, "car", parked.ID(), agentik.RoleUser)
	waitFound(t, p.url, aliceToken, "cycle", gone.ID(), agentik.RoleAssistant)
	waitFound(t, p.url, bobToken, "car", bobs.ID(), agentik.RoleAssistant)
	hits := semanticSearch(t, p.url, aliceToken, "car")
	for _, h := range hits {
		if h.ConversationID != parked.ID() {
			t.Fatalf("alice's search for car finds another conversation (bob's?): %+v", hits)
		}
	}
	if len(hits) != 2 || !strings.Contains(hits[0].Snippet, "automobile") {
		t.Fatalf("alice's search for car: %+v", hits)
	}
	if hits := semanticSearch(t, p.url, bobToken, "car"); len(hits) != 2 || hits[0].ConversationID != bobs.ID() || hits[1].ConversationID != bobs.ID() {
		t.Fatalf("bob's search for car: %+v", hits)
	}

	// A deleted conversation is found no more, by words or by meaning.
	if err := alice.DeleteConversation(context.Background(), gone.ID()); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"cycle", "bicycle"} {
		if hits := semanticSearch(t, p.url, aliceToken, q); len(hits) != 0 {
			t.Fatalf("%s after the delete: %+v", q, hits)
		}
	}

	// A restart keeps the vectors: the endpoint sees each message once.
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.done
	p = startProc(t, env...)
	alice = httpapi.NewClient(p.url+"/agentik", httpapi.WithToken(aliceToken))
	waitFound(t, p.url, aliceToken, "car", parked.ID(), agentik.RoleUser) // before any new message
	airship := open(alice)
	recallTurn(t, airship, "a zeppelin flew over the harbour")
	waitFound(t, p.url, aliceToken, "airship", airship.ID(), agentik.RoleAssistant)
	messages := map[string]int{}
	texts, _ := llm.Embedded()
	for _, s := range texts {
		if strings.Contains(s, " ") { // not a query
			messages[s]++
		}
	}
	if len(messages) != 8 {
		t.Fatalf("the endpoint embedded %d messages of 8: %q", len(messages), texts)
	}
	for s, n := range messages {
		if n != 1 {
			t.Fatalf("the endpoint embedded %q %d times across a restart: %q", s, n, texts)
		}
	}

	// The endpoint down: search answers by words, and the log says so.
	llm.FailEmbeddings(503)
	if hits := semanticSearch(t, p.url, aliceToken, "zeppelin"); len(hits) != 2 || hits[0].ConversationID != airship.ID() {
		t.Fatalf("zeppelin with the endpoint down: %+v", hits)
	}
	if hits := semanticSearch(t, p.url, aliceToken, "car"); len(hits) != 0 {
		t.Fatalf("car with the endpoint down: %+v", hits)
	}
	p.waitLog(t, "searching by words alone", 2)
}
