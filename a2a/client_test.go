package a2a

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

type convKey struct{}

func keyed(ctx context.Context, k string) context.Context {
	return context.WithValue(ctx, convKey{}, k)
}

func keyOf(ctx context.Context) string { s, _ := ctx.Value(convKey{}).(string); return s }

// TestSourceKeepsRemoteContexts uses the facade of a real agent as the remote
// agent, over 1.0 (its card) and 0.3 (its 0.3-only card): one remote context
// per local conversation key.
func TestSourceKeepsRemoteContexts(t *testing.T) {
	remote := newEnv(t, envOpts{})
	for _, tc := range []struct {
		name, url string
		want      Version
	}{
		{"v1", remote.srv.URL, V1},
		{"v03", remote.srv.URL + LegacyCardPath, V03},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := NewSource(t.Context(), SourceOptions{Agents: []Remote{{URL: tc.url}}, ConversationKey: keyOf})
			defer src.Close()
			ts := src.Tools(t.Context())
			if len(ts) != 1 || ts[0].Spec().Name != "Test_agent" || !strings.Contains(ts[0].Spec().Description, "A test agent") {
				t.Fatalf("tools: %+v", ts)
			}
			if v := src.agents[0].get().Card().Version; v != tc.want {
				t.Fatalf("protocol %v, want %v", v, tc.want)
			}
			tool := ts[0]
			call := func(key, msg string) agentik.ToolResult {
				t.Helper()
				res, err := tool.Call(keyed(t.Context(), key), agentik.RawJSON(`{"message":"`+msg+`"}`))
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			remote.llm.Enqueue(llmtest.Text("four"), llmtest.Text("twelve"), llmtest.Text("other"))
			n := len(remote.llm.Requests())
			if r := call("c1", "2+2?"); r.IsError || agentik.JoinText(r.Content) != "four" {
				t.Fatalf("first call: %+v", r)
			}
			if r := call("c1", "times 3?"); agentik.JoinText(r.Content) != "twelve" {
				t.Fatalf("second call: %+v", r)
			}
			if r := call("c2", "unrelated"); agentik.JoinText(r.Content) != "other" {
				t.Fatalf("third call: %+v", r)
			}
			reqs := remote.llm.Requests()[n:]
			if !strings.Contains(string(reqs[1].Raw), "2+2?") {
				t.Fatal("the same conversation did not continue the remote context")
			}
			if strings.Contains(string(reqs[2].Raw), "2+2?") {
				t.Fatal("another conversation reused the remote context")
			}
		})
	}
}

// TestSourceFailures: bad arguments, a failing remote turn and an
// unreachable agent are results the model sees, never errors.
func TestSourceFailures(t *testing.T) {
	remote := newEnv(t, envOpts{})
	src := NewSource(t.Context(), SourceOptions{Agents: []Remote{{URL: remote.srv.URL}}})
	defer src.Close()
	tool := src.Tools(t.Context())[0]
	res, err := tool.Call(t.Context(), agentik.RawJSON(`{"msg":1}`))
	if err != nil || !res.IsError {
		t.Fatalf("bad arguments: %+v %v", res, err)
	}
	remote.llm.Enqueue(llmtest.ServerError())
	res, err = tool.Call(t.Context(), agentik.RawJSON(`{"message":"hi"}`))
	if err != nil || !res.IsError || !strings.Contains(agentik.JoinText(res.Content), "failed") {
		t.Fatalf("failing remote: %+v %v", res, err)
	}

	dead := httptest.NewServer(nil)
	url := dead.URL
	dead.Close()
	src2 := NewSource(t.Context(), SourceOptions{Agents: []Remote{{URL: url}}})
	defer src2.Close()
	if ts := src2.Tools(t.Context()); len(ts) != 0 {
		t.Fatalf("unreachable agent offered: %v", ts)
	}
	// An agent that goes away after start-up: the call is a tool error.
	gone := newEnv(t, envOpts{})
	src3 := NewSource(t.Context(), SourceOptions{Agents: []Remote{{URL: gone.srv.URL}}})
	defer src3.Close()
	tool3 := src3.Tools(t.Context())[0]
	gone.srv.CloseClientConnections()
	gone.srv.Close()
	res, err = tool3.Call(t.Context(), agentik.RawJSON(`{"message":"hi"}`))
	if err != nil || !res.IsError {
		t.Fatalf("vanished remote: %+v %v", res, err)
	}
}
