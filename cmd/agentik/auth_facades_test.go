package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/ws"
)

// TestFacadesCheckTokenAndOwner runs the AG-UI and A2A endpoints with no
// token, a bad token, another principal's token and the owner's token.
func TestFacadesCheckTokenAndOwner(t *testing.T) {
	p, alice, _ := authServer(t)
	ctx := context.Background()
	info, err := alice.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	conv, _ := alice.Conversation(ctx, info.ID)
	count := func() int {
		page, err := conv.Messages(ctx, agentik.MessagesRequest{Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		return len(page.Messages)
	}
	id := info.ID
	agui := `{"threadId":"` + id + `","runId":"r1","messages":[{"id":"m1","role":"user","content":"hi"}],"tools":[],"context":[],"state":{},"forwardedProps":{}}`
	a2aSend := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"x1","role":"user","parts":[{"kind":"text","text":"hi"}],"contextId":"` + id + `"}}}`
	a2aGet := `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"` + id + `:1"}}`
	do := func(path, body, token string) (int, string, http.Header) {
		req, _ := http.NewRequest("POST", p.url+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream, application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	for _, tc := range []struct{ path, body string }{{"/agui", agui}, {"/a2a", a2aSend}, {"/a2a", a2aGet}} {
		for _, tok := range []string{"", "wrong-token-123"} {
			status, _, h := do(tc.path, tc.body, tok)
			if status != 401 || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s %.40s token %q: %d", tc.path, tc.body, tok, status)
			}
		}
	}
	// Bob cannot reach alice's conversation through any facade.
	// AG-UI: bob's run with alice's thread id gets a thread of his own.
	if status, body, _ := do("/agui", agui, bobToken); status != 200 {
		t.Errorf("AG-UI run of alice's thread id as bob: %d %s", status, body)
	}
	if _, body, _ := do("/a2a", a2aSend, bobToken); !strings.Contains(body, `"error"`) {
		t.Errorf("A2A send into alice's context as bob: %s", body)
	}
	if n := count(); n != 0 {
		t.Fatalf("refused requests stored %d messages", n)
	}
	// The owner gets through.
	if status, body, _ := do("/a2a", a2aSend, aliceToken); status != 200 || strings.Contains(body, `"error"`) {
		t.Fatalf("A2A send as alice: %d %s", status, body)
	}
	if _, body, _ := do("/a2a", a2aGet, bobToken); !strings.Contains(body, "-32001") {
		t.Errorf("A2A get of alice's task as bob: %s", body)
	}
	if _, body, _ := do("/a2a", a2aGet, aliceToken); strings.Contains(body, `"error"`) {
		t.Errorf("A2A get as alice: %s", body)
	}
	// WebSocket: the token is checked at the handshake (header, or
	// ?access_token= since browsers cannot set headers), and attaching to
	// another principal's conversation is not found.
	wsURL := "ws" + strings.TrimPrefix(p.url, "http") + "/agentik/ws"
	for _, tok := range []string{"", "wrong-token-123"} {
		if _, err := ws.Dial(ctx, wsURL, &ws.DialOptions{Token: tok, ConversationID: id}); wsCode(err) != agentik.EUnauthorized {
			t.Errorf("WebSocket with token %q: %v", tok, err)
		}
	}
	if _, err := ws.Dial(ctx, wsURL, &ws.DialOptions{Token: bobToken, ConversationID: id}); wsCode(err) != agentik.ENotFound {
		t.Errorf("WebSocket attach to alice's conversation as bob: %v", err)
	}
	wc, err := ws.Dial(ctx, wsURL+"?access_token="+aliceToken, &ws.DialOptions{ConversationID: id})
	if err != nil {
		t.Fatalf("WebSocket as alice with access_token: %v", err)
	}
	wc.Close()

	// The agent card stays public.
	resp, err := http.Get(p.url + "/.well-known/agent-card.json")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("card: %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	// No token reached the logs, at debug level, on any facade.
	p.cmd.Process.Signal(os.Interrupt)
	<-p.done
	for _, tok := range []string{aliceToken, bobToken, "wrong-token-123"} {
		if strings.Contains(p.log(), tok) {
			t.Fatalf("a token reached the logs:\n%s", p.log())
		}
	}
}
