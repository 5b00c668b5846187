package mcp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

// runRawTestServer is a hand-written stdio MCP server (no SDK on its side)
// that answers the handshake and tools/list correctly, then answers some
// tools/call requests with garbage: lines that are not JSON, JSON that is
// not JSON-RPC, responses to ids nobody asked for, and results of the
// wrong shape. "echo" answers correctly.
func runRawTestServer() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := bufio.NewWriter(os.Stdout)
	line := func(s string) {
		out.WriteString(s + "\n")
		out.Flush()
	}
	reply := func(id json.RawMessage, result string) {
		line(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result))
	}
	tools := []string{"echo", "garbage", "garbage_exit", "not_jsonrpc", "wrong_id",
		"result_number", "result_string", "content_string", "content_unknown", "content_unknown_type", "content_bad_text", "is_error_string"}
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string          `json:"protocolVersion"`
				Name            string          `json:"name"`
				Arguments       json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || len(req.ID) == 0 {
			continue // notifications, cancellations
		}
		switch req.Method {
		case "initialize":
			v, _ := json.Marshal(req.Params.ProtocolVersion)
			reply(req.ID, fmt.Sprintf(`{"protocolVersion":%s,"capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"0"}}`, v))
		case "ping":
			reply(req.ID, `{}`)
		case "tools/list":
			var b strings.Builder
			for i, n := range tools {
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, `{"name":%q,"description":"raw %s","inputSchema":{"type":"object"}}`, n, n)
			}
			reply(req.ID, `{"tools":[`+b.String()+`]}`)
		case "tools/call":
			switch req.Params.Name {
			case "echo":
				var a struct{ Text string }
				json.Unmarshal(req.Params.Arguments, &a)
				t, _ := json.Marshal("echo: " + a.Text)
				reply(req.ID, `{"content":[{"type":"text","text":`+string(t)+`}]}`)
			case "garbage": // not JSON at all, and the server stays up
				line("Traceback (most recent call last): this is not JSON")
				line(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"content":[`)
			case "garbage_exit": // not JSON, then the server exits
				line("\x00\xff garbage \x1b[31m")
				os.Exit(0)
			case "not_jsonrpc": // valid JSON, not a JSON-RPC message
				line(`{"hello":"world","id":` + string(req.ID) + `}`)
			case "wrong_id": // an answer to a call nobody made; the real one never comes
				reply(json.RawMessage(`"no-such-call"`), `{"content":[{"type":"text","text":"lost"}]}`)
			case "result_number":
				reply(req.ID, `42`)
			case "result_string":
				reply(req.ID, `"just a string"`)
			case "content_string":
				reply(req.ID, `{"content":"not an array"}`)
			case "content_unknown":
				reply(req.ID, `{"content":[{"type":"hologram","data":{"x":1}},{"type":"text","text":"still here"}]}`)
			case "content_unknown_type":
				reply(req.ID, `{"content":[{"type":"hologram"},{"type":"text","text":"still here"}]}`)
			case "content_bad_text":
				reply(req.ID, `{"content":[{"type":"text","text":{"nested":true}}]}`)
			case "is_error_string":
				reply(req.ID, `{"content":[{"type":"text","text":"hm"}],"isError":"yes"}`)
			default:
				line(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"unknown tool"}}`, req.ID))
			}
		default:
			line(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, req.ID))
		}
	}
}

func rawServer(name string) ServerConfig {
	return selfServer(name, map[string]string{rawEnv: "1"})
}

// (a) A server answering tools/call with bytes that are not a JSON-RPC
// response: the call is an error result the model sees, the turn goes on
// to completion, and a later call works (on a restarted server where the
// connection was lost).
func TestGarbageOnStdoutIsAToolError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tool    string
		restart bool // the connection is lost: the server must be restarted
	}{
		{"garbage", true},
		{"garbage_exit", true},
		{"not_jsonrpc", true},
		{"wrong_id", false},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			t.Parallel()
			cfg := rawServer("raw")
			cfg.Timeout = 2 * time.Second // bounds wrong_id, whose answer never comes
			src := startSource(t, &Config{Servers: []ServerConfig{cfg}}, testOptions(t))
			h := newHarness(t, src, 10*time.Second)
			h.llm.Enqueue(llmtest.ToolCalls(llmtest.Call(tc.tool, `{}`).WithID("g1")), llmtest.Text("survived"))
			start := time.Now()
			c, evs := h.turn("break it")
			if end := evs[len(evs)-1]; end.Reason != agentik.EndCompleted {
				t.Fatalf("turn ended %+v", end)
			}
			if took := time.Since(start); took > cfg.Timeout+3*time.Second {
				t.Fatalf("turn took %s", took)
			}
			r := results(t, c)[tc.tool]
			txt := agentik.JoinText(r.Content)
			if !r.IsError || txt == "" {
				t.Fatalf("result %+v", r)
			}
			if m := toolMessages(h)["g1"].Text(); !strings.Contains(m, txt) {
				t.Fatalf("model saw %q, journal has %q", m, txt)
			}
			t.Logf("%s → %q (health %+v)", tc.tool, txt, src.Health()[0])
			if tc.restart {
				waitFor(t, "the restart", func() bool {
					hs := src.Health()[0]
					return hs.State == StateUp && hs.Restarts >= 1
				})
			}
			h.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("echo", `{"text":"back"}`).WithID("g2")), llmtest.Text("fine"))
			c, evs = h.turn("again")
			if end := evs[len(evs)-1]; end.Reason != agentik.EndCompleted {
				t.Fatalf("second turn ended %+v", end)
			}
			if r := results(t, c)["echo"]; r.IsError || agentik.JoinText(r.Content) != "echo: back" {
				t.Fatalf("later call: %+v (health %+v)", r, src.Health())
			}
		})
	}
}

// (b) Well-formed JSON-RPC whose tools/call result has the wrong shape:
// each call ends (error result or best-effort mapping), never a panic or
// a stuck call, the turn completes and the session stays usable.
func TestMalformedToolResultsAreHandled(t *testing.T) {
	t.Parallel()
	cfg := rawServer("raw")
	cfg.Timeout = 5 * time.Second
	src := startSource(t, &Config{Servers: []ServerConfig{cfg}}, testOptions(t))
	h := newHarness(t, src, 10*time.Second)
	bad := []string{"result_number", "result_string", "content_string", "content_unknown", "content_unknown_type", "content_bad_text", "is_error_string"}
	var calls []llmtest.CallSpec
	for _, n := range bad {
		calls = append(calls, llmtest.Call(n, `{}`).WithID("b_"+n))
	}
	calls = append(calls, llmtest.Call("echo", `{"text":"alongside"}`).WithID("b_echo"))
	h.llm.Enqueue(llmtest.ToolCalls(calls...), llmtest.Text("done"))
	start := time.Now()
	c, evs := h.turn("bad shapes")
	if end := evs[len(evs)-1]; end.Reason != agentik.EndCompleted {
		t.Fatalf("turn ended %+v", end)
	}
	if took := time.Since(start); took >= cfg.Timeout {
		t.Fatalf("a call got stuck until the timeout (%s)", took)
	}
	res := results(t, c)
	seen := toolMessages(h)
	for _, n := range bad {
		r, ok := res[n]
		txt := agentik.JoinText(r.Content)
		if !ok || txt == "" || !strings.Contains(seen["b_"+n].Text(), txt) {
			t.Errorf("%s: %+v (model saw %q)", n, r, seen["b_"+n].Text())
			continue
		}
		if strings.Contains(txt, "did not answer") || strings.Contains(txt, "went away") || strings.Contains(txt, "cannot be reached") {
			t.Errorf("%s: %q", n, txt)
		}
		if strings.Contains(txt, "Go value") || strings.Contains(txt, "struct {") {
			t.Errorf("%s: the model is shown decoder internals: %q", n, txt)
		}
		t.Logf("%s → is_error=%v %q", n, r.IsError, txt)
	}
	if r := res["echo"]; r.IsError || agentik.JoinText(r.Content) != "echo: alongside" {
		t.Errorf("echo in the same round: %+v", r)
	}
	if txt, isErr := callText(t, lookupTool(t, src, "echo"), `{"text":"after"}`); isErr || txt != "echo: after" {
		t.Fatalf("after the bad results: %q %v (health %+v)", txt, isErr, src.Health())
	}
	if hs := src.Health()[0]; hs.Restarts != 0 {
		t.Errorf("a malformed result cost the session: %+v", hs)
	}
}
