package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/llmtest"
)

// TestAdminCLI: agentik admin turns, cancel and stats against the binary,
// as a table and as JSON; a non-admin's token, a missing one and bad usage
// are refused with the exit codes of the other commands.
func TestAdminCLI(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	gate := llmtest.NewGate()
	defer gate.Release()
	llm.Enqueue(llmtest.Stream().Role().Content("half").Pause(gate).Finish("stop").Done())
	const root, bob = "tok-root-secret", "tok-bob-secret"
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "agentik.db"), "OPENAI_BASE_URL="+llm.URL(),
		"AGENTIK_AUTH_TOKENS=root:"+root+",bob:"+bob, "AGENTIK_ADMINS=root")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
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
	env := []string{"AGENTIK_TOKEN=" + root}

	// The table: a header, the running turn, then the queued one.
	out, stderr, code := runCLI(t, env, "admin", "turns", "--url", p.url)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitOK || len(lines) != 3 || !strings.HasPrefix(lines[0], "STATE") ||
		!strings.HasPrefix(lines[1], "running") || !strings.Contains(lines[1], first.MessageID) || !strings.Contains(lines[1], info.ID) || !strings.Contains(lines[1], " bob ") ||
		!strings.HasPrefix(lines[2], "queued") || !strings.Contains(lines[2], second.MessageID) {
		t.Fatalf("admin turns: %d\n%s\n%s", code, out, stderr)
	}
	// JSON: the server's object; --token instead of AGENTIK_TOKEN.
	out, stderr, code = runCLI(t, nil, "admin", "--json", "turns", "--url", p.url, "--token", root)
	var list struct{ Turns []adminTurn }
	if code != exitOK || json.Unmarshal([]byte(out), &list) != nil || len(list.Turns) != 2 || list.Turns[1].State != "queued" {
		t.Fatalf("admin turns --json: %d\n%s\n%s", code, out, stderr)
	}

	// Refusals: someone else's token, no token, bad usage, unknown turn.
	for _, c := range []struct {
		env  []string
		args []string
		code int
		want string
	}{
		{[]string{"AGENTIK_TOKEN=" + bob}, []string{"admin", "turns", "--url", p.url}, exitFail, "not an admin"},
		{nil, []string{"admin", "stats", "--url", p.url}, exitFail, "401"},
		{env, []string{"admin", "cancel", "--url", p.url}, exitConfig, "want 1 argument"},
		{env, []string{"admin", "restart", "--url", p.url}, exitConfig, `unknown command "restart"`},
		{env, []string{"admin", "turns", "--url", "ftp://x"}, exitConfig, "want http://host:port"},
		{env, []string{"admin", "cancel", "no-such-turn", "--url", p.url}, exitFail, "no open turn no-such-turn"},
	} {
		out, stderr, code := runCLI(t, c.env, c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) || strings.Contains(out, info.ID) {
			t.Errorf("%v: %d, want %d with %q\n%s\n%s", c.args, code, c.code, c.want, out, stderr)
		}
	}

	// Cancel the queued turn, then the running one.
	out, stderr, code = runCLI(t, env, "admin", "cancel", second.MessageID, "--url", p.url)
	if code != exitOK || strings.TrimSpace(out) != "cancelled "+second.MessageID+" (conversation "+info.ID+")" {
		t.Fatalf("admin cancel: %d\n%s\n%s", code, out, stderr)
	}
	out, stderr, code = runCLI(t, env, "admin", "cancel", first.MessageID, "--url", p.url, "--json")
	if code != exitOK || !strings.Contains(out, `"cancelled": true`) {
		t.Fatalf("admin cancel --json: %d\n%s\n%s", code, out, stderr)
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
	if out, _, code := runCLI(t, env, "admin", "turns", "--url", p.url); code != exitOK || strings.TrimSpace(out) != "no open turns" {
		t.Fatalf("after cancel: %d %s", code, out)
	}

	// Stats: one conversation, two user messages and their interruptions.
	out, stderr, code = runCLI(t, env, "admin", "stats", "--url", p.url)
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if code != exitOK || len(lines) != 3 || !strings.HasPrefix(lines[0], "AGENT") || strings.Fields(lines[1])[0] != "agentik" ||
		strings.Fields(lines[1])[1] != "1" || !strings.HasPrefix(lines[2], "database: sqlite, ") {
		t.Fatalf("admin stats: %d\n%s\n%s", code, out, stderr)
	}
	out, _, code = runCLI(t, env, "admin", "stats", "--url", p.url, "--json")
	var st adminStats
	if code != exitOK || json.Unmarshal([]byte(out), &st) != nil || len(st.Agents) != 1 || st.Agents[0].Conversations != 1 ||
		st.Agents[0].OpenTurns != 0 || st.Database.Bytes <= 0 {
		t.Fatalf("admin stats --json: %d\n%s", code, out)
	}
}
