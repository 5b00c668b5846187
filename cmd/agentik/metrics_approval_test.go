package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/llmtest"
)

// TestMetricsPendingApprovals: a tool call parked for approval shows in
// agentik_approvals_pending, and the run is counted approval_pending.
func TestMetricsPendingApprovals(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	llm.Enqueue(llmtest.ToolCalls(llmtest.Call("current_time", "{}")))
	db := filepath.Join(t.TempDir(), "agentik.db")
	p := startProc(t, "AGENTIK_DB_PATH="+db, "OPENAI_BASE_URL="+llm.URL(), "AGENTIK_TOOL_APPROVAL=current_time=ask")
	before := scrape(t, p.url+"/metrics", "") // open server: public
	if v := value(before, "agentik_approvals_pending", nil); v != 0 || before["agentik_approvals_pending"] == nil {
		t.Fatalf("approvals pending before: %v", v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := httpapi.NewClient(p.url + "/agentik")
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
	if _, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("time?")}}); err != nil {
		t.Fatal(err)
	}
	for ev := range s.C() {
		if ev.Type == agentik.EvApprovalRequested {
			break
		}
	}
	// The run ends once parked; wait for the counter rather than sleep.
	deadline := time.Now().Add(10 * time.Second)
	for {
		after := scrape(t, p.url+"/metrics", "")
		if value(after, "agentik_turns_total", map[string]string{"outcome": "approval_pending"}) == 1 {
			if v := value(after, "agentik_approvals_pending", nil); v != 1 {
				t.Fatalf("approvals pending: %v", v)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the parked run was not counted:\n%s", p.log())
		}
		time.Sleep(20 * time.Millisecond) // polling a scrape, not synchronising
	}
}
