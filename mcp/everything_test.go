package mcp

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

// Turns against the official reference server (npm
// @modelcontextprotocol/server-everything, pinned in testdata/npm), over
// stdio and over Streamable HTTP: the scripted model calls a text tool, a
// sum, an image tool, an unknown tool and a tool with bad arguments in one
// round, then answers.
func TestEverythingStdio(t *testing.T) {
	t.Parallel()
	runEverything(t, everythingStdio("everything"))
}

func TestEverythingStreamableHTTP(t *testing.T) {
	t.Parallel()
	url := startEverythingHTTP(t)
	runEverything(t, ServerConfig{Name: "everything", Transport: TransportHTTP, URL: url, Headers: map[string]string{"X-Agentik-Test": "1"}})
}

func runEverything(t *testing.T, sc ServerConfig) {
	sc.Deny = []string{"toggle-*"} // the deny list is applied
	src := startSource(t, &Config{Servers: []ServerConfig{sc}}, testOptions(t))
	if h := src.Health()[0]; h.State != StateUp || h.Protocol != "2025-11-25" || !strings.Contains(h.Server, "everything") {
		t.Fatalf("health %+v", h)
	}
	h := newHarness(t, src, 20*time.Second)
	h.llm.Enqueue(
		llmtest.ToolCalls(
			llmtest.Call("echo", `{"message":"hello from agentik"}`).WithID("c_echo"),
			llmtest.Call("get-sum", `{"a":2,"b":40}`).WithID("c_sum"),
			llmtest.Call("get-tiny-image", `{}`).WithID("c_img"),
			llmtest.Call("no-such-tool", `{}`).WithID("c_unknown"),
			llmtest.Call("echo", `{"message":42}`).WithID("c_bad"),
		),
		llmtest.Text("Done."),
	)
	c, evs := h.turn("use the tools")
	if last := evs[len(evs)-1]; last.Reason != agentik.EndCompleted {
		t.Fatalf("turn ended %+v", last)
	}

	// What the model was offered: MCP tools with their schemas, minus the
	// denied ones; $schema stripped.
	names := offered(h, 0)
	for _, want := range []string{"current_time", "echo", "get-sum", "get-tiny-image"} {
		if !slices.Contains(names, want) {
			t.Errorf("tool %s not offered: %v", want, names)
		}
	}
	for _, n := range names {
		if strings.HasPrefix(n, "toggle-") {
			t.Errorf("denied tool %s offered", n)
		}
	}
	for _, tl := range h.llm.Requests()[0].Tools {
		if tl.Function.Name == "echo" {
			var schema map[string]any
			json.Unmarshal(tl.Function.Parameters, &schema)
			if _, has := schema["$schema"]; has || schema["type"] != "object" || schema["properties"].(map[string]any)["message"] == nil {
				t.Errorf("echo schema %s", tl.Function.Parameters)
			}
		}
	}

	// What the model received back.
	got := toolMessages(h)
	if m := got["c_echo"].Text(); m != "Echo: hello from agentik" {
		t.Errorf("echo → %q", m)
	}
	if m := got["c_sum"].Text(); !strings.Contains(m, "42") {
		t.Errorf("get-sum → %q", m)
	}
	if m := got["c_unknown"].Text(); !strings.Contains(m, "no-such-tool") {
		t.Errorf("unknown tool → %q", m)
	}
	if m := got["c_bad"].Text(); !strings.Contains(strings.ToLower(m), "invalid") {
		t.Errorf("bad arguments → %q", m)
	}
	// The image reaches the model as an image part (the adapter moves it
	// into a user message after the tool messages).
	var imageURL string
	for _, m := range h.llm.Requests()[1].Messages {
		for _, p := range m.Parts() {
			if p.Type == "image_url" && p.ImageURL != nil {
				imageURL = p.ImageURL.URL
			}
		}
	}
	if !strings.HasPrefix(imageURL, "data:image/png;base64,") {
		t.Errorf("no image part reached the model (url %.40q)", imageURL)
	}

	// What the journal holds.
	res := results(t, c)
	if r := res["echo"]; r.Type == "" {
		t.Fatal("no echo result in the journal")
	}
	img := res["get-tiny-image"]
	if img.IsError || !agentik.HasImage(img.Content) {
		t.Errorf("image result %+v", img)
	}
	for _, p := range img.Content {
		if p.Type == agentik.ContentImage {
			raw, _ := base64.StdEncoding.DecodeString(p.Data)
			if p.MIME != "image/png" || !strings.HasPrefix(string(raw), "\x89PNG") {
				t.Errorf("image part %s %.8q", p.MIME, raw)
			}
		}
	}
	if !res["no-such-tool"].IsError {
		t.Errorf("unknown tool result not an error: %+v", res["no-such-tool"])
	}
	if res["get-sum"].IsError {
		t.Errorf("get-sum is an error: %+v", res["get-sum"])
	}
	// Both echo calls are journaled under the same name; the bad one is
	// the error.
	page, _ := c.Messages(t.Context(), agentik.MessagesRequest{Limit: 100})
	var echoErrors, echoOK int
	for _, m := range page.Messages {
		if m.Type == agentik.MsgToolResult && m.Name == "echo" {
			if m.IsError {
				echoErrors++
			} else {
				echoOK++
			}
		}
	}
	if echoErrors != 1 || echoOK != 1 {
		t.Errorf("echo results: %d ok, %d errors", echoOK, echoErrors)
	}
}
