package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ergochat/irc-go/ircmsg"

	"github.com/agentik/agentik/llmtest"
)

// TestIRCRevokedTokenClosesTheLink: a token taken away by a reload of the
// tokens file (SIGHUP) closes the IRC connections logged in with it
// ("ERROR :Closing link (Credentials revoked)"); nothing it sends after is
// stored, the old token no longer logs in, and other principals' links go
// on.
func TestIRCRevokedTokenClosesTheLink(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	llm.Enqueue(llmtest.Text("first answer"))
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("alice:tok-alice-1\nbob:tok-bob-22\n")
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(dir, "a.db"), "OPENAI_BASE_URL="+llm.URL(),
		"AGENTIK_AUTH_TOKENS_FILE="+file, "AGENTIK_IRC_ADDR=127.0.0.1:0")
	addr := ircAddr(t, p)

	alice := dialIRC(t, addr)
	alice.send("PASS tok-alice-1", "NICK alice", "USER alice 0 * :Alice")
	alice.until(ircCmd("376"))
	alice.send("PRIVMSG agentik :one")
	alice.until(fromAgent("first answer"))
	bob := dialIRC(t, addr)
	bob.send("PASS tok-bob-22", "NICK bob", "USER bob 0 * :Bob")
	bob.until(ircCmd("376"))

	write("alice:tok-alice-2\nbob:tok-bob-22\n") // alice's token replaced
	start := time.Now()
	p.cmd.Process.Signal(syscall.SIGHUP)
	var last ircmsg.Message
	for {
		m, ok := alice.next()
		if !ok {
			break
		}
		last = m
	}
	took := time.Since(start)
	if last.Command != "ERROR" || last.Params[0] != "Closing link (Credentials revoked)" {
		t.Fatalf("last line %v", last)
	}
	t.Logf("link closed %v after SIGHUP", took.Round(time.Millisecond))
	alice.send("PRIVMSG agentik :after the revocation") // on a closed link: goes nowhere

	// The old token logs in no more; the new one and bob's do.
	again := dialIRC(t, addr)
	again.send("PASS tok-alice-1", "NICK alice", "USER alice 0 * :Alice")
	if m := again.until(func(m ircmsg.Message) bool { return m.Command == "464" || m.Command == "001" }); m.Command != "464" {
		t.Fatalf("old token: %v", m)
	}
	bob.send("PING :still")
	bob.until(ircCmd("PONG"))

	convs := getJSON(t, p.url+"/agentik/conversations", "tok-alice-2")["conversations"].([]any)
	if len(convs) != 1 {
		t.Fatalf("alice's conversations: %v", convs)
	}
	id := convs[0].(map[string]any)["id"].(string)
	msgs, _ := json.Marshal(getJSON(t, p.url+"/agentik/conversations/"+id+"/messages", "tok-alice-2"))
	if !strings.Contains(string(msgs), "first answer") || strings.Contains(string(msgs), "after the revocation") {
		t.Fatalf("alice's direct conversation: %s", msgs)
	}
}

// TestIRCAgentTakenAwayClosesTheLink: a reload that keeps a principal's
// token but takes away an agent it could use at login closes its IRC link
// (its channels of that agent would otherwise go on following); a
// principal whose agents did not change keeps its link.
func TestIRCAgentTakenAwayClosesTheLink(t *testing.T) {
	p, _, _, file := twoAgents(t, "AGENTIK_IRC_ADDR=127.0.0.1:0")
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(p.log())
		}
	})
	addr := ircAddr(t, p)
	login := func(token, nick string) *ircConn {
		c := dialIRC(t, addr)
		c.send("PASS "+token, "NICK "+nick, "USER "+nick+" 0 * :"+nick)
		c.until(ircCmd("376"))
		return c
	}
	dave, carol := login(daveToken, "dave"), login(carolToken, "carol")

	cfg, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	limited := strings.Replace(string(cfg), "{principal: dave, token_env: DAVE_TOKEN}", "{principal: dave, token_env: DAVE_TOKEN, agents: [alpha]}", 1)
	if limited == string(cfg) {
		t.Fatal("the configuration has no line for dave")
	}
	if err := os.WriteFile(file, []byte(limited), 0o600); err != nil {
		t.Fatal(err)
	}
	p.cmd.Process.Signal(syscall.SIGHUP)
	var last ircmsg.Message
	for {
		m, ok := dave.next()
		if !ok {
			break
		}
		last = m
	}
	if last.Command != "ERROR" || last.Params[0] != "Closing link (Credentials revoked)" {
		t.Fatalf("dave's last line %v", last)
	}
	carol.send("PING :still")
	carol.until(ircCmd("PONG"))
	// Dave comes back with what he may use now.
	again := login(daveToken, "dave")
	again.send("PING :back")
	again.until(ircCmd("PONG"))
}
