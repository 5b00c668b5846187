package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ergochat/irc-go/ircmsg"
	"github.com/ergochat/irc-go/ircreader"

	"github.com/agentik/agentik/internal/testenv"
	"github.com/agentik/agentik/llmtest"
)

var ircListening = regexp.MustCompile(`msg="irc listening" addr=(\S+)`)

func ircAddr(t *testing.T, p *proc) string {
	t.Helper()
	m := ircListening.FindStringSubmatch(p.log())
	if m == nil {
		t.Fatalf("no irc listening line:\n%s", p.log())
	}
	return m[1]
}

// ircConn is a raw IRC client for the binary's tests.
type ircConn struct {
	t  *testing.T
	nc net.Conn
	rd *ircreader.Reader
}

func dialIRC(t *testing.T, addr string) *ircConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &ircConn{t: t, nc: nc, rd: ircreader.NewIRCReader(nc)}
}

func (c *ircConn) send(lines ...string) {
	for _, l := range lines {
		fmt.Fprintf(c.nc, "%s\r\n", l)
	}
}

// next returns the next line; ok is false at the end of the connection.
func (c *ircConn) next() (ircmsg.Message, bool) {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	line, err := c.rd.ReadLine()
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			c.t.Fatal("no line within 20s")
		}
		return ircmsg.Message{}, false
	}
	m, err := ircmsg.ParseLine(string(line))
	if err != nil {
		c.t.Fatalf("%q: %v", line, err)
	}
	return m, true
}

func (c *ircConn) until(pred func(ircmsg.Message) bool) ircmsg.Message {
	c.t.Helper()
	for {
		m, ok := c.next()
		if !ok {
			c.t.Fatal("connection ended")
		}
		if pred(m) {
			return m
		}
	}
}

func ircCmd(cmd string) func(ircmsg.Message) bool {
	return func(m ircmsg.Message) bool { return m.Command == cmd }
}

func fromAgent(text string) func(ircmsg.Message) bool {
	return func(m ircmsg.Message) bool {
		return m.Command == "PRIVMSG" && m.Nick() == "agentik" && len(m.Params) == 2 && strings.HasPrefix(m.Params[1], text)
	}
}

func TestIRCServedByTheBinary(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	llm.Enqueue(llmtest.Text("Hello from IRC"), llmtest.Text("A red dot"))
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"), "OPENAI_BASE_URL="+llm.URL(),
		"AGENTIK_AUTH_TOKENS=alice:tok-alice-1,bob:tok-bob-22", "AGENTIK_IRC_ADDR=127.0.0.1:0", "AGENTIK_IMAGE_INPUT=on")
	c := dialIRC(t, ircAddr(t, p))
	c.send("PASS tok-alice-1", "NICK alice", "USER alice 0 * :Alice")
	c.until(ircCmd("376"))
	c.send("JOIN #bin")
	c.until(ircCmd("366"))
	c.send("PRIVMSG #bin :hi")
	c.until(fromAgent("Hello from IRC"))

	// An image sent through the REST API reaches IRC as an authenticated
	// link the image endpoint serves.
	convs := getJSON(t, p.url+"/agentik/conversations", "tok-alice-1")
	id := convs["conversations"].([]any)[0].(map[string]any)["id"].(string)
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0}, 24)...)
	body := fmt.Sprintf(`{"content":[{"type":"text","text":"what is this?"},{"type":"image","mime":"image/png","data":%q}]}`, base64.StdEncoding.EncodeToString(png))
	req, _ := http.NewRequest("POST", p.url+"/agentik/conversations/"+id+"/messages", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer tok-alice-1")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 202 {
		t.Fatalf("send: %d", resp.StatusCode)
	}
	link := c.until(func(m ircmsg.Message) bool {
		return m.Command == "PRIVMSG" && strings.HasPrefix(m.Params[1], "[image image/png] ")
	})
	url := strings.TrimPrefix(link.Params[1], "[image image/png] ")
	if !strings.HasPrefix(url, p.url+"/agentik/conversations/"+id+"/messages/") {
		t.Fatalf("link %q (server %s)", url, p.url)
	}
	for token, want := range map[string]int{"": 401, "tok-bob-22": 404, "tok-alice-1": 200} {
		req, _ := http.NewRequest("GET", url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("GET %s as %q: %d", url, token, resp.StatusCode)
		}
		if want == 200 && (!bytes.Equal(got, png) || resp.Header.Get("Content-Type") != "image/png") {
			t.Fatalf("image %q %s", got, resp.Header.Get("Content-Type"))
		}
	}
	c.until(fromAgent("A red dot"))

	// SIGTERM: a clean ERROR to the client, then a clean exit.
	p.cmd.Process.Signal(syscall.SIGTERM)
	var last ircmsg.Message
	for {
		m, ok := c.next()
		if !ok {
			break
		}
		last = m
	}
	if last.Command != "ERROR" || last.Params[0] != "Closing link (Server shutting down)" {
		t.Fatalf("last line %v", last)
	}
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit %d\n%s", code, p.log())
	}
}

func getJSON(t *testing.T, url, token string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestIRCBadConfigIsNamed(t *testing.T) {
	cmd := exec.Command(binary, "serve")
	cmd.Env = append(os.Environ(), "AGENTIK_IRC_ADDR=nowhere", "AGENTIK_IRC_TLS_CERT=/x.pem", "AGENTIK_IRC_FLOOD_BURST=0", "AGENTIK_IRC_IF_BUSY=later")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("want exit 2, got %v\n%s", err, out)
	}
	for _, v := range []string{"AGENTIK_IRC_ADDR", "AGENTIK_IRC_TLS_CERT", "AGENTIK_IRC_FLOOD_BURST", "AGENTIK_IRC_IF_BUSY"} {
		if !strings.Contains(string(out), v) {
			t.Fatalf("%s not named:\n%s", v, out)
		}
	}
}

// needTool returns the path of a Debian client; without it the test is
// skipped locally and fails in CI, which installs it (.ci/run).
func needTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		testenv.Missing(t, "%s is not installed (apt-get install %s)", name, name)
	}
	return path
}

// waitFile waits until the file at path contains every one of wants (an
// external client writes it; there is nothing to wait on but the file).
func waitFile(t *testing.T, path string, done <-chan struct{}, wants ...string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		ok := true
		for _, w := range wants {
			ok = ok && bytes.Contains(b, []byte(w))
		}
		if ok {
			return string(b)
		}
		select {
		case <-done:
			t.Fatalf("the client exited; %s has:\n%s", path, b)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never contained %q; it has:\n%s", path, wants, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ircModel answers "time?" with a tool call, anything else with an echo.
func ircModel() *llmtest.Server {
	llm := llmtest.NewServer()
	llm.Handle(func(r llmtest.Request) llmtest.Reply {
		if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == "tool" {
			return llmtest.Text("The clock says it is tea time.")
		}
		if strings.Contains(r.LastUserText(), "time?") {
			return llmtest.ToolCalls(llmtest.Call("current_time", `{"timezone":"UTC"}`))
		}
		return llmtest.Text("Agent heard: " + r.LastUserText())
	})
	return llm
}

// TestIIClient drives ii (suckless, Debian package ii): PASS, join, a
// conversation, a tool call shown as CTCP; ii's own channel log shows the
// agent's answers.
func TestIIClient(t *testing.T) {
	ii := needTool(t, "ii")
	llm := ircModel()
	defer llm.Close()
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"), "OPENAI_BASE_URL="+llm.URL(),
		"AGENTIK_AUTH_TOKENS=alice:tok-alice-1", "AGENTIK_IRC_ADDR=127.0.0.1:0")
	host, port, _ := net.SplitHostPort(ircAddr(t, p))
	dir := t.TempDir()
	cmd := exec.Command(ii, "-s", host, "-p", port, "-n", "alice", "-i", dir, "-k", "II_PASS")
	cmd.Env = append(os.Environ(), "II_PASS=tok-alice-1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	defer func() { cmd.Process.Kill(); <-done }()

	server := filepath.Join(dir, host)
	waitFile(t, filepath.Join(server, "out"), done, "End of /MOTD")
	writeFIFO(t, filepath.Join(server, "in"), "/j #ii-e2e")
	ch := filepath.Join(server, "#ii-e2e")
	waitFile(t, filepath.Join(ch, "out"), done, "has joined #ii-e2e")
	writeFIFO(t, filepath.Join(ch, "in"), "hello from ii")
	writeFIFO(t, filepath.Join(ch, "in"), "what time?")
	log := waitFile(t, filepath.Join(ch, "out"), done, "<agentik> Agent heard: hello from ii",
		"<agentik> \x01AGENTIK TOOL_CALL current_time", "<agentik> The clock says it is tea time.")
	t.Logf("ii's log of #ii-e2e:\n%s", log)
}

func writeFIFO(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
}

// TestIrssiClient runs irssi (Debian package irssi) in tmux: SASL PLAIN,
// autojoin, a conversation, a tool call shown as a CTCP; irssi's own
// channel log shows the agent's answers.
func TestIrssiClient(t *testing.T) {
	irssi := needTool(t, "irssi")
	tmux := needTool(t, "tmux")
	llm := ircModel()
	defer llm.Close()
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"), "OPENAI_BASE_URL="+llm.URL(),
		"AGENTIK_AUTH_TOKENS=alice:tok-alice-1", "AGENTIK_IRC_ADDR=127.0.0.1:0")
	host, port, _ := net.SplitHostPort(ircAddr(t, p))
	home := t.TempDir()
	logs := filepath.Join(home, "logs")
	config := fmt.Sprintf(`servers = (
  { address = "%s"; chatnet = "agentik"; port = "%s"; autoconnect = "yes"; use_tls = "no"; }
);
chatnets = {
  agentik = { type = "IRC"; sasl_mechanism = "PLAIN"; sasl_username = "alice"; sasl_password = "tok-alice-1"; };
};
channels = ( { name = "#irssi-e2e"; chatnet = "agentik"; autojoin = "yes"; } );
settings = {
  core = { real_name = "Alice"; user_name = "alice"; nick = "alice"; settings_autosave = "no"; };
  "fe-common/core" = { autolog = "yes"; autolog_level = "all -crap -clientcrap"; autolog_path = "%s/$tag/$0.log"; };
};
`, host, port, logs)
	if err := os.WriteFile(filepath.Join(home, "config"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := "agentik-test-" + filepath.Base(home)
	tm := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(tmux, append([]string{"-L", sock}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
	}
	tm("new-session", "-d", "-s", "irssi", "-x", "200", "-y", "50", irssi+" --home="+home)
	defer exec.Command(tmux, "-L", sock, "kill-server").Run()
	chanLog := filepath.Join(logs, "agentik", "#irssi-e2e.log")
	never := make(chan struct{})
	waitFile(t, chanLog, never, "has joined #irssi-e2e")
	tm("send-keys", "-t", "irssi", "/msg #irssi-e2e hello from irssi", "Enter")
	waitFile(t, chanLog, never, "<@agentik> Agent heard: hello from irssi")
	tm("send-keys", "-t", "irssi", "/msg #irssi-e2e what time?", "Enter")
	log := waitFile(t, chanLog, never, "CTCP AGENTIK", "TOOL_CALL current_time", "<@agentik> The clock says it is tea time.")
	t.Logf("irssi's log of #irssi-e2e:\n%s", log)
}

// TestIRCOverTLS: with AGENTIK_IRC_TLS_CERT/_KEY the listener speaks TLS.
func TestIRCOverTLS(t *testing.T) {
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(dir, "a.db"), "AGENTIK_LLM_BACKEND=demo",
		"AGENTIK_IRC_ADDR=127.0.0.1:0", "AGENTIK_IRC_TLS_CERT="+certFile, "AGENTIK_IRC_TLS_KEY="+keyFile)
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	nc, err := tls.Dial("tcp", ircAddr(t, p), &tls.Config{RootCAs: pool, ServerName: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := &ircConn{t: t, nc: nc, rd: ircreader.NewIRCReader(nc)}
	c.send("NICK alice", "USER alice 0 * :A")
	if m := c.until(ircCmd("001")); m.Params[0] != "alice" {
		t.Fatalf("%v", m)
	}
	// A plain-text client gets nothing it can use.
	plain := dialIRC(t, ircAddr(t, p))
	plain.send("NICK bob", "USER bob 0 * :B")
	plain.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	n, _ := plain.nc.Read(buf)
	if strings.Contains(string(buf[:n]), " 001 ") {
		t.Fatal("plain text registered on the TLS port")
	}
}
