package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/llmtest"
)

func adminDo(t *testing.T, method, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// adminRoute is an HTTP method and path.
type adminRoute struct{ method, path string }

// adminHidden checks the admin routes of the process at base: without a
// token each answers 401; to token, a non-admin's, 404 exactly as a route
// that does not exist, without secret (an id of the turns) in it.
func adminHidden(t *testing.T, base, token, secret string, routes []adminRoute) {
	t.Helper()
	for _, rt := range routes {
		if code, _ := adminDo(t, rt.method, base+rt.path, ""); code != http.StatusUnauthorized {
			t.Errorf("%s %s on %s without a token: %d", rt.method, rt.path, base, code)
		}
		code, body := adminDo(t, rt.method, base+rt.path, token)
		want := `{"error":{"code":"not_found","message":"no such endpoint: ` + rt.method + " " + rt.path + `"}}`
		if code != http.StatusNotFound || strings.TrimSpace(body) != want || strings.Contains(body, secret) {
			t.Errorf("%s %s on %s as a non-admin: %d %s", rt.method, rt.path, base, code, body)
		}
	}
}

// TestAdminTurnsAndCancel: an admin sees a running and a queued turn of
// another principal and cancels both; nobody else learns the routes exist.
func TestAdminTurnsAndCancel(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	gate := llmtest.NewGate()
	defer gate.Release()
	llm.Enqueue(llmtest.Stream().Role().Content("half").Pause(gate).Finish("stop").Done())
	db := filepath.Join(t.TempDir(), "agentik.db")
	const root, bob = "tok-root-secret", "tok-bob-secret"
	p := startProc(t, "AGENTIK_DB_PATH="+db, "OPENAI_BASE_URL="+llm.URL(),
		"AGENTIK_AUTH_TOKENS=root:"+root+",bob:"+bob, "AGENTIK_ADMINS=root")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := httpapi.NewClient(p.url+"/agentik", httpapi.WithToken(bob))
	info, err := client.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	conv, _ := client.Conversation(ctx, info.ID)
	s, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("one")}})
	if err != nil {
		t.Fatal(err)
	}
	<-gate.Reached()
	second, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("two")}, IfBusy: agentik.BusyEnqueue})
	if err != nil {
		t.Fatal(err)
	}

	// Isolation: without a token 401; a non-admin 404 with nothing of the
	// turns in it, exactly as for a route that does not exist.
	adminHidden(t, p.url, bob, info.ID, []adminRoute{
		{http.MethodGet, "/admin/turns"},
		{http.MethodPost, "/admin/turns/" + first.MessageID + "/cancel"},
		{http.MethodGet, "/metrics"},
	})

	code, body := adminDo(t, http.MethodGet, p.url+"/admin/turns", root)
	if code != http.StatusOK {
		t.Fatalf("admin turns: %d %s", code, body)
	}
	var list struct{ Turns []adminTurn }
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Turns) != 2 || list.Turns[0].ReplyTo != first.MessageID || list.Turns[0].State != "running" ||
		list.Turns[1].ReplyTo != second.MessageID || list.Turns[1].State != "queued" ||
		list.Turns[0].Principal != "bob" || list.Turns[0].ConversationID != info.ID || list.Turns[0].Process == "" ||
		list.Turns[0].AgeSeconds < 0 {
		t.Fatalf("admin turns: %s", body)
	}

	// Cancel the queued turn, then the running one.
	for _, id := range []string{second.MessageID, first.MessageID} {
		code, body := adminDo(t, http.MethodPost, p.url+"/admin/turns/"+id+"/cancel", root)
		if code != http.StatusOK || !strings.Contains(body, `"cancelled":true`) {
			t.Fatalf("cancel %s: %d %s", id, code, body)
		}
	}
	closed := map[string]bool{}
	for ev := range s.C() {
		if ev.Type == agentik.EvInterrupted {
			closed[ev.ReplyTo] = true
		}
		if closed[first.MessageID] && closed[second.MessageID] {
			break
		}
	}
	if !closed[first.MessageID] || !closed[second.MessageID] {
		t.Fatalf("not both interrupted (%v): %v\n%s", closed, s.Err(), p.log())
	}
	if code, body := adminDo(t, http.MethodGet, p.url+"/admin/turns", root); code != http.StatusOK || !strings.Contains(body, `"turns":[]`) {
		t.Fatalf("after cancel: %d %s", code, body)
	}
	if code, _ := adminDo(t, http.MethodPost, p.url+"/admin/turns/"+first.MessageID+"/cancel", root); code != http.StatusNotFound {
		t.Fatalf("cancel of a closed turn: %d", code)
	}
}

// TestAdminStatsAndFileAdmin: a principal with admin: true in the
// configuration file is an admin (no AGENTIK_ADMINS); GET /admin/stats
// counts each agent's conversations, messages and events exactly; anyone
// else gets 404.
func TestAdminStatsAndFileAdmin(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	llm.Handle(func(r llmtest.Request) llmtest.Reply { return llmtest.Text("answer") })
	dir := t.TempDir()
	file := filepath.Join(dir, "agentik.yaml")
	cfg := `database: ./agentik.db
auth:
  tokens:
    - {principal: ops, token_env: OPS_TOKEN, admin: true}
    - {principal: bob, token_env: BOB_TOKEN}
agents:
  - id: alpha
    model: {base_url: "` + llm.URL() + `", model: model-a}
  - id: beta
    model: {base_url: "` + llm.URL() + `", model: model-b}
`
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	const ops, bob = "tok-ops-secret", "tok-bob-secret"
	p := startProc(t, "AGENTIK_CONFIG="+file, "OPS_TOKEN="+ops, "BOB_TOKEN="+bob)

	for _, path := range []string{"/admin/stats", "/admin/turns", "/metrics"} {
		if code, body := adminDo(t, http.MethodGet, p.url+path, bob); code != http.StatusNotFound {
			t.Errorf("GET %s as bob: %d %s", path, code, body)
		}
		if code, body := adminDo(t, http.MethodGet, p.url+path, ops); code != http.StatusOK {
			t.Errorf("GET %s as ops (admin: true): %d %s", path, code, body)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	alpha := httpapi.NewClient(p.url+"/agents/alpha", httpapi.WithToken(bob))
	beta := httpapi.NewClient(p.url+"/agents/beta", httpapi.WithToken(bob))
	first, err := alpha.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alpha.CreateConversation(ctx, agentik.CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := beta.CreateConversation(ctx, agentik.CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	conv, _ := alpha.Conversation(ctx, first.ID)
	s, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("hello")}})
	if err != nil {
		t.Fatal(err)
	}
	for ev := range s.C() {
		if ev.Type == agentik.EvEnd && ev.ReplyTo == res.MessageID {
			break
		}
	}

	code, body := adminDo(t, http.MethodGet, p.url+"/admin/stats", ops)
	if code != http.StatusOK {
		t.Fatalf("stats: %d %s", code, body)
	}
	var st adminStats
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	if st.Database.Backend != "sqlite" || st.Database.Bytes <= 0 || len(st.Agents) != 2 {
		t.Fatalf("stats: %s", body)
	}
	a, b := st.Agents[0], st.Agents[1]
	// One plain turn: the user message and the answer, each a journal
	// message and its durable event.
	if a.Agent != "alpha" || a.Conversations != 2 || a.Messages != 2 || a.Events != 2 || a.AgentEvents < 2 || a.OpenTurns != 0 {
		t.Errorf("alpha: %+v", a)
	}
	if b.Agent != "beta" || b.Conversations != 1 || b.Messages != 0 || b.Events != 0 || b.AgentEvents != 1 || b.OpenTurns != 0 {
		t.Errorf("beta: %+v", b)
	}
	for _, k := range []string{`"conversations":`, `"messages":`, `"events":`, `"agent_events":`, `"open_turns":`, `"bytes":`} {
		if !strings.Contains(body, k) {
			t.Errorf("no %s in %s", k, body)
		}
	}
}
