package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/llmtest"
)

// memoryConfig is an agent with three blocks: persona read-only, human
// with a small limit, notes empty.
const memoryConfig = `auth:
  tokens:
    - {principal: alice, token_env: ALICE_TOKEN}
    - {principal: bob, token_env: BOB_TOKEN}
agents:
  - id: helper
    model: {base_url: "%s", model: echo}
    memory:
      enabled: true
      blocks:
        - {label: persona, value: "I am the helper & I keep <notes>.", description: Who you are, read_only: true}
        - {label: human, description: About the person, limit: 40}
        - {label: notes}
`

const aliceMem, bobMem = "alice-memory-0123456789", "bob-memory-0123456789"

type memList struct {
	Scope  string                `json:"scope"`
	Blocks []agentik.MemoryBlock `json:"blocks"`
}

type memHistory struct {
	History []agentik.MemoryHistoryEntry `json:"history"`
}

// echoSystem makes the model answer with its system context, so a test
// reads what the model was shown.
func echoSystem(llm *llmtest.Server) {
	llm.Handle(func(r llmtest.Request) llmtest.Reply { return llmtest.Text(r.Messages[0].Text()) })
}

// turn sends text in conversation id (a new one when "") as token's
// principal and returns the conversation and the last assistant answer.
func turn(t *testing.T, base, token, id, text string) (string, string) {
	t.Helper()
	ctx := context.Background()
	c := httpapi.NewClient(base, httpapi.WithToken(token))
	if id == "" {
		info, err := c.CreateConversation(ctx, agentik.CreateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		id = info.ID
	}
	conv, err := c.Conversation(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	s, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res := send(t, conv, text)
	answer := ""
	until(t, s, "the turn's end", func(ev agentik.Event) bool {
		if ev.Type == agentik.EvAssistantMessage && ev.Message != nil {
			answer = agentik.JoinText(ev.Message.Content)
		}
		return ev.Type == agentik.EvEnd && ev.ReplyTo == res.MessageID
	})
	return id, answer
}

func memBlock(t *testing.T, base, token, label string) agentik.MemoryBlock {
	t.Helper()
	var b agentik.MemoryBlock
	if code := api(t, "GET", base+"/memory/blocks/"+label, token, nil, &b); code != 200 {
		t.Fatalf("GET block %s: %d", label, code)
	}
	return b
}

// TestMemoryThroughTheAPI runs the real binary on SQLite and on
// PostgreSQL: the model sees the blocks in a new conversation, the
// agent's tool edits persist across a restart and reach the next model
// call, the history tells who changed what, bad input changes nothing and
// another principal neither reads nor changes nor sees alice's blocks.
func TestMemoryThroughTheAPI(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		testMemoryAPI(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "m.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		testMemoryAPI(t, "AGENTIK_DATABASE_URL="+pgSchema(t))
	})
}

func testMemoryAPI(t *testing.T, db string) {
	llm := llmtest.NewServer()
	defer llm.Close()
	echoSystem(llm)
	file := filepath.Join(t.TempDir(), "agentik.yaml")
	os.WriteFile(file, []byte(fmt.Sprintf(memoryConfig, llm.URL())), 0o600)
	env := []string{db, "AGENTIK_CONFIG=" + file, "ALICE_TOKEN=" + aliceMem, "BOB_TOKEN=" + bobMem}
	p := startProc(t, env...)
	base := p.url + "/agents/helper"

	// The configuration's blocks, seen by a principal who never had memory.
	var list memList
	if code := api(t, "GET", base+"/memory", aliceMem, nil, &list); code != 200 || list.Scope != "principal" || len(list.Blocks) != 3 ||
		list.Blocks[0].Value != "I am the helper & I keep <notes>." || !list.Blocks[0].ReadOnly || list.Blocks[1].Limit != 40 || list.Blocks[2].Limit != 5000 {
		t.Fatalf("alice's first blocks: %d %+v", code, list)
	}
	if code := api(t, "PUT", base+"/memory/blocks/human", aliceMem, map[string]any{"value": "Alice likes tea."}, nil); code != 200 {
		t.Fatalf("PUT human: %d\n%s", code, p.log())
	}
	_, answer := turn(t, base, aliceMem, "", "hello")
	for _, want := range []string{`<block label="persona" description="Who you are"`, "I am the helper &amp; I keep &lt;notes&gt;.",
		`<block label="human" description="About the person" chars="16/40">Alice likes tea.</block>`} {
		if !strings.Contains(answer, want) {
			t.Fatalf("the model was not shown %q:\n%s", want, answer)
		}
	}

	// The agent edits human with its tools; the next model call of the
	// same turn sees the edit. A replace that does not match and an
	// append to the read-only block are tool errors the model sees.
	llm.Enqueue(llmtest.ToolCalls(
		llmtest.Call("memory_append", `{"label":"human","text":"Lives in Lyon."}`),
		llmtest.Call("memory_replace", `{"label":"human","old_text":"coffee","new_text":"water"}`),
		llmtest.Call("memory_append", `{"label":"persona","text":"I am evil."}`),
		llmtest.Call("memory_append", `{"label":"nope","text":"x"}`),
	))
	conv, answer := turn(t, base, aliceMem, "", "remember where I live")
	if !strings.Contains(answer, "Alice likes tea.\nLives in Lyon.</block>") {
		t.Fatalf("the next model call did not see the agent's edit:\n%s", answer)
	}
	reqs := llm.Requests()
	var results []string
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == "tool" {
			results = append(results, m.Text())
		}
	}
	if len(results) != 4 || !strings.Contains(results[0], "now holds 31 of 40") || !strings.Contains(results[1], "does not occur") ||
		!strings.Contains(results[2], "read-only") || !strings.Contains(results[3], "no memory block") {
		t.Fatalf("tool results: %q", results)
	}
	var hist memHistory
	if code := api(t, "GET", base+"/memory/blocks/human/history", aliceMem, nil, &hist); code != 200 || len(hist.History) != 2 ||
		hist.History[0].By != "agent" || hist.History[0].ConversationID != conv || hist.History[0].OldValue != "Alice likes tea." ||
		hist.History[1].By != "alice" || hist.History[1].OldValue != "" || hist.History[1].NewValue != "Alice likes tea." {
		t.Fatalf("history: %d %+v", code, hist)
	}

	memoryBadInput(t, base)
	memoryIsolation(t, base)
	agentEventIsolation(t, base)

	// A restart keeps the agent's edit, and a new conversation sees it.
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.done
	p = startProc(t, env...)
	base = p.url + "/agents/helper"
	if b := memBlock(t, base, aliceMem, "human"); b.Value != "Alice likes tea.\nLives in Lyon." || b.UpdatedBy != "agent" {
		t.Fatalf("after the restart: %+v", b)
	}
	if _, answer := turn(t, base, aliceMem, "", "again"); !strings.Contains(answer, "Lives in Lyon.") {
		t.Fatalf("after the restart the model was not shown the edit:\n%s", answer)
	}

	// DELETE of a block gives it the configuration's value again; DELETE
	// of the memory forgets the caller's, history included.
	if code := api(t, "DELETE", base+"/memory/blocks/human", aliceMem, nil, nil); code != 200 || memBlock(t, base, aliceMem, "human").Value != "" {
		t.Fatalf("reset: %d", code)
	}
	api(t, "PUT", base+"/memory/blocks/notes", aliceMem, map[string]any{"value": "n"}, nil)
	if code := api(t, "DELETE", base+"/memory", aliceMem, nil, nil); code != 204 {
		t.Fatalf("forget: %d", code)
	}
	api(t, "GET", base+"/memory/blocks/human/history", aliceMem, nil, &hist)
	if len(hist.History) != 0 || memBlock(t, base, aliceMem, "notes").Value != "" {
		t.Fatalf("forgotten memory remains: %+v", hist)
	}
}

// memoryBadInput: over the limit (413), not a string (422), read-only
// (409), unknown label (404), malformed (400): each refused in the native
// error envelope, nothing changed.
func memoryBadInput(t *testing.T, base string) {
	t.Helper()
	before := memBlock(t, base, aliceMem, "human")
	for _, tc := range []struct {
		method, label string
		body          any
		want          int
	}{
		{"PUT", "human", map[string]any{"value": strings.Repeat("é", 41)}, 413},
		{"PUT", "human", map[string]any{"value": 5}, 422},
		{"PUT", "human", map[string]any{"value": "a\u0000b"}, 422},
		{"PUT", "human", map[string]any{"value": nil}, 422},
		{"PUT", "human", map[string]any{}, 422},
		{"PUT", "human", `{"value":"x"`, 400},
		{"PUT", "human", `["x"]`, 422},
		{"PUT", "persona", map[string]any{"value": "I am evil."}, 409},
		{"DELETE", "persona", nil, 409},
		{"PUT", "nope", map[string]any{"value": "x"}, 404},
		{"PUT", "..%2Fhuman", map[string]any{"value": "x"}, 404},
		{"GET", "nope", nil, 404},
		{"GET", "nope/history", nil, 404},
	} {
		if code := api(t, tc.method, base+"/memory/blocks/"+tc.label, aliceMem, tc.body, nil); code != tc.want {
			t.Errorf("%s %s %v: %d, want %d", tc.method, tc.label, tc.body, code, tc.want)
		}
	}
	if after := memBlock(t, base, aliceMem, "human"); after != before {
		t.Fatalf("bad input changed the block: %+v → %+v", before, after)
	}
	if b := memBlock(t, base, aliceMem, "persona"); b.Value != "I am the helper & I keep <notes>." {
		t.Fatalf("read-only block changed: %+v", b)
	}
	if code := api(t, "GET", base+"/memory", "", nil, nil); code != 401 {
		t.Fatalf("without a token: %d", code)
	}
}

// memoryIsolation: bob, a second tenant, sees the configuration's blocks
// and his own changes, never alice's: not through the API, not in his
// turns, not in the history; his changes leave alice's blocks alone.
func memoryIsolation(t *testing.T, base string) {
	t.Helper()
	alice := memBlock(t, base, aliceMem, "human")
	if b := memBlock(t, base, bobMem, "human"); b.Value != "" || b.UpdatedBy != "" {
		t.Fatalf("bob reads alice's block: %+v", b)
	}
	var hist memHistory
	if code := api(t, "GET", base+"/memory/blocks/human/history", bobMem, nil, &hist); code != 200 || len(hist.History) != 0 {
		t.Fatalf("bob reads alice's history: %d %+v", code, hist)
	}
	if _, answer := turn(t, base, bobMem, "", "what do you know about alice?"); strings.Contains(answer, "tea") || strings.Contains(answer, "Lyon") {
		t.Fatalf("bob's turn saw alice's memory:\n%s", answer)
	}
	if code := api(t, "PUT", base+"/memory/blocks/human", bobMem, map[string]any{"value": "Bob."}, nil); code != 200 {
		t.Fatalf("bob's PUT: %d", code)
	}
	if code := api(t, "DELETE", base+"/memory", bobMem, nil, nil); code != 204 {
		t.Fatalf("bob's forget: %d", code)
	}
	if b := memBlock(t, base, aliceMem, "human"); b != alice {
		t.Fatalf("bob changed alice's block: %+v → %+v", alice, b)
	}
}

// agentEventIsolation: bob's agent event stream, live and replayed from
// the start, carries none of alice's events — her memory_updated (hers
// and the agent's in her turns), her conversations' created and touched —
// while alice changes a block, creates a conversation and sets its state;
// bob's own memory_updated, committed after them, tells that his live
// stream has caught up with them. Alice's stream has her change.
func agentEventIsolation(t *testing.T, base string) {
	t.Helper()
	ctx := context.Background()
	alice := httpapi.NewClient(base, httpapi.WithToken(aliceMem))
	bob := httpapi.NewClient(base, httpapi.WithToken(bobMem))
	aliceEvents, err := alice.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer aliceEvents.Close()
	bobLive, err := bob.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer bobLive.Close()

	if code := api(t, "PUT", base+"/memory/blocks/notes", aliceMem, map[string]any{"value": "alice's note"}, nil); code != 200 {
		t.Fatalf("alice's PUT: %d", code)
	}
	info, err := alice.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if st, body := call(t, "PUT", base+"/conversations/"+info.ID+"/state", aliceMem, "application/json", `{"secret":"alice"}`); st != 200 {
		t.Fatalf("alice's state PUT: %d %s", st, body)
	}
	waitAgent(t, aliceEvents, "alice's memory_updated", func(ev agentik.AgentEvent) bool {
		return ev.Type == agentik.AgentEvMemoryUpdated && ev.Label == "notes" && ev.By == "alice"
	})
	if code := api(t, "PUT", base+"/memory/blocks/notes", bobMem, map[string]any{"value": "bob's note"}, nil); code != 200 {
		t.Fatalf("bob's PUT: %d", code)
	}
	bobsMarker := func(ev agentik.AgentEvent) bool {
		return ev.Type == agentik.AgentEvMemoryUpdated && ev.Label == "notes" && ev.By == "bob"
	}
	if seen := waitAgent(t, bobLive, "bob's memory_updated", bobsMarker); len(seen) != 1 {
		t.Fatalf("bob's live agent events before his change: %+v", seen)
	}

	// Replayed from the start: bob's own events only (his conversation
	// and his changes), none of alice's.
	bobAll, err := bob.Events(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer bobAll.Close()
	aliceConvs, err := alice.ListConversations(ctx, agentik.ListRequest{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	hers := map[string]bool{}
	for _, c := range aliceConvs.Conversations {
		hers[c.ID] = true
	}
	for _, ev := range waitAgent(t, bobAll, "bob's replayed memory_updated", bobsMarker) {
		if hers[ev.ConversationID] || (ev.Conversation != nil && hers[ev.Conversation.ID]) ||
			(ev.Type == agentik.AgentEvMemoryUpdated && ev.By != "bob" && ev.By != agentik.MemoryByAgent) {
			t.Fatalf("bob's replayed agent events carry alice's: %+v", ev)
		}
	}
}

// TestPostgresMemoryAcrossProcesses: alice changes a block through
// process A; once B's agent-event stream has the memory_updated, B's next
// model call shows the new value (B had the old one cached from a turn
// before), and the event names the block and who changed it.
func TestPostgresMemoryAcrossProcesses(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	echoSystem(llm)
	ps, _ := pgProcs(t, llm, 2, "AGENTIK_MEMORY=on", "AGENTIK_AUTH_TOKENS=alice:"+aliceMem)
	a, b := ps[0].url+"/agentik", ps[1].url+"/agentik"
	if _, answer := turn(t, b, aliceMem, "", "hello"); !strings.Contains(answer, `<block label="human"`) || strings.Contains(answer, "Rome") {
		t.Fatalf("B's first context:\n%s", answer)
	}
	ctx := context.Background()
	events, err := httpapi.NewClient(b, httpapi.WithToken(aliceMem)).Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	if code := api(t, "PUT", a+"/memory/blocks/human", aliceMem, map[string]any{"value": "Alice moved to Rome."}, nil); code != 200 {
		t.Fatalf("PUT on A: %d", code)
	}
	seen := false
	for ev := range events.C() {
		if ev.Type == agentik.AgentEvMemoryUpdated {
			if ev.Label != "human" || ev.By != "alice" || ev.Cursor == 0 {
				t.Fatalf("event %+v", ev)
			}
			seen = true
			break
		}
	}
	if !seen {
		t.Fatalf("B's agent events ended without memory_updated: %v", events.Err())
	}
	if _, answer := turn(t, b, aliceMem, "", "where do I live?"); !strings.Contains(answer, "Alice moved to Rome.") {
		t.Fatalf("B's next model call did not see A's change:\n%s", answer)
	}
}

// TestMemoryToolApproval runs the real binary with an approval policy
// that asks for memory_*: the agent's memory_append waits for a person
// (listed as pending, the block unchanged, no history), is applied once
// approved through the native API (the block, its history, alice's
// memory_updated agent event and the next model call show it), and a
// denied memory_replace leaves the block and its history as they were.
func TestMemoryToolApproval(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		testMemoryApproval(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "m.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		testMemoryApproval(t, "AGENTIK_DATABASE_URL="+pgSchema(t))
	})
}

func testMemoryApproval(t *testing.T, db string) {
	llm := llmtest.NewServer()
	defer llm.Close()
	echoSystem(llm)
	file := filepath.Join(t.TempDir(), "agentik.yaml")
	cfg := fmt.Sprintf(memoryConfig, llm.URL()) + "    approval: {\"memory_*\": ask}\n"
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, db, "AGENTIK_CONFIG="+file, "ALICE_TOKEN="+aliceMem, "BOB_TOKEN="+bobMem)
	base := p.url + "/agents/helper"
	ctx := context.Background()
	c := httpapi.NewClient(base, httpapi.WithToken(aliceMem))
	info, err := c.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	conv, err := c.Conversation(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	s, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	agentEvents, err := c.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer agentEvents.Close()
	approvals := base + "/conversations/" + info.ID + "/approvals"
	unchanged := func(when string, value string, history int) {
		t.Helper()
		var hist memHistory
		if b := memBlock(t, base, aliceMem, "human"); b.Value != value {
			t.Fatalf("%s: the block is %q, want %q", when, b.Value, value)
		}
		if code := api(t, "GET", base+"/memory/blocks/human/history", aliceMem, nil, &hist); code != 200 || len(hist.History) != history {
			t.Fatalf("%s: history %d %+v, want %d entries", when, code, hist, history)
		}
	}
	// ask sends text, whose model answer is call, and returns once the
	// call waits, after checking that it is the one pending approval.
	ask := func(text string, call llmtest.CallSpec) agentik.SendResult {
		t.Helper()
		llm.Enqueue(llmtest.ToolCalls(call))
		res := send(t, conv, text)
		until(t, s, "awaiting_approval for "+text, func(ev agentik.Event) bool { return ev.Type == agentik.EvAwaitingApproval })
		var pending struct {
			Approvals []agentik.PendingApproval `json:"approvals"`
		}
		if code := api(t, "GET", approvals, aliceMem, nil, &pending); code != 200 || len(pending.Approvals) != 1 ||
			pending.Approvals[0].CallID != call.ID || pending.Approvals[0].Name != call.Name || pending.Approvals[0].ReplyTo != res.MessageID {
			t.Fatalf("pending approvals for %s: %d %+v", text, code, pending)
		}
		return res
	}

	res := ask("remember Lyon", llmtest.Call("memory_append", `{"label":"human","text":"Lives in Lyon."}`).WithID("call_yes"))
	unchanged("while memory_append waits", "", 0)
	if code := api(t, "POST", approvals+"/call_yes", aliceMem, map[string]any{"approved": true}, nil); code != 200 {
		t.Fatalf("approve: %d\n%s", code, p.log())
	}
	answer := ""
	until(t, s, "the approved turn's end", func(ev agentik.Event) bool {
		if ev.Type == agentik.EvAssistantMessage && ev.Message != nil {
			answer = agentik.JoinText(ev.Message.Content)
		}
		return ev.Type == agentik.EvEnd && ev.ReplyTo == res.MessageID
	})
	if !strings.Contains(answer, ">Lives in Lyon.</block>") {
		t.Fatalf("the model call after the approved append did not see it:\n%s", answer)
	}
	var hist memHistory
	if code := api(t, "GET", base+"/memory/blocks/human/history", aliceMem, nil, &hist); code != 200 || len(hist.History) != 1 ||
		hist.History[0].By != agentik.MemoryByAgent || hist.History[0].ConversationID != info.ID || hist.History[0].NewValue != "Lives in Lyon." {
		t.Fatalf("history after the approval: %d %+v", code, hist)
	}
	if b := memBlock(t, base, aliceMem, "human"); b.Value != "Lives in Lyon." || b.UpdatedBy != agentik.MemoryByAgent {
		t.Fatalf("the block after the approval: %+v", b)
	}
	waitAgent(t, agentEvents, "alice's memory_updated", func(ev agentik.AgentEvent) bool {
		return ev.Type == agentik.AgentEvMemoryUpdated && ev.Label == "human" && ev.By == agentik.MemoryByAgent && ev.ConversationID == info.ID
	})

	// Denied: the call's result says so, and nothing changes.
	res = ask("move me to Paris", llmtest.Call("memory_replace", `{"label":"human","old_text":"Lyon","new_text":"Paris"}`).WithID("call_no"))
	if code := api(t, "POST", approvals+"/call_no", aliceMem, map[string]any{"approved": false, "reason": "stay"}, nil); code != 200 {
		t.Fatalf("deny: %d", code)
	}
	until(t, s, "the denied turn's end", func(ev agentik.Event) bool { return ev.Type == agentik.EvEnd && ev.ReplyTo == res.MessageID })
	unchanged("after the denial", "Lives in Lyon.", 1)
	reqs := llm.Requests()
	if last := reqs[len(reqs)-1].Messages; last[len(last)-1].Role != "tool" || !strings.Contains(last[len(last)-1].Text(), "denied by the user: stay") {
		t.Fatalf("the model was not told of the denial: %+v", last[len(last)-1])
	}
}

// waitAgent reads agent events until one satisfies ok, failing after 30s;
// it returns the events read, that one included.
func waitAgent(t *testing.T, s agentik.Stream[agentik.AgentEvent], what string, ok func(agentik.AgentEvent) bool) []agentik.AgentEvent {
	t.Helper()
	var seen []agentik.AgentEvent
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev, open := <-s.C():
			if !open {
				t.Fatalf("agent events ended before %s: %v", what, s.Err())
			}
			seen = append(seen, ev)
			if ok(ev) {
				return seen
			}
		case <-deadline:
			t.Fatalf("no %s within 30s; saw %+v", what, seen)
		}
	}
}
