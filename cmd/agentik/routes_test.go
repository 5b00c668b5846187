package main

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnknownRoutesAnswerTheirWireFormat: a path no route takes, or a
// method its path does not take, is answered in the error envelope of the
// wire format the path belongs to — the native JSON error body, A2A's and
// MCP's JSON-RPC error — never Go's plain-text "404 page not found"; a 405
// keeps its Allow header.
func TestUnknownRoutesAnswerTheirWireFormat(t *testing.T) {
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"), "OPENAI_BASE_URL=http://127.0.0.1:1", "OPENAI_MODEL=test")
	for _, c := range []struct {
		method, path string
		status       int
		rpc          bool
		allow        string // the Allow header a 405 names; or the door whose envelope a 404 is in
	}{
		{"GET", "/nope", 404, false, ""},
		{"POST", "/nope/deeper", 404, false, ""},
		{"GET", "/agentik/nope", 404, false, ""},
		{"GET", "/agents/nobody/agentik", 404, false, ""},
		{"GET", "/agents/agentik/nope", 404, false, ""},
		{"GET", "/agui", 405, false, "POST"},
		{"GET", "/agents/agentik/agui", 405, false, "POST"},
		{"POST", "/a2a/nope", 404, true, ""},
		{"GET", "/agents/agentik/a2a/x", 404, true, ""},
		{"POST", "/mcp/nope", 404, true, ""},
		{"DELETE", "/agents/agentik/mcp/nope", 404, true, ""},
		// The OpenAI and LangGraph doors answer in their own envelopes.
		{"GET", "/v1/nope", 404, false, "openai"},
		{"DELETE", "/v1/chat/completions", 404, false, "openai"},
		{"POST", "/agents/agentik/v1/chat/nope", 404, false, "openai"},
		{"GET", "/langgraph/nope", 404, false, "langgraph"},
		{"POST", "/agents/agentik/langgraph/threads/x/nope", 404, false, "langgraph"},
	} {
		req, _ := http.NewRequest(c.method, p.url+c.path, strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		where := c.method + " " + c.path
		if resp.StatusCode != c.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Errorf("%s: %d %q %s", where, resp.StatusCode, resp.Header.Get("Content-Type"), body)
			continue
		}
		if c.allow == "openai" || c.allow == "langgraph" {
			checkDoorEnvelope(t, where, c.allow, body)
			continue
		}
		if c.allow != "" && !strings.Contains(resp.Header.Get("Allow"), c.allow) {
			t.Errorf("%s: Allow %q", where, resp.Header.Get("Allow"))
		}
		var env struct {
			JSONRPC string `json:"jsonrpc"`
			ID      any    `json:"id"`
			Error   struct {
				Code    any    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &env); err != nil || env.Error.Message == "" {
			t.Errorf("%s: not an error envelope: %s", where, body)
			continue
		}
		if c.rpc {
			if code, ok := env.Error.Code.(float64); env.JSONRPC != "2.0" || !ok || code != -32600 {
				t.Errorf("%s: not a JSON-RPC error: %s", where, body)
			}
			continue
		}
		want := map[int]string{404: "not_found", 405: "method_not_allowed"}[c.status]
		if env.JSONRPC != "" || env.Error.Code != want {
			t.Errorf("%s: code %v, want %s: %s", where, env.Error.Code, want, body)
		}
	}
}

// checkDoorEnvelope checks a 404 of the OpenAI door (OpenAI's error object:
// message, type, code) or of the LangGraph door (the Agent Protocol's
// detail).
func checkDoorEnvelope(t *testing.T, where, door string, body []byte) {
	t.Helper()
	var env struct {
		Error *struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    string `json:"code"`
		} `json:"error"`
		Detail string `json:"detail"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Errorf("%s: not JSON: %s", where, body)
		return
	}
	switch door {
	case "openai":
		if env.Error == nil || env.Error.Message == "" || env.Error.Type != "invalid_request_error" || env.Error.Code != "not_found" {
			t.Errorf("%s: not OpenAI's error object: %s", where, body)
		}
	case "langgraph":
		if env.Detail == "" || env.Error != nil {
			t.Errorf("%s: not the Agent Protocol's error: %s", where, body)
		}
	}
}
