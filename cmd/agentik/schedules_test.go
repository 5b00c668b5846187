package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/schedule"
	"github.com/agentik/agentik/webhook"
)

// api calls the native API as a client would, with token (if any), and
// decodes the JSON answer into out (if any); it returns the status.
func api(t *testing.T, method, url, token string, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		if s, ok := body.(string); ok {
			b = []byte(s)
		}
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, url, err, b)
		}
	}
	if resp.StatusCode >= 300 && !json.Valid(b) {
		t.Fatalf("%s %s: %d with a body that is not JSON: %s", method, url, resp.StatusCode, b)
	}
	return resp.StatusCode
}

// waitUntil polls cond until it holds (a safety-net deadline only).
func waitUntil(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// delivery is one request a receiver got.
type delivery struct {
	id, timestamp, signature string
	body                     []byte
	status                   int
}

// receiver is a webhook receiver on a real listener: answer says the
// status of the nth attempt (from 1) of a webhook-id.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	tries  map[string]int
	got    []delivery
	answer func(n int) int
}

func newReceiver(answer func(n int) int) *receiver {
	r := &receiver{tries: map[string]int{}, answer: answer}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		id := req.Header.Get("webhook-id")
		r.tries[id]++
		status := r.answer(r.tries[id])
		r.got = append(r.got, delivery{id, req.Header.Get("webhook-timestamp"), req.Header.Get("webhook-signature"), b, status})
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	return r
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

type runsPage struct {
	Runs []agentik.ScheduleRun `json:"runs"`
}

type deliveriesPage struct {
	Deliveries []agentik.Delivery `json:"deliveries"`
}

func text(s string) []agentik.Content { return []agentik.Content{agentik.Text(s)} }

// TestSchedulesAndWebhooksThroughTheAPI runs the real binary on SQLite: a
// 1 s schedule (the minimum lowered) fires into alice's conversation once
// per due time, each run a user message with origin schedule, listed with
// its conversation and outcome; a webhook's receiver that fails twice gets
// every delivery on the third try, with a signature it verifies; bad input
// and another principal's ids are refused and store nothing.
func TestSchedulesAndWebhooksThroughTheAPI(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	const alice, bob = "alice-token-0123456789", "bob-token-0123456789"
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"), "OPENAI_BASE_URL="+llm.URL(),
		"AGENTIK_AUTH_TOKENS=alice:"+alice+",bob:"+bob, "AGENTIK_SCHEDULE_MIN_INTERVAL=1s", "AGENTIK_SCHEDULE_LIMIT=3",
		"AGENTIK_WEBHOOK_ALLOW_PRIVATE=on", "AGENTIK_WEBHOOK_FIRST_RETRY=100ms")
	base := p.url + "/agentik"
	recv := newReceiver(func(n int) int {
		if n <= 2 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	defer recv.Close()

	var hook agentik.Webhook
	if st := api(t, "POST", base+"/webhooks", alice, agentik.WebhookRequest{URL: recv.URL + "/in", Events: []string{agentik.HookScheduleRun}}, &hook); st != 201 ||
		!strings.HasPrefix(hook.Secret, webhook.SecretPrefix) {
		t.Fatalf("create webhook: %d %+v", st, hook)
	}
	var conv agentik.ConversationInfo
	if st := api(t, "POST", base+"/conversations", alice, map[string]any{}, &conv); st != 201 {
		t.Fatalf("create conversation: %d", st)
	}
	past := agentik.TimeOf(time.Now().Add(-time.Hour))
	for _, bad := range []struct {
		token  string
		body   any
		status int
	}{
		{alice, map[string]any{"cron": "61 * * * *", "content": text("x")}, 422},
		{alice, map[string]any{"cron": "0 8 * * *", "timezone": "Mars/Olympus", "content": text("x")}, 422},
		{alice, map[string]any{"every": "500ms", "content": text("x")}, 422},
		{alice, map[string]any{"at": past, "content": text("x")}, 422},
		{alice, map[string]any{"every": "1s", "cron": "* * * * *", "content": text("x")}, 422},
		{alice, map[string]any{"content": text("x")}, 422},
		{alice, map[string]any{"every": "1s"}, 422},
		{alice, map[string]any{"every": "1s", "content": text("x"), "catch_up": "all"}, 422},
		{alice, `{"every": 5}`, 422},
		{alice, `{"every": "1s"`, 400},
		{bob, map[string]any{"every": "1s", "content": text("x"), "conversation_id": conv.ID}, 404},
	} {
		if st := api(t, "POST", base+"/schedules", bad.token, bad.body, nil); st != bad.status {
			t.Errorf("create %v: %d, want %d", bad.body, st, bad.status)
		}
	}
	for _, bad := range []agentik.WebhookRequest{
		{URL: "ftp://example.com/x", Events: []string{agentik.HookTurnCompleted}},
		{URL: "https://example.com/x", Events: []string{"turn.exploded"}},
		{URL: "https://example.com/x"},
	} {
		if st := api(t, "POST", base+"/webhooks", alice, bad, nil); st != 422 {
			t.Errorf("create webhook %+v: %d, want 422", bad, st)
		}
	}
	var list struct{ Schedules []agentik.Schedule }
	if api(t, "GET", base+"/schedules", alice, nil, &list); len(list.Schedules) != 0 {
		t.Fatalf("refused schedules were stored: %+v", list.Schedules)
	}

	var sc agentik.Schedule
	if st := api(t, "POST", base+"/schedules", alice, map[string]any{"every": "1s", "content": text("tick"), "conversation_id": conv.ID}, &sc); st != 201 ||
		sc.NextRunAt == nil {
		t.Fatalf("create schedule: %d %+v", st, sc)
	}
	// Another principal sees none of it.
	for _, path := range []string{"/schedules/" + sc.ID, "/schedules/" + sc.ID + "/runs", "/webhooks/" + hook.ID, "/webhooks/" + hook.ID + "/deliveries"} {
		if st := api(t, "GET", base+path, bob, nil, nil); st != 404 {
			t.Errorf("bob GET %s: %d", path, st)
		}
	}
	if st := api(t, "DELETE", base+"/schedules/"+sc.ID, bob, nil, nil); st != 404 {
		t.Errorf("bob DELETE: %d", st)
	}
	var runs runsPage
	waitUntil(t, "three runs", 60*time.Second, func() bool {
		runs = runsPage{}
		api(t, "GET", base+"/schedules/"+sc.ID+"/runs", alice, nil, &runs)
		sent := 0
		for _, r := range runs.Runs {
			if r.Outcome == agentik.RunSent {
				sent++
			}
		}
		return sent >= 3
	})
	if st := api(t, "PATCH", base+"/schedules/"+sc.ID, alice, map[string]any{"enabled": false}, &sc); st != 200 || sc.Enabled || sc.NextRunAt != nil {
		t.Fatalf("disable: %d %+v", st, sc)
	}
	waitUntil(t, "the runs to finish", 30*time.Second, func() bool {
		runs = runsPage{}
		api(t, "GET", base+"/schedules/"+sc.ID+"/runs", alice, nil, &runs)
		for _, r := range runs.Runs {
			if r.Outcome == agentik.RunClaimed {
				return false
			}
		}
		return true
	})
	checkRuns(t, runs.Runs, conv.ID, time.Second)
	// Each run is one user message of the conversation, from the schedule.
	client := httpapi.NewClient(base, httpapi.WithToken(alice))
	msgs := scheduledMessages(t, client, conv.ID, sc.ID)
	if len(msgs) != len(runs.Runs) {
		t.Fatalf("%d scheduled messages for %d runs", len(msgs), len(runs.Runs))
	}
	for _, r := range runs.Runs {
		if msgs[r.MessageID] != r.ID {
			t.Errorf("run %s: message %s not in the journal with its run id", r.ID, r.MessageID)
		}
	}

	// The receiver failed twice per delivery, then took it: one
	// schedule.run per run, each signed. The receiver notes a 204 before
	// the server hears it, so the wait is for the server's log too.
	var log deliveriesPage
	waitUntil(t, "every run delivered", 60*time.Second, func() bool {
		n := 0
		for _, d := range recv.deliveries() {
			if d.status == http.StatusNoContent {
				n++
			}
		}
		log = deliveriesPage{}
		api(t, "GET", base+"/webhooks/"+hook.ID+"/deliveries", alice, nil, &log)
		done := 0
		for _, d := range log.Deliveries {
			if d.Status != agentik.DeliveryPending {
				done++
			}
		}
		return n == len(runs.Runs) && len(log.Deliveries) == len(runs.Runs) && done == len(runs.Runs)
	})
	seen := map[string]bool{}
	for _, d := range recv.deliveries() {
		if d.status != http.StatusNoContent {
			continue
		}
		if err := webhook.Verify(hook.Secret, d.id, d.timestamp, d.signature, d.body, time.Now(), 5*time.Minute); err != nil {
			t.Errorf("delivery %s: %v", d.id, err)
		}
		if err := webhook.Verify(hook.Secret, d.id+"x", d.timestamp, d.signature, d.body, time.Now(), 5*time.Minute); err == nil {
			t.Errorf("a signature that verifies for another id")
		}
		var body struct {
			Type string
			Data map[string]any
		}
		json.Unmarshal(d.body, &body)
		if body.Type != agentik.HookScheduleRun || body.Data["schedule_id"] != sc.ID || body.Data["outcome"] != agentik.RunSent {
			t.Errorf("delivery body: %s", d.body)
		}
		seen[body.Data["run_id"].(string)] = true
	}
	for _, r := range runs.Runs {
		if !seen[r.ID] {
			t.Errorf("run %s was not delivered", r.ID)
		}
	}
	for _, d := range log.Deliveries {
		if d.Status != agentik.DeliveryDelivered || d.Attempts != 3 || d.LastStatus != 204 {
			t.Errorf("delivery log: %+v", d)
		}
	}
	if len(log.Deliveries) != len(runs.Runs) {
		t.Errorf("%d deliveries logged for %d runs", len(log.Deliveries), len(runs.Runs))
	}

	// The per-principal limit: 3 schedules (one made already).
	for i := range 3 {
		want := 201
		if i == 2 {
			want = 429
		}
		if st := api(t, "POST", base+"/schedules", alice, map[string]any{"cron": "0 8 * * 1-5", "timezone": "Europe/Paris", "content": text("standup")}, nil); st != want {
			t.Fatalf("schedule %d: %d, want %d", i+2, st, want)
		}
	}
	if st := api(t, "DELETE", base+"/schedules/"+sc.ID, alice, nil, nil); st != 204 {
		t.Fatalf("delete: %d", st)
	}
	if st := api(t, "GET", base+"/schedules/"+sc.ID, alice, nil, nil); st != 404 {
		t.Fatalf("deleted schedule: %d", st)
	}
}

// checkRuns checks finished runs: sent into conv, one per due time, due
// times on the schedule's grid (every) and none claimed before it was due.
func checkRuns(t *testing.T, runs []agentik.ScheduleRun, conv string, every time.Duration) {
	t.Helper()
	dues := map[int64]bool{}
	var first time.Time
	for _, r := range runs {
		if r.Outcome != agentik.RunSent || r.ConversationID != conv || r.MessageID == "" {
			t.Errorf("run: %+v", r)
		}
		if dues[r.DueAt.UnixMilli()] {
			t.Errorf("two runs for the due time %s", r.DueAt)
		}
		dues[r.DueAt.UnixMilli()] = true
		if r.ClaimedAt.Before(r.DueAt.Time) {
			t.Errorf("run %s claimed at %s, before its due time %s", r.ID, r.ClaimedAt, r.DueAt)
		}
		if first.IsZero() || r.DueAt.Before(first) {
			first = r.DueAt.Time
		}
	}
	for _, r := range runs {
		if d := r.DueAt.Sub(first); d%every != 0 {
			t.Errorf("due time %s is off the grid (%s after the first)", r.DueAt, d)
		}
	}
}

// scheduledMessages maps the ids of conv's user messages sent by schedule
// id to their run ids.
func scheduledMessages(t *testing.T, client *httpapi.Client, conv, id string) map[string]string {
	t.Helper()
	ctx := context.Background()
	c, err := client.Conversation(ctx, conv)
	if err != nil {
		t.Fatal(err)
	}
	page, err := c.Messages(ctx, agentik.MessagesRequest{Limit: agentik.MaxMessagesLimit})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range page.Messages {
		if m.Type != agentik.MsgUser {
			continue
		}
		if m.Context == nil || m.Context.Origin == nil || m.Context.Origin.Channel != agentik.OriginSchedule || m.Context.Origin.ScheduleID != id {
			t.Errorf("a user message without the schedule's origin: %+v", m.Context)
			continue
		}
		out[m.ID] = m.Context.Metadata[schedule.MetaRunID]
	}
	return out
}

// TestWebhookReceiverDownForTheRetryWindow: a receiver that never answers
// (its port closed) for the whole retry window, shortened to 2 s, leaves a
// failed delivery with its attempts in the log; on SQLite and PostgreSQL.
func TestWebhookReceiverDownForTheRetryWindow(t *testing.T) {
	onEachStore(t, receiverDown)
}

// onEachStore runs f on SQLite and on PostgreSQL, each time with the
// environment that names a fresh database.
func onEachStore(t *testing.T, f func(t *testing.T, db string)) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			db := "AGENTIK_DB_PATH=" + filepath.Join(t.TempDir(), "a.db")
			if kind == "postgres" {
				db = "AGENTIK_DATABASE_URL=" + pgSchema(t)
			}
			f(t, db)
		})
	}
}

func receiverDown(t *testing.T, db string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/hook"
	ln.Close()
	p := startProc(t, db, "AGENTIK_WEBHOOK_ALLOW_PRIVATE=on",
		"AGENTIK_WEBHOOK_FIRST_RETRY=100ms", "AGENTIK_WEBHOOK_RETRY_WINDOW=2s")
	base := p.url + "/agentik"
	var hook agentik.Webhook
	if st := api(t, "POST", base+"/webhooks", "", agentik.WebhookRequest{URL: dead, Events: []string{agentik.HookConversationCreated}}, &hook); st != 201 {
		t.Fatalf("create webhook: %d", st)
	}
	if st := api(t, "POST", base+"/conversations", "", map[string]any{}, nil); st != 201 {
		t.Fatal(st)
	}
	var log deliveriesPage
	waitUntil(t, "the delivery to fail", 60*time.Second, func() bool {
		log = deliveriesPage{}
		api(t, "GET", base+"/webhooks/"+hook.ID+"/deliveries", "", nil, &log)
		return len(log.Deliveries) == 1 && log.Deliveries[0].Status != agentik.DeliveryPending
	})
	d := log.Deliveries[0]
	if d.Status != agentik.DeliveryFailed || d.Attempts < 2 || !strings.Contains(d.LastError, "connection refused") ||
		d.NextAttemptAt != nil || d.LastAttemptAt == nil {
		t.Fatalf("delivery: %+v", d)
	}
}

// TestWebhookInwardTargetRefused: without AGENTIK_WEBHOOK_ALLOW_PRIVATE the
// API refuses inward URLs (nothing stored), and a webhook of the config
// file whose URL is inward is refused at delivery time, after DNS: the
// receiver gets nothing and the refusal is counted; on SQLite and
// PostgreSQL.
func TestWebhookInwardTargetRefused(t *testing.T) {
	onEachStore(t, inwardRefused)
}

func inwardRefused(t *testing.T, db string) {
	recv := newReceiver(func(int) int { return http.StatusNoContent })
	defer recv.Close()
	dir := t.TempDir()
	file := filepath.Join(dir, "agentik.yaml")
	// localhost is a name: only the dialled address shows it is inward.
	inward := strings.Replace(recv.URL, "127.0.0.1", "localhost", 1) + "/hook"
	cfg := fmt.Sprintf(`agents:
  - id: main
    webhooks:
      - name: ops
        url: %s
        events: [conversation.created]
        secret_env: HOOK_SECRET
`, inward)
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, "AGENTIK_CONFIG="+file, db, "HOOK_SECRET="+webhook.NewSecret())
	base := p.url + "/agentik"
	for _, u := range []string{recv.URL, inward, "http://169.254.169.254/latest/meta-data/", "http://[::1]:9/x", "http://10.1.2.3/x",
		"http://[::ffff:127.0.0.1]/x", "http://0.0.0.0:80/x"} {
		if st := api(t, "POST", base+"/webhooks", "", agentik.WebhookRequest{URL: u, Events: []string{agentik.HookTurnCompleted}}, nil); st != 422 {
			t.Errorf("webhook to %s: %d, want 422", u, st)
		}
	}
	var list struct{ Webhooks []agentik.Webhook }
	if api(t, "GET", base+"/webhooks", "", nil, &list); len(list.Webhooks) != 0 {
		t.Fatalf("refused webhooks were stored: %+v", list.Webhooks)
	}
	if st := api(t, "POST", base+"/conversations", "", map[string]any{}, nil); st != 201 {
		t.Fatal(st)
	}
	waitUntil(t, "the refusal", 60*time.Second, func() bool {
		return strings.Contains(scrapeText(t, p.url), `agentik_webhook_deliveries_total{outcome="refused"} 1`)
	})
	if got := recv.deliveries(); len(got) != 0 {
		t.Fatalf("the inward receiver got %d requests", len(got))
	}
	if m := scrapeText(t, p.url); !strings.Contains(m, "agentik_webhook_outbox_depth 0") {
		t.Errorf("outbox not empty after the refusal:\n%s", m)
	}
}

func scrapeText(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestScheduleSIGKILLBetweenClaimAndMessage kills the real binary (SQLite)
// after a run is claimed and before its message is sent (after_claim),
// and after the message and before the outcome (after_send); a restarted
// process takes the run over once its lease (1 s) ends: one message per
// run, neither lost nor doubled.
func TestScheduleSIGKILLBetweenClaimAndMessage(t *testing.T) {
	sigkillRuns(t, func(t *testing.T, llm *llmtest.Server) []string {
		return []string{"AGENTIK_DB_PATH=" + filepath.Join(t.TempDir(), "a.db"), "OPENAI_BASE_URL=" + llm.URL()}
	})
}

// TestPostgresScheduleSIGKILLBetweenClaimAndMessage is the same on
// PostgreSQL: another process, started after the kill, takes the run over.
func TestPostgresScheduleSIGKILLBetweenClaimAndMessage(t *testing.T) {
	sigkillRuns(t, func(t *testing.T, llm *llmtest.Server) []string { return pgEnv(pgSchema(t), llm) })
}

func sigkillRuns(t *testing.T, store func(t *testing.T, llm *llmtest.Server) []string) {
	for _, fault := range []string{"after_claim", "after_send"} {
		t.Run(fault, func(t *testing.T) {
			llm := llmtest.NewServer()
			defer llm.Close()
			env := append(store(t, llm), "AGENTIK_SCHEDULE_LEASE=1s")
			p := startProc(t, append(env, "AGENTIK_SCHEDULE_FAULT="+fault)...)
			base := p.url + "/agentik"
			at := agentik.TimeOf(time.Now().Add(1500 * time.Millisecond))
			var sc agentik.Schedule
			if st := api(t, "POST", base+"/schedules", "", map[string]any{"at": at, "content": text("once")}, &sc); st != 201 {
				t.Fatalf("create: %d", st)
			}
			waitUntil(t, "the fault", 60*time.Second, func() bool { return strings.Contains(p.log(), "fault "+fault) })
			p.cmd.Process.Signal(syscall.SIGKILL)
			<-p.done

			p2 := startProc(t, env...)
			base = p2.url + "/agentik"
			var runs runsPage
			waitUntil(t, "the run taken over", 60*time.Second, func() bool {
				runs = runsPage{}
				api(t, "GET", base+"/schedules/"+sc.ID+"/runs", "", nil, &runs)
				return len(runs.Runs) == 1 && runs.Runs[0].Outcome != agentik.RunClaimed
			})
			r := runs.Runs[0]
			if r.Outcome != agentik.RunSent || r.Attempts != 2 || !r.DueAt.Equal(at.Time) {
				t.Fatalf("run: %+v\n%s", r, p2.log())
			}
			msgs := scheduledMessages(t, httpapi.NewClient(base), r.ConversationID, sc.ID)
			if len(msgs) != 1 || msgs[r.MessageID] != r.ID {
				t.Fatalf("messages of the run: %v (run %+v)", msgs, r)
			}
			var got agentik.Schedule
			if api(t, "GET", base+"/schedules/"+sc.ID, "", nil, &got); got.Enabled || got.NextRunAt != nil {
				t.Fatalf("a one-shot schedule after its run: %+v", got)
			}
		})
	}
}

// TestPostgresSchedulesTwoProcesses: two processes on one PostgreSQL
// database fire a 1 s schedule once per due time between them (each run
// one message), and deliver each schedule.run once to a real receiver.
func TestPostgresSchedulesTwoProcesses(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	recv := newReceiver(func(int) int { return http.StatusOK })
	defer recv.Close()
	ps, _ := pgProcs(t, llm, 2, "AGENTIK_SCHEDULE_MIN_INTERVAL=1s", "AGENTIK_WEBHOOK_ALLOW_PRIVATE=on")
	a, b := ps[0].url+"/agentik", ps[1].url+"/agentik"
	var hook agentik.Webhook
	if st := api(t, "POST", a+"/webhooks", "", agentik.WebhookRequest{URL: recv.URL, Events: []string{agentik.HookScheduleRun}}, &hook); st != 201 {
		t.Fatalf("create webhook: %d", st)
	}
	var conv agentik.ConversationInfo
	if st := api(t, "POST", a+"/conversations", "", map[string]any{}, &conv); st != 201 {
		t.Fatal(st)
	}
	var sc agentik.Schedule
	if st := api(t, "POST", a+"/schedules", "", map[string]any{"every": "1s", "content": text("tick"), "conversation_id": conv.ID}, &sc); st != 201 {
		t.Fatalf("create schedule: %d", st)
	}
	var runs runsPage
	waitUntil(t, "six runs", 90*time.Second, func() bool {
		runs = runsPage{}
		api(t, "GET", b+"/schedules/"+sc.ID+"/runs", "", nil, &runs)
		return len(runs.Runs) >= 6
	})
	if st := api(t, "PATCH", b+"/schedules/"+sc.ID, "", map[string]any{"enabled": false}, nil); st != 200 {
		t.Fatalf("disable: %d", st)
	}
	waitUntil(t, "the runs to finish", 30*time.Second, func() bool {
		runs = runsPage{}
		api(t, "GET", a+"/schedules/"+sc.ID+"/runs", "", nil, &runs)
		for _, r := range runs.Runs {
			if r.Outcome == agentik.RunClaimed {
				return false
			}
		}
		return true
	})
	checkRuns(t, runs.Runs, conv.ID, time.Second)
	msgs := scheduledMessages(t, httpapi.NewClient(a), conv.ID, sc.ID)
	if len(msgs) != len(runs.Runs) {
		t.Fatalf("%d scheduled messages for %d runs", len(msgs), len(runs.Runs))
	}
	waitUntil(t, "every run delivered", 60*time.Second, func() bool { return len(recv.deliveries()) >= len(runs.Runs) })
	ids := map[string]bool{}
	for _, d := range recv.deliveries() {
		if ids[d.id] {
			t.Errorf("delivery %s sent twice", d.id)
		}
		ids[d.id] = true
		if err := webhook.Verify(hook.Secret, d.id, d.timestamp, d.signature, d.body, time.Now(), 5*time.Minute); err != nil {
			t.Errorf("delivery %s: %v", d.id, err)
		}
	}
	if len(ids) != len(runs.Runs) {
		t.Errorf("%d deliveries for %d runs", len(ids), len(runs.Runs))
	}
}
