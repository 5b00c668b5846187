package main

import (
	"context"
	"encoding/json"

	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/webhook"
)

// hookBody is a delivery's JSON body.
type hookBody struct {
	Type string         `json:"type"`
	Data map[string]any `json:"data"`
}

// accepted returns the bodies of the deliveries the receiver took (2xx),
// each checked with webhook.Verify as a receiver would.
func accepted(t *testing.T, r *receiver, secret string) map[string]hookBody {
	t.Helper()
	out := map[string]hookBody{}
	for _, d := range r.deliveries() {
		if d.status >= 300 {
			continue
		}
		if err := webhook.Verify(secret, d.id, d.timestamp, d.signature, d.body, time.Now(), 5*time.Minute); err != nil {
			t.Errorf("delivery %s: %v", d.id, err)
		}
		var b hookBody
		if err := json.Unmarshal(d.body, &b); err != nil {
			t.Errorf("delivery %s: %v: %s", d.id, err, d.body)
		}
		out[d.id] = b
	}
	return out
}

// waitEvent waits until the receiver took an event of type typ of conv.
func waitHook(t *testing.T, r *receiver, secret, typ, conv string) hookBody {
	t.Helper()
	var got hookBody
	waitUntil(t, typ+" delivered", 60*time.Second, func() bool {
		for _, b := range accepted(t, r, secret) {
			if b.Type == typ && b.Data["conversation_id"] == conv {
				got = b
				return true
			}
		}
		return false
	})
	return got
}

// webhookEvents: alice's webhook gets turn.completed, turn.failed,
// turn.interrupted, approval.requested and conversation.deleted of her
// conversation, each signed; bob's conversation's events reach bob's
// webhook only. answer is the receivers' answer to the nth attempt.
func webhookEvents(t *testing.T, llm *llmtest.Server, env []string, answer func(n int) int) (*receiver, *proc) {
	const alice, bob = "alice-token-0123456789", "bob-token-0123456789"
	p := startProc(t, append(env, "AGENTIK_AUTH_TOKENS=alice:"+alice+",bob:"+bob, "AGENTIK_WEBHOOK_ALLOW_PRIVATE=on",
		"AGENTIK_WEBHOOK_FIRST_RETRY=100ms", "AGENTIK_TOOL_APPROVAL=current_time=ask", "AGENTIK_LLM_MAX_RETRIES=0")...)
	base := p.url + "/agentik"
	events := []string{agentik.HookTurnCompleted, agentik.HookTurnFailed, agentik.HookTurnInterrupted,
		agentik.HookApprovalRequested, agentik.HookConversationDeleted}
	ra, rb := newReceiver(answer), newReceiver(answer)
	t.Cleanup(ra.Close)
	t.Cleanup(rb.Close)
	var ha, hb agentik.Webhook
	if st := api(t, "POST", base+"/webhooks", alice, agentik.WebhookRequest{URL: ra.URL, Events: events}, &ha); st != 201 {
		t.Fatalf("alice's webhook: %d", st)
	}
	if st := api(t, "POST", base+"/webhooks", bob, agentik.WebhookRequest{URL: rb.URL, Events: events}, &hb); st != 201 {
		t.Fatalf("bob's webhook: %d", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ca, cb := httpapi.NewClient(base, httpapi.WithToken(alice)), httpapi.NewClient(base, httpapi.WithToken(bob))

	// Bob's turn first (the model's default answer), and his deletion.
	bi, err := cb.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	bc, _ := cb.Conversation(ctx, bi.ID)
	if _, err := bc.Send(ctx, agentik.SendRequest{Content: text("hello")}); err != nil {
		t.Fatal(err)
	}
	waitHook(t, rb, hb.Secret, agentik.HookTurnCompleted, bi.ID)
	if err := cb.DeleteConversation(ctx, bi.ID); err != nil {
		t.Fatal(err)
	}
	waitHook(t, rb, hb.Secret, agentik.HookConversationDeleted, bi.ID)

	ai, err := ca.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ac, _ := ca.Conversation(ctx, ai.ID)
	send := func(s string) {
		t.Helper()
		if _, err := ac.Send(ctx, agentik.SendRequest{Content: text(s)}); err != nil {
			t.Fatal(err)
		}
	}
	llm.Enqueue(llmtest.Text("done"))
	send("one")
	if b := waitHook(t, ra, ha.Secret, agentik.HookTurnCompleted, ai.ID); b.Data["reply_to"] == nil || b.Data["message_id"] == nil {
		t.Errorf("turn.completed: %+v", b)
	}
	llm.Enqueue(llmtest.APIError(400, "invalid_request_error", "bad", "no such thing"))
	send("two")
	waitHook(t, ra, ha.Secret, agentik.HookTurnFailed, ai.ID)
	gate := llmtest.NewGate()
	defer gate.Release()
	llm.Enqueue(llmtest.Stream().Role().Content("half").Pause(gate).Content("rest").Done())
	send("three")
	select {
	case <-gate.Reached():
	case <-ctx.Done():
		t.Fatal("the model was not reached")
	}
	if ok, err := ac.Interrupt(ctx); err != nil || !ok {
		t.Fatalf("interrupt: %v %v", ok, err)
	}
	waitHook(t, ra, ha.Secret, agentik.HookTurnInterrupted, ai.ID)
	llm.Enqueue(llmtest.ToolCalls(llmtest.Call("current_time", "{}")))
	send("four")
	if b := waitHook(t, ra, ha.Secret, agentik.HookApprovalRequested, ai.ID); b.Data["name"] != "current_time" || b.Data["call_id"] == nil {
		t.Errorf("approval.requested: %+v", b)
	}
	if err := ca.DeleteConversation(ctx, ai.ID); err != nil {
		t.Fatal(err)
	}
	waitHook(t, ra, ha.Secret, agentik.HookConversationDeleted, ai.ID)

	// Each receiver has its owner's events only, each once.
	for _, c := range []struct {
		r      *receiver
		secret string
		conv   string
		n      int
	}{{ra, ha.Secret, ai.ID, 5}, {rb, hb.Secret, bi.ID, 2}} {
		got := accepted(t, c.r, c.secret)
		types := map[string]int{}
		for _, b := range got {
			if b.Data["conversation_id"] != c.conv {
				t.Errorf("a delivery of another conversation: %+v", b)
			}
			types[b.Type]++
		}
		if len(got) != c.n {
			t.Errorf("%d deliveries, want %d: %v", len(got), c.n, types)
		}
		for typ, n := range types {
			if n != 1 {
				t.Errorf("%s delivered %d times", typ, n)
			}
		}
	}
	return ra, p
}

// TestWebhookEventsThroughTheOutbox runs webhookEvents on SQLite.
func TestWebhookEventsThroughTheOutbox(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	webhookEvents(t, llm, []string{"AGENTIK_DB_PATH=" + filepath.Join(t.TempDir(), "a.db"), "OPENAI_BASE_URL=" + llm.URL()},
		func(int) int { return http.StatusNoContent })
}

// TestPostgresWebhookEventsThroughTheOutbox runs webhookEvents on
// PostgreSQL with receivers that fail twice: each event is taken on the
// third attempt, all three with the same webhook-id.
func TestPostgresWebhookEventsThroughTheOutbox(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	r, _ := webhookEvents(t, llm, pgEnv(pgSchema(t), llm), func(n int) int {
		if n <= 2 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, n := range r.tries {
		if n != 3 {
			t.Errorf("delivery %s: %d attempts, want 3", id, n)
		}
	}
}

// TestWebhookGoneAndRedirect (SQLite): a receiver's 410 disables its
// webhook (shown by the API; later events write no delivery); a 3xx is not
// followed (its target gets nothing) and, retried until the window ends,
// leaves a failed delivery. The outbox gauges show the pending delivery
// and its age, then nothing.
func TestWebhookGoneAndRedirect(t *testing.T) {
	target := newReceiver(func(int) int { return http.StatusNoContent })
	defer target.Close()
	gone := newReceiver(func(int) int { return http.StatusGone })
	defer gone.Close()
	moved := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/elsewhere", http.StatusTemporaryRedirect)
	}))
	defer moved.Close()
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"), "AGENTIK_WEBHOOK_ALLOW_PRIVATE=on",
		"AGENTIK_WEBHOOK_FIRST_RETRY=200ms", "AGENTIK_WEBHOOK_RETRY_WINDOW=5s")
	base := p.url + "/agentik"
	var hg, hm agentik.Webhook
	for _, h := range []struct {
		url string
		out *agentik.Webhook
	}{{gone.URL, &hg}, {moved.URL, &hm}} {
		if st := api(t, "POST", base+"/webhooks", "", agentik.WebhookRequest{URL: h.url, Events: []string{agentik.HookConversationCreated}}, h.out); st != 201 {
			t.Fatalf("webhook: %d", st)
		}
	}
	if st := api(t, "POST", base+"/conversations", "", map[string]any{}, nil); st != 201 {
		t.Fatal(st)
	}
	// While the redirect is retried (a window of 5 s), its delivery is
	// pending and ages.
	waitUntil(t, "a pending delivery with an age", 30*time.Second, func() bool {
		m := scrape(t, p.url+"/metrics", "")
		return value(m, "agentik_webhook_outbox_depth", nil) >= 1 && value(m, "agentik_webhook_outbox_oldest_age_seconds", nil) > 0
	})
	var got agentik.Webhook
	waitUntil(t, "the 410 to disable the webhook", 60*time.Second, func() bool {
		got = agentik.Webhook{}
		api(t, "GET", base+"/webhooks/"+hg.ID, "", nil, &got)
		return !got.Enabled
	})
	if got.DisabledReason == "" {
		t.Errorf("disabled without a reason: %+v", got)
	}
	if st := api(t, "POST", base+"/conversations", "", map[string]any{}, nil); st != 201 {
		t.Fatal(st)
	}
	var log deliveriesPage
	waitUntil(t, "the redirected deliveries to fail", 60*time.Second, func() bool {
		log = deliveriesPage{}
		api(t, "GET", base+"/webhooks/"+hm.ID+"/deliveries", "", nil, &log)
		if len(log.Deliveries) != 2 {
			return false
		}
		for _, d := range log.Deliveries {
			if d.Status == agentik.DeliveryPending {
				return false
			}
		}
		return true
	})
	for _, d := range log.Deliveries {
		if d.Status != agentik.DeliveryFailed || d.LastStatus != http.StatusTemporaryRedirect || d.Attempts < 1 {
			t.Errorf("redirected delivery: %+v", d)
		}
	}
	if n := len(target.deliveries()); n != 0 {
		t.Errorf("the redirect was followed: its target got %d requests", n)
	}
	var glog deliveriesPage
	api(t, "GET", base+"/webhooks/"+hg.ID+"/deliveries", "", nil, &glog)
	if len(glog.Deliveries) != 1 || glog.Deliveries[0].LastStatus != http.StatusGone || glog.Deliveries[0].Status == agentik.DeliveryDelivered {
		t.Errorf("the disabled webhook's deliveries: %+v", glog.Deliveries)
	}
	if n := len(gone.deliveries()); n != 1 {
		t.Errorf("the 410 receiver got %d requests, want 1", n)
	}
	m := scrape(t, p.url+"/metrics", "")
	if d, a := value(m, "agentik_webhook_outbox_depth", nil), value(m, "agentik_webhook_outbox_oldest_age_seconds", nil); d != 0 || a != 0 {
		t.Errorf("outbox after: depth %v, oldest age %v", d, a)
	}
	if v := value(m, "agentik_webhook_deliveries_total", map[string]string{"outcome": "disabled"}); v != 1 {
		t.Errorf("deliveries disabled: %v", v)
	}
}

// TestScheduleCatchUpAfterRestart (SQLite): two 2 s schedules made, then
// the process killed before their first due time; started again once
// several due times have passed, the catch_up: one schedule runs once for
// them (its first due time, then on the grid after the restart), the
// catch_up: none one records skipped and sends nothing for them.
func TestScheduleCatchUpAfterRestart(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	env := []string{"AGENTIK_DB_PATH=" + filepath.Join(t.TempDir(), "a.db"), "OPENAI_BASE_URL=" + llm.URL(),
		"AGENTIK_SCHEDULE_MIN_INTERVAL=1s", "AGENTIK_SCHEDULE_LEASE=1s"}
	p := startProc(t, env...)
	base := p.url + "/agentik"
	ids := map[string]string{}
	convs := map[string]string{}
	for _, mode := range []string{agentik.CatchUpOne, agentik.CatchUpNone} {
		var conv agentik.ConversationInfo
		if st := api(t, "POST", base+"/conversations", "", map[string]any{}, &conv); st != 201 {
			t.Fatal(st)
		}
		var sc agentik.Schedule
		if st := api(t, "POST", base+"/schedules", "", map[string]any{"every": "4s", "catch_up": mode, "content": text(mode), "conversation_id": conv.ID}, &sc); st != 201 {
			t.Fatalf("create: %d", st)
		}
		ids[mode], convs[mode] = sc.ID, conv.ID
	}
	stopped := time.Now()
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	// Three due times of each pass with no process (the clock, not a
	// synchronisation, is waited for).
	time.Sleep(time.Until(stopped.Add(13 * time.Second)))
	restart := time.Now()
	p = startProc(t, env...)
	base = p.url + "/agentik"
	runsOf := func(mode string) []agentik.ScheduleRun {
		var page runsPage
		api(t, "GET", base+"/schedules/"+ids[mode]+"/runs", "", nil, &page)
		return page.Runs
	}
	missed := func(mode string) (out []agentik.ScheduleRun) {
		for _, r := range runsOf(mode) {
			if r.DueAt.Before(restart) {
				out = append(out, r)
			}
		}
		return out
	}
	waitUntil(t, "the catch-up runs", 60*time.Second, func() bool {
		a, b := missed(agentik.CatchUpOne), missed(agentik.CatchUpNone)
		return len(a) > 0 && a[0].Outcome != agentik.RunClaimed && len(b) > 0 && b[0].Outcome != agentik.RunClaimed
	})
	for _, mode := range []string{agentik.CatchUpOne, agentik.CatchUpNone} {
		if st := api(t, "PATCH", base+"/schedules/"+ids[mode], "", map[string]any{"enabled": false}, nil); st != 200 {
			t.Fatalf("disable: %d", st)
		}
	}
	one, none := missed(agentik.CatchUpOne), missed(agentik.CatchUpNone)
	if len(one) != 1 || one[0].Outcome != agentik.RunSent || one[0].ClaimedAt.Before(restart) {
		t.Errorf("catch_up one: %+v", one)
	}
	if len(none) != 1 || none[0].Outcome != agentik.RunSkipped || none[0].MessageID != "" {
		t.Errorf("catch_up none: %+v", none)
	}
	msgs := scheduledMessages(t, httpapi.NewClient(base), convs[agentik.CatchUpNone], ids[agentik.CatchUpNone])
	for _, run := range msgs {
		if len(none) == 1 && run == none[0].ID {
			t.Errorf("the skipped run sent a message")
		}
	}
	if msgs := scheduledMessages(t, httpapi.NewClient(base), convs[agentik.CatchUpOne], ids[agentik.CatchUpOne]); len(one) == 1 && msgs[one[0].MessageID] != one[0].ID {
		t.Errorf("the catch-up run's message: %v", msgs)
	}
	m := scrape(t, p.url+"/metrics", "")
	if v := value(m, "agentik_schedule_runs_total", map[string]string{"outcome": "skipped"}); v != 1 {
		t.Errorf("runs skipped: %v", v)
	}
	if v := value(m, "agentik_schedule_runs_total", map[string]string{"outcome": "sent"}); v < 1 {
		t.Errorf("runs sent: %v", v)
	}
}

// TestScheduleFromTheConfigFile (SQLite): a schedule of the config file
// fires (a sent run, counted), is listed to its principal, and the API
// refuses to change or delete it (409); nothing changed.
func TestScheduleFromTheConfigFile(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	dir := t.TempDir()
	file := filepath.Join(dir, "agentik.yaml")
	cfg := `agents:
  - id: main
    schedules:
      - name: tick
        every: 1s
        text: from the file
`
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, "AGENTIK_CONFIG="+file, "AGENTIK_DB_PATH="+filepath.Join(dir, "a.db"), "OPENAI_BASE_URL="+llm.URL(),
		"AGENTIK_SCHEDULE_MIN_INTERVAL=1s")
	base := p.url + "/agentik"
	var list struct{ Schedules []agentik.Schedule }
	if api(t, "GET", base+"/schedules", "", nil, &list); len(list.Schedules) != 1 || list.Schedules[0].Source == agentik.SourceAPI {
		t.Fatalf("schedules: %+v", list.Schedules)
	}
	sc := list.Schedules[0]
	waitUntil(t, "a run of the file's schedule", 60*time.Second, func() bool {
		var page runsPage
		api(t, "GET", base+"/schedules/"+sc.ID+"/runs", "", nil, &page)
		for _, r := range page.Runs {
			if r.Outcome == agentik.RunSent {
				return true
			}
		}
		return false
	})
	if v := value(scrape(t, p.url+"/metrics", ""), "agentik_schedule_runs_total", map[string]string{"outcome": "sent"}); v < 1 {
		t.Errorf("runs sent: %v", v)
	}
	if st := api(t, "PATCH", base+"/schedules/"+sc.ID, "", map[string]any{"every": "1h"}, nil); st != 409 {
		t.Errorf("PATCH of the file's schedule: %d, want 409", st)
	}
	if st := api(t, "DELETE", base+"/schedules/"+sc.ID, "", nil, nil); st != 409 {
		t.Errorf("DELETE of the file's schedule: %d, want 409", st)
	}
	var after agentik.Schedule
	if st := api(t, "GET", base+"/schedules/"+sc.ID, "", nil, &after); st != 200 || after.Every != "1s" || !after.Enabled {
		t.Errorf("the file's schedule after: %d %+v", st, after)
	}
}

// TestSchedulesOfAnotherPrincipal (SQLite): bob's PATCH and run of alice's
// schedule and DELETE of her webhook are 404 and change nothing; a 429 at
// the limit stores nothing; a cron whose runs come closer than the minimum
// interval is 422.
func TestSchedulesOfAnotherPrincipal(t *testing.T) {
	const alice, bob = "alice-token-0123456789", "bob-token-0123456789"
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"), "AGENTIK_AUTH_TOKENS=alice:"+alice+",bob:"+bob,
		"AGENTIK_SCHEDULE_MIN_INTERVAL=5m", "AGENTIK_SCHEDULE_LIMIT=2", "AGENTIK_WEBHOOK_ALLOW_PRIVATE=on")
	base := p.url + "/agentik"
	for _, cron := range []string{"*/2 * * * *", "0,1 8 * * *", "* * * * *"} {
		if st := api(t, "POST", base+"/schedules", alice, map[string]any{"cron": cron, "content": text("x")}, nil); st != 422 {
			t.Errorf("cron %q: %d, want 422", cron, st)
		}
	}
	var sc agentik.Schedule
	// Yearly, so that it cannot fire on its own while the test runs and
	// make a run of its own (a */5 did at a five-minute boundary elsewhere).
	if st := api(t, "POST", base+"/schedules", alice, map[string]any{"cron": "0 0 1 1 *", "content": text("x")}, &sc); st != 201 {
		t.Fatalf("create: %d", st)
	}
	var hook agentik.Webhook
	if st := api(t, "POST", base+"/webhooks", alice, agentik.WebhookRequest{URL: "http://127.0.0.1:9/x", Events: []string{agentik.HookTurnCompleted}}, &hook); st != 201 {
		t.Fatalf("webhook: %d", st)
	}
	for _, c := range []struct{ method, path string }{
		{"PATCH", "/schedules/" + sc.ID}, {"POST", "/schedules/" + sc.ID + "/run"}, {"DELETE", "/webhooks/" + hook.ID},
	} {
		var body any
		if c.method == "PATCH" {
			body = map[string]any{"enabled": false, "every": "1h"}
		}
		if st := api(t, c.method, base+c.path, bob, body, nil); st != 404 {
			t.Errorf("bob %s %s: %d, want 404", c.method, c.path, st)
		}
	}
	var after agentik.Schedule
	api(t, "GET", base+"/schedules/"+sc.ID, alice, nil, &after)
	if !after.Enabled || after.Cron != sc.Cron || after.Every != "" {
		t.Errorf("alice's schedule after bob: %+v", after)
	}
	var runs runsPage
	if api(t, "GET", base+"/schedules/"+sc.ID+"/runs", alice, nil, &runs); len(runs.Runs) != 0 {
		t.Errorf("bob's run made runs: %+v", runs.Runs)
	}
	if st := api(t, "GET", base+"/webhooks/"+hook.ID, alice, nil, nil); st != 200 {
		t.Errorf("alice's webhook after bob's DELETE: %d", st)
	}
	if st := api(t, "POST", base+"/schedules", alice, map[string]any{"every": "1h", "content": text("y")}, nil); st != 201 {
		t.Fatalf("second: %d", st)
	}
	if st := api(t, "POST", base+"/schedules", alice, map[string]any{"every": "2h", "content": text("z")}, nil); st != 429 {
		t.Fatalf("over the limit: %d, want 429", st)
	}
	var list struct{ Schedules []agentik.Schedule }
	api(t, "GET", base+"/schedules", alice, nil, &list)
	if len(list.Schedules) != 2 {
		t.Errorf("%d schedules after the 429, want 2", len(list.Schedules))
	}
	for _, s := range list.Schedules {
		if s.Every == "2h" {
			t.Errorf("the refused schedule was stored: %+v", s)
		}
	}

}
