package httpapi

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/agentik/agentik"
)

// closingServer answers the first request of each connection and closes
// the connection on reading its second, unanswered: what a client sees when
// the server closed a kept-alive connection (its idle timeout) just as the
// client sent on it. got receives each request's method and path.
func closingServer(t *testing.T, answer string) (url string, got chan string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got = make(chan string, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for i := 0; ; i++ {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					got <- req.Method + " " + req.URL.Path
					if i == 1 {
						return // closed without an answer
					}
					io.WriteString(c, answer)
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String(), got
}

// TestIdempotentRequestsSurviveAClosedKeptAliveConnection: a DELETE or a
// rename that meets a kept-alive connection the server closed is sent again
// on a new one (Go's client does that only for requests marked idempotent;
// TestPostgresAgentStreamSubscribers's workload failed with "connection
// reset by peer" on a DELETE); a POST is not sent twice.
func TestIdempotentRequestsSurviveAClosedKeptAliveConnection(t *testing.T) {
	ctx := context.Background()
	id := agentik.NewID()
	t.Run("delete", func(t *testing.T) {
		url, got := closingServer(t, "HTTP/1.1 204 No Content\r\n\r\n")
		c := NewClient(url, WithHTTPClient(&http.Client{Transport: &http.Transport{}}))
		for i := range 2 {
			if err := c.DeleteConversation(ctx, id); err != nil {
				t.Fatalf("delete %d: %v", i, err)
			}
		}
		if n := len(got); n != 3 {
			t.Fatalf("the server read %d requests, want 3 (the second sent again)", n)
		}
	})
	t.Run("rename", func(t *testing.T) {
		body := `{"id":"` + id + `","title":"x"}`
		url, got := closingServer(t, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
		c := NewClient(url, WithHTTPClient(&http.Client{Transport: &http.Transport{}}))
		for i := range 2 {
			if _, err := c.RenameConversation(ctx, id, "x"); err != nil {
				t.Fatalf("rename %d: %v", i, err)
			}
		}
		if n := len(got); n != 3 {
			t.Fatalf("the server read %d requests, want 3", n)
		}
	})
	t.Run("create is not sent twice", func(t *testing.T) {
		body := `{"id":"` + id + `"}`
		url, got := closingServer(t, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
		c := NewClient(url, WithHTTPClient(&http.Client{Transport: &http.Transport{}}))
		if _, err := c.CreateConversation(ctx, agentik.CreateRequest{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CreateConversation(ctx, agentik.CreateRequest{}); err == nil {
			t.Fatal("the second create succeeded; want the closed connection's error")
		}
		if n := len(got); n != 2 || !strings.HasPrefix(<-got, "POST") {
			t.Fatalf("the server read %d requests, want 2", n)
		}
	})
}
