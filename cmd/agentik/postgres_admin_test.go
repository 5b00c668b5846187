package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/llmtest"
)

// TestPostgresAdminTwoProcesses: two processes on one PostgreSQL database.
// GET /admin/turns on either lists the turns of both, each with the
// process that runs it; an admin on A cancels a turn queued behind a turn
// B runs, then B's running turn; nobody else learns any admin route exists,
// on either process.
func TestPostgresAdminTwoProcesses(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	gateA, gateB := llmtest.NewGate(), llmtest.NewGate()
	defer gateA.Release()
	defer gateB.Release()
	llm.Handle(func(r llmtest.Request) llmtest.Reply {
		switch r.LastUserText() {
		case "on a":
			return llmtest.Stream().Role().Content("a ").Pause(gateA).Content("done").Finish("stop").Done()
		case "on b":
			return llmtest.Stream().Role().Content("b ").Pause(gateB).Content("never").Finish("stop").Done()
		}
		return echo(r)
	})
	const root, bob = "tok-root-secret", "tok-bob-secret"
	env := pgEnv(pgSchema(t), llm, "AGENTIK_AUTH_TOKENS=root:"+root+",bob:"+bob, "AGENTIK_ADMINS=root")
	pa, pb := startProc(t, env...), startProc(t, env...)
	host, _ := os.Hostname()
	nameA, nameB := host+":"+strconv.Itoa(pa.cmd.Process.Pid), host+":"+strconv.Itoa(pb.cmd.Process.Pid)
	ca := httpapi.NewClient(pa.url+"/agentik", httpapi.WithToken(bob))
	cb := httpapi.NewClient(pb.url+"/agentik", httpapi.WithToken(bob))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// conv1: a turn running on B and one queued behind it; conv2: a turn
	// running on A.
	info1, err := cb.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	conv1B, _ := cb.Conversation(ctx, info1.ID)
	conv1A, _ := ca.Conversation(ctx, info1.ID)
	s1, err := conv1A.Events(ctx, agentik.LiveOnly) // watched from A
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	running := send(t, conv1B, "on b")
	<-gateB.Reached()
	queued, err := conv1A.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("queued")}, IfBusy: agentik.BusyEnqueue})
	if err != nil {
		t.Fatal(err)
	}
	info2, err := ca.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	conv2A, _ := ca.Conversation(ctx, info2.ID)
	s2, err := conv2A.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	onA := send(t, conv2A, "on a")
	<-gateA.Reached()

	// Both processes list the three turns, each with its process.
	type want struct{ replyTo, conv, state, process string }
	wants := map[string]want{
		running.MessageID: {running.MessageID, info1.ID, "running", nameB},
		queued.MessageID:  {queued.MessageID, info1.ID, "queued", nameB},
		onA.MessageID:     {onA.MessageID, info2.ID, "running", nameA},
	}
	for _, p := range []*proc{pa, pb} {
		code, body := adminDo(t, http.MethodGet, p.url+"/admin/turns", root)
		var list struct{ Turns []adminTurn }
		if code != http.StatusOK || json.Unmarshal([]byte(body), &list) != nil || len(list.Turns) != 3 {
			t.Fatalf("admin turns on %s: %d %s", p.url, code, body)
		}
		for _, tr := range list.Turns {
			w := wants[tr.ReplyTo]
			if tr.ConversationID != w.conv || tr.State != w.state || tr.Process != w.process || tr.Principal != "bob" || tr.Agent != "agentik" {
				t.Errorf("on %s: %+v, want %+v", p.url, tr, w)
			}
		}
	}

	// Isolation, on both processes: no token 401, a non-admin 404 exactly
	// as for a route that does not exist, with nothing of the turns.
	for _, p := range []*proc{pa, pb} {
		adminHidden(t, p.url, bob, info1.ID, []adminRoute{
			{http.MethodGet, "/admin/turns"},
			{http.MethodPost, "/admin/turns/" + running.MessageID + "/cancel"},
			{http.MethodPost, "/admin/turns/" + queued.MessageID + "/cancel"},
			{http.MethodGet, "/admin/stats"},
			{http.MethodGet, "/metrics"},
		})
	}

	// On A: withdraw the queued turn, then interrupt the turn B runs.
	for _, id := range []string{queued.MessageID, running.MessageID} {
		code, body := adminDo(t, http.MethodPost, pa.url+"/admin/turns/"+id+"/cancel", root)
		if code != http.StatusOK || !strings.Contains(body, `"cancelled":true`) {
			t.Fatalf("cancel %s on A: %d %s", id, code, body)
		}
	}
	closed := map[string]string{}
	until(t, s1, "both turns of conv1 closed", func(ev agentik.Event) bool {
		if ev.Type == agentik.EvInterrupted {
			closed[ev.ReplyTo] = ev.Reason
		}
		if ev.Type == agentik.EvAssistantMessage && !ev.Message.Interrupted {
			closed[ev.Message.ReplyTo] = "answered"
		}
		return closed[queued.MessageID] != "" && closed[running.MessageID] != ""
	})
	if closed[queued.MessageID] != agentik.ReasonUser || closed[running.MessageID] != agentik.ReasonUser {
		t.Fatalf("conv1 closed %v", closed)
	}
	// Neither was answered, and the model was never asked for the
	// withdrawn one.
	users, answers := closers(t, conv1B)
	if len(users) != 2 || len(answers[running.MessageID]) != 0 || len(answers[queued.MessageID]) != 0 {
		t.Fatalf("conv1 journal: %d users, answers %+v", len(users), answers)
	}
	for _, r := range llm.Requests() {
		if r.LastUserText() == "queued" {
			t.Fatalf("the withdrawn turn reached the model")
		}
	}

	// What is left: A's turn, listed by B.
	code, body := adminDo(t, http.MethodGet, pb.url+"/admin/turns", root)
	var list struct{ Turns []adminTurn }
	if code != http.StatusOK || json.Unmarshal([]byte(body), &list) != nil || len(list.Turns) != 1 ||
		list.Turns[0].ReplyTo != onA.MessageID || list.Turns[0].Process != nameA {
		t.Fatalf("after the cancels, on B: %d %s", code, body)
	}
	gateA.Release()
	until(t, s2, "A's answer", func(ev agentik.Event) bool {
		return ev.Type == agentik.EvAssistantMessage && ev.Message.ReplyTo == onA.MessageID
	})

	// Stats on PostgreSQL: the same from either process.
	var stats [2]adminStats
	for i, p := range []*proc{pa, pb} {
		code, body := adminDo(t, http.MethodGet, p.url+"/admin/stats", root)
		if code != http.StatusOK || json.Unmarshal([]byte(body), &stats[i]) != nil {
			t.Fatalf("stats on %s: %d %s", p.url, code, body)
		}
		st := stats[i]
		if st.Database.Backend != "postgres" || st.Database.Bytes <= 0 || len(st.Agents) != 1 || st.Agents[0].Conversations != 2 ||
			st.Agents[0].OpenTurns != 0 {
			t.Fatalf("stats on %s: %s", p.url, body)
		}
	}
	// Messages: exactly the two journals.
	var journal int64
	for _, c := range []agentik.Conversation{conv1B, conv2A} {
		page, err := c.Messages(ctx, agentik.MessagesRequest{Limit: agentik.MaxMessagesLimit})
		if err != nil {
			t.Fatal(err)
		}
		journal += int64(len(page.Messages))
	}
	if a, b := stats[0].Agents[0], stats[1].Agents[0]; a.Messages != journal || a.Messages != b.Messages || a.Events != b.Events || a.Events < journal {
		t.Errorf("stats: A %+v, B %+v; %d journal messages", a, b, journal)
	}
}
