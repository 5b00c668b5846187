package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik/llmtest"
	"github.com/coder/websocket"
)

// status answers the GET of path with token as bearer.
func getStatus(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// waitLog waits until the process has logged s (count times in all).
func (p *proc) waitLog(t *testing.T, s string, count int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(p.log(), s) < count {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the log:\n%s", s, p.log())
		}
		time.Sleep(20 * time.Millisecond) // polling the log of another process
	}
}

// TestTokensFileReloadsOnSIGHUP: the binary re-reads AGENTIK_AUTH_TOKENS_FILE
// on SIGHUP — one entry per line, commas belong to the token — keeps the old
// tokens when the new file is bad, and refuses at start a token that is in
// both AGENTIK_AUTH_TOKENS and the file.
func TestTokensFileReloadsOnSIGHUP(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("# principal:token per line\nalice:alice-token-1\n")
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(dir, "a.db"), "AGENTIK_AUTH_TOKENS_FILE="+file,
		"AGENTIK_AUTH_TOKENS=carol:carol-token-9")
	list := p.url + "/agentik/conversations"
	if getStatus(t, list, "alice-token-1") != 200 || getStatus(t, list, "carol-token-9") != 200 || getStatus(t, list, "bob-token,with-a-comma") != 401 {
		t.Fatal("tokens at start")
	}

	write("bob:bob-token,with-a-comma\n")
	p.cmd.Process.Signal(syscall.SIGHUP)
	p.waitLog(t, "tokens reloaded", 1)
	if getStatus(t, list, "bob-token,with-a-comma") != 200 || getStatus(t, list, "alice-token-1") != 401 || getStatus(t, list, "carol-token-9") != 200 {
		t.Fatal("tokens after the reload: bob's token (with its comma) in, alice's out, the environment's kept")
	}

	write("carol:carol-token-9\n") // the environment's token again: refused, old tokens kept
	p.cmd.Process.Signal(syscall.SIGHUP)
	p.waitLog(t, "token reload failed", 1)
	if getStatus(t, list, "bob-token,with-a-comma") != 200 {
		t.Fatal("a failed reload dropped the tokens in force")
	}
	if strings.Contains(p.log(), "carol-token-9") {
		t.Fatal("a token reached the log")
	}

	// At start, the same token in both sources stops the server.
	cmd := exec.Command(binary, "serve")
	cmd.Env = append(os.Environ(), "AGENTIK_PORT=0", "AGENTIK_DB_PATH="+filepath.Join(dir, "b.db"),
		"AGENTIK_AUTH_TOKENS_FILE="+file, "AGENTIK_AUTH_TOKENS=dave:carol-token-9")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "configured twice") || strings.Contains(string(out), "carol-token-9") {
		t.Fatalf("a token in both sources: %v\n%s", err, out)
	}
}

// freePort returns a port nothing listens on (the OS just gave it out).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestA2APortServesTheFacade: with AGENTIK_A2A_PORT the card and the
// JSON-RPC endpoint are served on that port too, behind the same tokens,
// and the card there names that port.
func TestA2APortServesTheFacade(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	llm.Enqueue(llmtest.Text("over the A2A port"))
	port := freePort(t)
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"), "OPENAI_BASE_URL="+llm.URL(),
		"AGENTIK_A2A_PORT="+strconv.Itoa(port), "AGENTIK_AUTH_TOKENS=alice:"+aliceToken)
	p.waitLog(t, "a2a listening", 1)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	resp, err := http.Get(base + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	var card struct {
		SupportedInterfaces []struct{ URL string } `json:"supportedInterfaces"`
	}
	json.NewDecoder(resp.Body).Decode(&card)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(card.SupportedInterfaces) == 0 || card.SupportedInterfaces[0].URL != base+"/a2a" {
		t.Fatalf("card on the A2A port: %d %+v", resp.StatusCode, card)
	}
	send := func(token string) (int, string) {
		req, _ := http.NewRequest("POST", base+"/a2a", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`))
		req.Header.Set("Content-Type", "application/json")
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
	if st, _ := send(""); st != http.StatusUnauthorized {
		t.Fatalf("no token on the A2A port: %d", st)
	}
	if st, body := send(aliceToken); st != 200 || !strings.Contains(body, "over the A2A port") || !strings.Contains(body, "TASK_STATE_COMPLETED") {
		t.Fatalf("send on the A2A port: %d %s", st, body)
	}
}

// TestWSOriginsAllowBrowsers: a browser upgrade from another origin is
// refused unless AGENTIK_WS_ORIGINS lists it; same-origin and non-browser
// clients always connect.
func TestWSOriginsAllowBrowsers(t *testing.T) {
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"), "AGENTIK_WS_ORIGINS=app.example.com,*.trusted.example")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := "ws" + strings.TrimPrefix(p.url, "http") + "/agentik/ws"
	for _, tc := range []struct {
		origin string
		ok     bool
	}{
		{"", true}, // not a browser
		{p.url, true},
		{"https://app.example.com", true},
		{"https://ui.trusted.example", true},
		{"https://evil.example.com", false},
		{"https://app.example.com.evil.example", false},
	} {
		h := http.Header{}
		if tc.origin != "" {
			h.Set("Origin", tc.origin)
		}
		c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: h})
		if tc.ok {
			if err != nil {
				t.Errorf("origin %q refused: %v", tc.origin, err)
				continue
			}
			_, b, err := c.Read(ctx)
			if err != nil || !strings.Contains(string(b), `"STATUS"`) {
				t.Errorf("origin %q: %s %v", tc.origin, b, err)
			}
			c.CloseNow()
			continue
		}
		if err == nil {
			c.CloseNow()
			t.Errorf("origin %q accepted", tc.origin)
		} else if resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("origin %q: %v, want 403", tc.origin, err)
		}
	}
}
