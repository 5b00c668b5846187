package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
)

// langgraphFacade is the LangGraph API in TestAgentsEveryFacade: a thread,
// then runs/wait. The key goes as x-api-key, as the SDK sends it.
var langgraphFacade = facade{
	name: "langgraph",
	say: func(t *testing.T, p *proc, base, token, text string) (string, string) {
		url := p.url + base + "/langgraph"
		status, body := lgDo(t, "POST", url+"/threads", token, map[string]any{})
		if status != 200 {
			return "", lgCode(body)
		}
		var th struct {
			ThreadID string `json:"thread_id"`
		}
		json.Unmarshal([]byte(body), &th)
		status, body = lgDo(t, "POST", url+"/threads/"+th.ThreadID+"/runs/wait", token, map[string]any{
			"assistant_id": lgAssistant(base),
			"input":        map[string]any{"messages": []map[string]any{{"type": "human", "content": text}}},
		})
		if status != 200 {
			return "", lgCode(body)
		}
		var v struct {
			Messages []struct {
				Type    string `json:"type"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		json.Unmarshal([]byte(body), &v)
		if n := len(v.Messages); n > 0 && v.Messages[n-1].Type == "ai" {
			return v.Messages[n-1].Content, ""
		}
		t.Fatalf("langgraph: no answer in %s", body)
		return "", ""
	},
	attach: func(t *testing.T, p *proc, base, token, id string) string {
		url := p.url + base + "/langgraph/threads/" + id
		codes := map[string]bool{}
		for _, c := range []struct {
			method, path string
			body         any
		}{
			{"GET", "", nil}, {"GET", "/state", nil}, {"POST", "/history", map[string]any{}},
			{"PATCH", "", map[string]any{"metadata": map[string]any{"title": "taken"}}},
			{"POST", "/runs/wait", map[string]any{"assistant_id": lgAssistant(base), "input": map[string]any{"messages": []map[string]any{{"type": "human", "content": "hi"}}}}},
			{"POST", "/copy", nil}, {"DELETE", "", nil},
		} {
			status, body := lgDo(t, c.method, url+c.path, token, c.body)
			codes[lgCode(body)+"/"+http.StatusText(status)] = true
		}
		if len(codes) != 1 || !codes[agentik.ENotFound+"/Not Found"] {
			return strings.Join(keys(codes), ",")
		}
		return agentik.ENotFound
	},
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// lgAssistant is the assistant a facade base serves: the agent of
// /agents/{id}, the default (alpha) at /langgraph.
func lgAssistant(base string) string {
	if id, ok := strings.CutPrefix(base, "/agents/"); ok {
		return id
	}
	return "alpha"
}

// lgDo sends a LangGraph API request with the key in x-api-key.
func lgDo(t *testing.T, method, url, token string, body any) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(ctx, method, url, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("X-Api-Key", token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// lgCode is the error code of a LangGraph API error ({"detail","code"}),
// or of the edge's refusal ({"error":{"code"}}).
func lgCode(body string) string {
	var v struct {
		Code string `json:"code"`
	}
	json.Unmarshal([]byte(body), &v)
	if v.Code != "" {
		return v.Code
	}
	return errCode(body)
}

func init() { facades = append(facades, langgraphFacade) }
