package irc

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik/llmtest"
)

// alive reports that the server runs c's connection: a PING is answered.
func (c *client) alive(token string) {
	c.t.Helper()
	c.send("PING :" + token)
	c.until(is("PONG", "", token))
}

// refused reads what the server sent c before closing it, which must be
// exactly one ERROR with reason.
func (c *client) refused(reason string) {
	c.t.Helper()
	rest := c.waitClosed()
	if len(rest) != 1 || rest[0].Command != "ERROR" || rest[0].Params[0] != "Closing link ("+reason+")" {
		c.t.Fatalf("want ERROR (%s), got %v", reason, rest)
	}
}

// Connections that may not act yet (not registered, or registered without
// logging in) are capped per address and in total; one past a cap gets an
// ERROR and is closed at once; clients that act are never counted or cut;
// another address still gets in while one holds its cap; logging in frees
// the place.
func TestUnregisteredConnectionsAreCappedPerAddressAndInTotal(t *testing.T) {
	s := newStack(t, Options{MaxUnregisteredPerAddr: 3, MaxUnregistered: 5}, twoUsers)
	alice := s.dialFrom("127.0.0.1")
	alice.register("alice", "tok-alice-1")

	var held []*client
	for i := range 3 {
		c := s.dialFrom("127.0.0.1")
		c.alive("held" + string(rune('0'+i)))
		held = append(held, c)
	}
	s.dialFrom("127.0.0.1").refused("Too many unregistered connections from your address")
	alice.alive("alice-still-here")
	alice.join("#still")

	// Another address registers and logs in while 127.0.0.1 holds its cap.
	bob := s.dialFrom("127.0.0.2")
	if l := bob.register("bob", "tok-bob-22"); len(params(l, rplLoggedIn)) != 1 {
		t.Fatalf("bob from 127.0.0.2: %v", l)
	}
	// Registered without logging in still counts: 127.0.0.2 holds two.
	lurker := s.dialFrom("127.0.0.2")
	lurker.register("lurker", "")
	s.dialFrom("127.0.0.2").alive("fifth")
	if n := s.srv.Unregistered(); n != 5 {
		t.Fatalf("%d unregistered, want 5", n)
	}
	s.dialFrom("127.0.0.3").refused("Too many unregistered connections")

	// One of 127.0.0.1's logs in: its place is free, for any address.
	if l := held[0].register("alice2", "tok-alice-1"); len(params(l, rplLoggedIn)) != 1 {
		t.Fatalf("%v", l)
	}
	s.dialFrom("127.0.0.3").alive("after-login")
	s.dialFrom("127.0.0.3").refused("Too many unregistered connections")
	if n := s.srv.Unregistered(); n != 5 {
		t.Fatalf("%d unregistered, want 5", n)
	}
	bob.alive("bob-still-here")
	alice.alive("alice-still-here-2")

	// Connections that end free their places.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.srv.Close(ctx)
	if n := s.srv.Unregistered(); n != 0 {
		t.Fatalf("%d unregistered after close", n)
	}
}

// On a server with auth, a client that registers without logging in is
// closed at the registration timeout like an unregistered one; a client
// that logged in is not.
func TestLoginTimeout(t *testing.T) {
	s := newStack(t, Options{RegistrationTimeout: time.Second}, twoUsers)
	in := s.dial()
	in.register("alice", "tok-alice-1")
	out := s.dial() // connected after in: its deadline is later
	out.register("lurker", "")
	if rest := out.waitClosed(); len(rest) != 1 || rest[0].Params[0] != "Closing link (Login timed out)" {
		t.Fatalf("%v", rest)
	}
	in.alive("past-the-timeout")
}

// An agent a principal may not use is, for that principal, a nick nobody
// has: every command answers it as it answers a nick nobody uses, and the
// principal may take it as its own nick. Clients that see the agent still
// reach the agent under that nick. A client that has not logged in sees no
// agent at all.
func TestHiddenAgentIsANickNobodyHas(t *testing.T) {
	secret, secretLLM := newEngine(t, "secret")
	secretLLM.Handle(func(r llmtest.Request) llmtest.Reply { return llmtest.Text("secret says: " + r.LastUserText()) })
	vault, _ := newEngine(t, "vault")
	mayUse := func(principal, agent string) bool { return agent == "agentik" || principal == "alice" }
	s := newStackOn(t, Options{MayUse: mayUse}, twoUsers, nil, Agent{ID: "secret", Agent: secret}, Agent{ID: "vault", Agent: vault})

	// bob takes "secret" as his nick, at registration (PASS is checked
	// then) and later.
	bob := s.dial()
	lines := bob.register("secret", "tok-bob-22")
	if lines[0].Command != rplWelcome || lines[0].Params[0] != "secret" {
		t.Fatalf("bob registering as secret: %v", lines)
	}
	for _, p := range params(lines, rplMOTD) {
		if strings.Contains(p[1], "Agents:") && p[1] != "- Agents: agentik" {
			t.Fatalf("bob's MOTD: %v", p)
		}
	}

	// Every command answers bob about vault (hidden) as about nobody.
	bob2 := s.dial()
	bob2.register("bob2", "tok-bob-22", "draft/chathistory", "batch", "message-tags")
	probes := []string{"WHOIS %s", "WHO %s", "ISON %s", "USERHOST %s", "PRIVMSG %s :hi", "NOTICE %s :hi",
		"TAGMSG %s", "MONITOR + %s", "CHATHISTORY LATEST %s * 10", "JOIN #x@%s", "NAMES #x@%s", "TOPIC #x@%s",
		"MODE %s", "PRIVMSG #x@%s :hi", "CHATHISTORY LATEST #x@%s * 10"}
	for i, p := range probes {
		hidden := answerTo(bob2, strings.ReplaceAll(p, "%s", "vault"), i)
		nobody := answerTo(bob2, strings.ReplaceAll(p, "%s", "nobody"), i)
		if strings.ReplaceAll(hidden, "vault", "nobody") != nobody {
			t.Errorf("%q: hidden agent\n%s\nnobody\n%s", p, hidden, nobody)
		}
	}
	bob2.send("NICK vault")
	if m := bob2.next(); m.Command != "NICK" || m.Params[0] != "vault" {
		t.Fatalf("bob2 NICK vault: %v", m)
	}
	bob2.send("NICK bob2")
	bob2.until(is("NICK", "bob2"))
	if convs := conversationsOf(t, vault, "bob"); len(convs) != 0 {
		t.Fatalf("bob reached vault: %+v", convs)
	}

	// Under the nick bob holds, bob's clients see bob's client; alice sees
	// the agent and reaches it.
	bob2.send("WHOIS secret")
	if w := bob2.until(is(rplEndOfWhois)); len(params(w, rplWhoisUser)) != 1 || len(params(w, rplWhoisBot)) != 0 {
		t.Fatalf("bob's WHOIS secret: %v", w)
	}
	bob2.send("PRIVMSG secret :hi")
	if m := bob2.next(); m.Command != errCannotSendToChan {
		t.Fatalf("bob's PRIVMSG secret: %v", m)
	}
	alice := s.dial()
	alice.register("alice", "tok-alice-1")
	alice.send("WHOIS secret")
	if w := alice.until(is(rplEndOfWhois)); len(params(w, rplWhoisBot)) != 1 {
		t.Fatalf("alice's WHOIS secret: %v", w)
	}
	alice.send("PRIVMSG secret :hi")
	alice.answerFrom("secret", "alice", "secret says: hi")
	alice.send("NICK secret")
	if m := alice.next(); m.Command != errNicknameInUse {
		t.Fatalf("alice's NICK secret: %v", m)
	}

	// alice registering as an agent she sees gets 433 once PASS tells who
	// she is, and registers with another nick.
	a2 := s.dial()
	a2.send("PASS tok-alice-1", "NICK vault", "USER a 0 * :A")
	if m := a2.next(); m.Command != errNicknameInUse || m.Params[1] != "vault" {
		t.Fatalf("alice registering as vault: %v", m)
	}
	a2.send("NICK alice2")
	if l := a2.until(is(rplEndOfMOTD)); l[0].Command != rplWelcome || len(params(l, rplLoggedIn)) != 1 {
		t.Fatalf("%v", l)
	}

	// Not logged in: no agent exists, any nick is free; logging in as
	// alice afterwards renames the client off the agent's nick.
	anon := s.dial()
	anon.register("secret2", "", "sasl")
	anon.send("WHOIS agentik")
	if w := anon.until(is(rplEndOfWhois)); w[0].Command != errNoSuchNick {
		t.Fatalf("anonymous WHOIS agentik: %v", w)
	}
	anon.send("NICK vault")
	if m := anon.next(); m.Command != "NICK" || m.Params[0] != "vault" {
		t.Fatalf("anonymous NICK vault: %v", m)
	}
	anon.send("AUTHENTICATE PLAIN")
	anon.until(is("AUTHENTICATE", "+"))
	anon.send("AUTHENTICATE " + b64("\x00alice\x00tok-alice-1"))
	got := anon.until(is(rplSASLSuccess))
	renamed := false
	for _, m := range got {
		if m.Command == "NICK" && m.Nick() == "vault" && m.Params[0] != "vault" {
			renamed = true
		}
	}
	if !renamed {
		t.Fatalf("logged in as alice under an agent's nick, not renamed: %v", got)
	}
	anon.send("WHOIS vault")
	if w := anon.until(is(rplEndOfWhois)); len(params(w, rplWhoisBot)) != 1 {
		t.Fatalf("%v", w)
	}
}

// answerTo sends line and returns what answers it, as lines, up to a PING
// sent after it.
func answerTo(c *client, line string, n int) string {
	c.t.Helper()
	end := "end" + string(rune('a'+n))
	c.send(line, "PING :"+end)
	var out []string
	for _, m := range c.until(is("PONG", "", end)) {
		if m.Command == "PONG" {
			continue
		}
		m.DeleteTag("msgid")
		m.DeleteTag("time")
		l, _ := m.Line()
		out = append(out, strings.TrimRight(l, "\r\n"))
	}
	return strings.Join(out, "\n")
}

// fakeWatch is Options.Watch for tests: credentials it holds are revoked
// on demand.
type fakeWatch struct {
	mu      sync.Mutex
	watches map[*func()]string // revoked → "principal token"
}

func (f *fakeWatch) watch(token, principal string, revoked func()) func() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.watches == nil {
		f.watches = map[*func()]string{}
	}
	k := &revoked
	f.watches[k] = principal + " " + token
	return func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		_, held := f.watches[k]
		delete(f.watches, k)
		return held
	}
}

// revoke revokes principal's token, as a reload does: the watch is
// released, then revoked called.
func (f *fakeWatch) revoke(principal, token string) int {
	f.mu.Lock()
	var gone []func()
	for k, v := range f.watches {
		if v == principal+" "+token {
			gone = append(gone, *k)
			delete(f.watches, k)
		}
	}
	f.mu.Unlock()
	for _, r := range gone {
		r()
	}
	return len(gone)
}

func (f *fakeWatch) held() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.watches)
}

// A revoked credential ends the connections logged in with it at once:
// "ERROR :Closing link (Credentials revoked)", then the link is closed; the
// other principals' connections go on; every watch ends with its
// connection.
func TestRevokedCredentialClosesTheLink(t *testing.T) {
	var fw fakeWatch
	s := newStack(t, Options{Watch: fw.watch}, twoUsers)
	gate := llmtest.NewGate()
	s.llm.Enqueue(llmtest.Text("first"), llmtest.Stream().Role().Content("streaming\n").Pause(gate).Content("never seen").Finish("stop").Done())

	pass := s.dial()
	pass.register("alice", "alice:tok-alice-1")
	sasl := s.dial()
	if got := sasl.sasl("alice2", "alice", "tok-alice-1"); got != rplSASLSuccess {
		t.Fatal(got)
	}
	sasl.send("CAP END")
	sasl.until(is(rplEndOfMOTD))
	bob := s.dial()
	bob.register("bob", "tok-bob-22")
	if n := fw.held(); n != 3 {
		t.Fatalf("%d watches, want 3", n)
	}

	pass.join("#a")
	pass.send("PRIVMSG #a :one")
	pass.answer("#a", "first")
	pass.send("PRIVMSG #a :two")
	pass.answer("#a", "streaming")

	if n := fw.revoke("alice", "tok-alice-1"); n != 2 {
		t.Fatalf("revoked %d watches, want 2", n)
	}
	gate.Release() // the rest of the answer must not reach a revoked client
	for _, c := range []*client{pass, sasl} {
		rest := c.waitClosed()
		if len(rest) == 0 || rest[len(rest)-1].Command != "ERROR" || rest[len(rest)-1].Params[0] != "Closing link (Credentials revoked)" {
			t.Fatalf("%v", rest)
		}
		for _, m := range rest {
			if m.Command == "PRIVMSG" && strings.Contains(m.Params[1], "never seen") {
				t.Fatalf("a revoked client got more of the answer: %v", rest)
			}
		}
	}
	bob.alive("bob-still-here")

	// A credential already revoked when the client logs in: closed at once.
	var once fakeWatch
	s2 := newStack(t, Options{Watch: func(token, principal string, revoked func()) func() bool {
		revoked()
		return once.watch(token, principal, func() {})
	}}, twoUsers)
	late := s2.dial()
	late.send("PASS tok-alice-1", "NICK alice", "USER alice 0 * :A")
	if rest := late.waitClosed(); rest[len(rest)-1].Params[0] != "Closing link (Credentials revoked)" {
		t.Fatalf("%v", rest)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, srv := range []*Server{s.srv, s2.srv} {
		if err := srv.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if fw.held() != 0 || once.held() != 0 {
		t.Fatalf("watches left: %d, %d", fw.held(), once.held())
	}
}

// Over TLS, telling a refused connection why waits for its handshake: a
// connection that never makes one must not hold up the next Accept (before,
// the accept loop waited for its handshake without a deadline).
func TestRefusalOverTLSDoesNotStallAccept(t *testing.T) {
	cert := selfSigned(t)
	s := newStackOn(t, Options{MaxUnregisteredPerAddr: 1}, nil, func(ln net.Listener) net.Listener {
		return tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}})
	})
	dialTLS := func(ip string) *client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 15 * time.Second}
		nc, err := tls.DialWithDialer(d, "tcp", s.addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		return s.clientOn(nc)
	}
	held := dialTLS("127.0.0.1")
	held.alive("held")
	silent := s.dialFrom("127.0.0.1") // refused; never says a word
	ok := dialTLS("127.0.0.2")
	ok.register("bob", "")
	held.alive("still")
	if rest := silent.waitClosed(); len(rest) != 0 {
		t.Fatalf("%v", rest)
	}
}

func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
