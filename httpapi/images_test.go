package httpapi

import (
	"bytes"
	"net/http"
	"strconv"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/internal/stacktest"
)

// TestImageEndpoint: GET {p}/conversations/{id}/messages/{seq}/images/{n}
// serves an image of the journal as bytes with its type, behind the same
// auth as the rest (another principal: 404), and 404 for what is not there.
func TestImageEndpoint(t *testing.T) {
	ctx := testCtx(t)
	st := stacktest.New(t, stacktest.Engine(func(o *engine.Options) {
		o.Tools = nil // an agent without tools
		o.ImageInput = true
	}))
	gate := edge.New(edge.Options{Tokens: tokenNames{"alice", "bob"}})
	e := newEnv(t, st.Engine, Options{Guard: func(h http.Handler, access edge.Access) http.Handler {
		return gate.Guard(h, edge.Route{Access: access})
	}})
	alice := NewClient(e.base, WithToken("alice"))
	info, err := alice.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	conv, err := alice.Conversation(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{1}, 40)...)
	gif := append([]byte("GIF89a"), bytes.Repeat([]byte{2}, 20)...)
	res, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{
		agentik.Image("image/png", png), agentik.Text("two pictures"), agentik.Image("image/gif", gif)}})
	if err != nil {
		t.Fatal(err)
	}
	path := "/agentik/conversations/" + info.ID + "/messages/" + strconv.FormatInt(res.Seq, 10) + "/images/"
	for n, want := range map[string]struct {
		body []byte
		mime string
	}{"0": {png, "image/png"}, "1": {gif, "image/gif"}} {
		status, body := e.raw("GET", path+n, "", "", "Authorization", "Bearer alice")
		if status != 200 || !bytes.Equal(body, want.body) {
			t.Fatalf("image %s: %d %q", n, status, body)
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+path+n, nil)
		req.Header.Set("Authorization", "Bearer alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Header.Get("Content-Type") != want.mime || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("headers %v", resp.Header)
		}
	}
	for _, tc := range []struct {
		path, token string
		status      int
	}{
		{path + "0", "", 401},
		{path + "0", "bob", 404},
		{path + "2", "alice", 404},
		{path + "-1", "alice", 404},
		{path + "x", "alice", 404},
		{"/agentik/conversations/" + info.ID + "/messages/999/images/0", "alice", 404},
		{"/agentik/conversations/" + info.ID + "/messages/0/images/0", "alice", 404},
		{"/agentik/conversations/not-an-id/messages/1/images/0", "alice", 404},
	} {
		var hdr []string
		if tc.token != "" {
			hdr = []string{"Authorization", "Bearer " + tc.token}
		}
		status, body := e.raw("GET", tc.path, "", "", hdr...)
		if status != tc.status {
			t.Fatalf("%s as %q: %d %s", tc.path, tc.token, status, body)
		}
		if status == 404 && errorCode(t, body) != agentik.ENotFound {
			t.Fatalf("%s: %s", tc.path, body)
		}
	}
}
