package irc

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ergochat/irc-go/ircmsg"
	"github.com/ergochat/irc-go/ircreader"
)

// FuzzLineHandler feeds arbitrary lines to a registered client of a real
// server (engine, SQLite, scripted model) and checks what the server writes
// back: every line parses, stays within the IRC limits and is valid UTF-8,
// and the server neither panics nor hangs.
func FuzzLineHandler(f *testing.F) {
	for _, seed := range []string{
		"JOIN #a\r\nPRIVMSG #a :hello\r\nCHATHISTORY LATEST #a * 10",
		"CAP LS 302\r\nCAP REQ :message-tags batch labeled-response echo-message\r\nCAP END\r\n@label=x JOIN #b,#c\r\nPART #b :bye",
		"PRIVMSG agentik :\x01VERSION\x01\r\nPRIVMSG agentik :\x01ACTION waves\x01\r\nPRIVMSG agentik :!stop",
		"CHATHISTORY BETWEEN #a msgid=0190~1 timestamp=2020-01-01T00:00:00Z 5\r\nCHATHISTORY TARGETS timestamp=1 timestamp=2 0",
		"AUTHENTICATE PLAIN\r\nAUTHENTICATE " + strings.Repeat("A", 400) + "\r\nAUTHENTICATE +",
		"TOPIC #a :" + strings.Repeat("é", 300) + "\r\nLIST\r\nWHO #a\r\nWHOIS agentik\r\nNAMES #a\r\nMODE #a b",
		"@" + strings.Repeat("k=v;", 1100) + " PING x\r\nNICK " + strings.Repeat("n", 40),
		"PRIVMSG #" + strings.Repeat("ч", 40) + " :x\r\nJOIN #\x07bell\r\nJOIN 0",
		"PRIVMSG #a :\xff\xfe\r\n\x00\r\n:src PRIVMSG\r\n   \r\nUSER a b c d e f",
		"JOIN #a\r\nPRIVMSG #a :!approve\r\nPRIVMSG #a :!deny call_1 " + strings.Repeat("no ", 200) + "\r\nPRIVMSG #a :!approve " + strings.Repeat("x", 300) + " y\r\nPRIVMSG #a :!DENY",
	} {
		f.Add([]byte(seed))
	}
	s := newStack(f, Options{}, nil)
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, data []byte) {
		cl, sv := net.Pipe()
		defer cl.Close()
		s.srv.accept(sv)
		out := make(chan []string, 1)
		go func() {
			var lines []string
			var rd ircreader.Reader
			rd.Initialize(cl, 512, 1<<16)
			for {
				line, err := rd.ReadLine()
				if err != nil {
					out <- lines
					return
				}
				lines = append(lines, string(line))
			}
		}()
		nick := fmt.Sprintf("fz%d", n.Add(1))
		cl.SetWriteDeadline(time.Now().Add(10 * time.Second))
		input := append([]byte("NICK "+nick+"\r\nUSER f 0 * :f\r\n"), data...)
		input = append(input, "\r\nCAP END\r\nQUIT\r\n"...)
		cl.Write(input) // the server may close first
		var lines []string
		select {
		case lines = <-out:
		case <-time.After(20 * time.Second):
			t.Fatalf("server did not close the connection after QUIT; input %q", data)
		}
		for _, l := range lines {
			checkLine(t, l)
		}
	})
}

func checkLine(t *testing.T, l string) {
	t.Helper()
	if !utf8.ValidString(l) || strings.ContainsAny(l, "\x00\r\n") {
		t.Fatalf("bad bytes in %q", l)
	}
	body := l
	if strings.HasPrefix(l, "@") {
		i := strings.IndexByte(l, ' ')
		if i < 0 || i+1 > ircmsg.MaxlenTags {
			t.Fatalf("tags too long in %q", l)
		}
		body = l[i+1:]
	}
	if len(body)+2 > maxLine {
		t.Fatalf("line of %d bytes: %q", len(body)+2, l)
	}
	if _, err := ircmsg.ParseLine(l); err != nil {
		t.Fatalf("unparsable %q: %v", l, err)
	}
	if bytes.HasPrefix([]byte(body), []byte("ERROR")) && !strings.HasPrefix(body, "ERROR :Closing link (") {
		t.Fatalf("odd ERROR %q", l)
	}
}
