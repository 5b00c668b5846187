package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/llmtest"
)

const (
	aliceToken = "alice-token-0123456789"
	bobToken   = "bob-token-9876543210"
)

// authServer starts the binary with two principals and returns a client per principal.
func authServer(t *testing.T, env ...string) (*proc, agentik.Agent, agentik.Agent) {
	t.Helper()
	llm := llmtest.NewServer()
	t.Cleanup(llm.Close)
	db := filepath.Join(t.TempDir(), "agentik.db")
	env = append([]string{"AGENTIK_DB_PATH=" + db, "OPENAI_BASE_URL=" + llm.URL(), "AGENTIK_LOG_LEVEL=debug",
		"AGENTIK_AUTH_TOKENS=alice:" + aliceToken + ",bob:" + bobToken}, env...)
	p := startProc(t, env...)
	return p, httpapi.NewClient(p.url+"/agentik", httpapi.WithToken(aliceToken)), httpapi.NewClient(p.url+"/agentik", httpapi.WithToken(bobToken))
}

func TestEveryRESTEndpointChecksTokenAndOwner(t *testing.T) {
	p, alice, _ := authServer(t)
	ctx := context.Background()
	info, err := alice.CreateConversation(ctx, agentik.CreateRequest{Title: "alice's"})
	if err != nil {
		t.Fatal(err)
	}
	conv, _ := alice.Conversation(ctx, info.ID)
	res, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("hello")}})
	if err != nil {
		t.Fatal(err)
	}
	_ = res
	snapshot := func() string {
		page, err := conv.Messages(ctx, agentik.MessagesRequest{Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := conv.Info(ctx)
		return got.Title + "|" + strings.Repeat("m", len(page.Messages))
	}
	// Let the turn finish so the snapshot is stable.
	s, _ := conv.Events(ctx, 0)
	for ev := range s.C() {
		if ev.Type == agentik.EvEnd || ev.Type == agentik.EvAssistantMessage {
			break
		}
	}
	s.Close()
	before := snapshot()

	id := info.ID
	body := `{"content":[{"type":"text","text":"x"}]}`
	endpoints := []struct {
		method, path, body string
		ownerStatus        int
	}{
		{"GET", "/agentik", "", 200},
		{"GET", "/agentik/conversations", "", 200},
		{"POST", "/agentik/conversations", `{"title":"t"}`, 201},
		{"GET", "/agentik/conversations/" + id, "", 200},
		{"PATCH", "/agentik/conversations/" + id, `{"title":"alice's"}`, 200},
		{"POST", "/agentik/conversations/" + id + "/interrupt", "", 202},
		{"GET", "/agentik/conversations/" + id + "/messages", "", 200},
		{"POST", "/agentik/conversations/" + id + "/messages", body, 202},
		{"DELETE", "/agentik/conversations/" + agentik.NewID(), "", 404}, // owner deletes an unknown one: 404
	}
	do := func(method, path, body, token string) (int, http.Header) {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, _ := http.NewRequest(method, p.url+path, rd)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	for _, ep := range endpoints {
		for _, tok := range []string{"", "wrong-token-123"} {
			status, h := do(ep.method, ep.path, ep.body, tok)
			if status != 401 || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s %s token %q: %d %q", ep.method, ep.path, tok, status, h.Get("WWW-Authenticate"))
			}
		}
		if strings.Contains(ep.path, id) {
			if status, _ := do(ep.method, ep.path, ep.body, bobToken); status != 404 {
				t.Errorf("%s %s as bob: %d, want 404", ep.method, ep.path, status)
			}
		}
	}
	for _, path := range []string{"/agentik/conversations/" + id + "/events?after=0", "/agentik/events?after=0"} {
		if status, _ := do("GET", path, "", ""); status != 401 {
			t.Errorf("GET %s without token: %d", path, status)
		}
	}
	if status, _ := do("GET", "/agentik/conversations/"+id+"/events?after=0", "", bobToken); status != 404 {
		t.Errorf("bob's event stream of alice's conversation: %d", status)
	}
	if status, _ := do("DELETE", "/agentik/conversations/"+id, "", bobToken); status != 404 {
		t.Errorf("bob deletes: %d", status)
	}
	if after := snapshot(); after != before {
		t.Fatalf("refused requests changed the conversation: %s → %s", before, after)
	}
	for _, ep := range endpoints {
		if status, _ := do(ep.method, ep.path, ep.body, aliceToken); status != ep.ownerStatus {
			t.Errorf("%s %s as alice: %d, want %d", ep.method, ep.path, status, ep.ownerStatus)
		}
	}
	// Public endpoints stay public.
	if status, _ := do("GET", "/health", "", ""); status != 200 {
		t.Errorf("/health: %d", status)
	}
	p.cmd.Process.Signal(os.Interrupt)
	<-p.done
	if logs := p.log(); strings.Contains(logs, aliceToken) || strings.Contains(logs, bobToken) || strings.Contains(logs, "wrong-token-123") {
		t.Fatalf("a token reached the logs:\n%s", logs)
	}
	if !strings.Contains(p.log(), "principal=alice") {
		t.Fatalf("request logs do not carry the principal:\n%s", p.log())
	}
}

func TestAgentEventsOnlyReachTheirOwner(t *testing.T) {
	_, alice, bob := authServer(t)
	ctx := context.Background()
	bobEvents, err := bob.Events(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer bobEvents.Close()
	if _, err := alice.CreateConversation(ctx, agentik.CreateRequest{Title: "secret"}); err != nil {
		t.Fatal(err)
	}
	mine, err := bob.CreateConversation(ctx, agentik.CreateRequest{Title: "bob's"})
	if err != nil {
		t.Fatal(err)
	}
	ev := <-bobEvents.C()
	if ev.Type != agentik.AgentEvCreated || ev.Conversation == nil || ev.Conversation.ID != mine.ID {
		t.Fatalf("bob's first agent event is %+v, want his own created", ev)
	}
	list, _ := bob.ListConversations(ctx, agentik.ListRequest{})
	if len(list.Conversations) != 1 || list.Conversations[0].ID != mine.ID {
		t.Fatalf("bob lists %+v", list)
	}
}

func TestAuthRequiredRefusesToStartWithoutTokens(t *testing.T) {
	cmd := exec.Command(binary, "serve")
	cmd.Env = append(os.Environ(), "AGENTIK_AUTH=required", "AGENTIK_PORT=0")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "AGENTIK_AUTH") {
		t.Fatalf("started without tokens: %v\n%s", err, out)
	}
}
