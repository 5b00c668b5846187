package agui

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/internal/stacktest"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/openai"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata/")

// env is the real stack: an engine on a SQLite file, the OpenAI adapter
// talking to a scripted model over HTTP, and the AG-UI facade (with the
// native API beside it) on a real listener.
type env struct {
	t   *testing.T
	llm *llmtest.Server
	eng *engine.Engine
	srv *httptest.Server
	url string // the AG-UI endpoint
	ids atomic.Int64
}

type envOption func(*engine.Options, *Options)

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	return newEnvAuth(t, nil, opts...)
}

// newEnvAuth is newEnv with the facades behind an edge that authenticates
// with tokens (nil: open).
func newEnvAuth(t *testing.T, tokens edge.Tokens, opts ...envOption) *env {
	t.Helper()
	e := &env{t: t}
	ao := Options{newID: func() string { return fmt.Sprintf("m%d", e.ids.Add(1)) }}
	st := stacktest.New(t,
		stacktest.Model(func(o *openai.Options) { o.Timeout = 20 * time.Second }),
		stacktest.Engine(func(eo *engine.Options) {
			eo.SystemPrompt = "You are a test agent."
			eo.ToolTimeout = 5 * time.Second
			for _, o := range opts {
				o(eo, &ao)
			}
		}))
	e.llm, e.eng = st.LLM, st.Engine
	mux := http.NewServeMux()
	gate := edge.New(edge.Options{Tokens: tokens})
	mux.Handle("POST /agui", gate.Guard(NewHandler(e.eng, ao), edge.Route{}))
	httpapi.Mount(mux, "/agentik", e.eng, httpapi.Options{Guard: func(h http.Handler, access edge.Access) http.Handler {
		return gate.Guard(h, edge.Route{Access: access})
	}})
	e.srv = httptest.NewServer(mux)
	e.url = e.srv.URL + "/agui"
	t.Cleanup(func() {
		e.srv.CloseClientConnections()
		e.srv.Close()
	})
	return e
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// response is one POST to the facade, read to the end.
type response struct {
	status int
	ctype  string
	body   []byte
	frames []string         // raw JSON of each data frame
	events []map[string]any // decoded frames
}

func (e *env) post(body string, header ...string) response {
	e.t.Helper()
	req, err := http.NewRequestWithContext(testCtx(e.t), http.MethodPost, e.url, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	r := response{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), body: b}
	if resp.StatusCode == http.StatusOK {
		r.frames, r.events = parseFrames(e.t, b)
	}
	return r
}

// run posts input (a Go value) and checks the stream is a valid AG-UI run.
func (e *env) run(in any) response {
	e.t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		e.t.Fatal(err)
	}
	r := e.post(string(b))
	if r.status != http.StatusOK {
		e.t.Fatalf("status %d: %s", r.status, r.body)
	}
	var ids struct {
		ThreadID, RunID string
		Messages        []struct {
			ToolCalls []struct{ ID string } `json:"toolCalls"`
		}
		Resume []struct {
			InterruptID string `json:"interruptId"`
		}
	}
	json.Unmarshal(b, &ids)
	// Calls the client holds from earlier runs may get their results in
	// this one (an approved call runs in the run that answers it).
	var known []string
	for _, m := range ids.Messages {
		for _, c := range m.ToolCalls {
			known = append(known, c.ID)
		}
	}
	for _, r := range ids.Resume {
		known = append(known, r.InterruptID)
	}
	verifyRun(e.t, r.events, ids.ThreadID, ids.RunID, known...)
	return r
}

// parseFrames splits an SSE body the way @ag-ui/client does (blocks on
// "\n\n", data lines only) and insists on the strict form the facade
// promises: LF only, one "data: " line per frame, or a comment.
func parseFrames(t *testing.T, b []byte) ([]string, []map[string]any) {
	t.Helper()
	if bytes.Contains(b, []byte("\r")) {
		t.Fatalf("CR in stream: %q", b)
	}
	if len(b) > 0 && !bytes.HasSuffix(b, []byte("\n\n")) {
		t.Fatalf("stream does not end with a blank line: %q", b)
	}
	var frames []string
	var evs []map[string]any
	for _, block := range strings.Split(strings.TrimSuffix(string(b), "\n\n"), "\n\n") {
		if strings.HasPrefix(block, ":") {
			continue
		}
		if !strings.HasPrefix(block, "data: ") || strings.Contains(block, "\n") {
			t.Fatalf("bad frame %q", block)
		}
		data := strings.TrimPrefix(block, "data: ")
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("frame is not JSON: %q", data)
		}
		frames = append(frames, data)
		evs = append(evs, ev)
	}
	return frames, evs
}

// verifyRun applies the rules of @ag-ui/client's verifier and schema that
// matter here, plus those the client does not check (ids matching the
// request, a terminal event at all, TOOL_CALL_RESULT for a started call).
// known names calls started in earlier runs that the client holds.
func verifyRun(t *testing.T, evs []map[string]any, threadID, runID string, known ...string) {
	t.Helper()
	fail := func(i int, f string, a ...any) {
		t.Helper()
		t.Fatalf("event %d %v: %s\nall: %v", i, evs[i]["type"], fmt.Sprintf(f, a...), typesOf(evs))
	}
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	text, reasoning, span, calls := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	started := map[string]bool{}
	for _, id := range known {
		started[id] = true
	}
	for i, ev := range evs {
		typ, _ := ev["type"].(string)
		for k, v := range ev {
			if v == nil {
				fail(i, "field %s is null", k)
			}
		}
		if ts, ok := ev["timestamp"].(float64); !ok || ts != float64(int64(ts)) || ts <= 0 {
			fail(i, "timestamp %v is not a positive integer", ev["timestamp"])
		}
		str := func(k string) string {
			s, ok := ev[k].(string)
			if !ok || s == "" {
				fail(i, "%s missing", k)
			}
			return s
		}
		if i == 0 && typ != RunStarted {
			fail(i, "first event must be RUN_STARTED")
		}
		if i > 0 && typ == RunStarted {
			fail(i, "second RUN_STARTED")
		}
		if (typ == RunFinished || typ == RunError) && i != len(evs)-1 {
			fail(i, "events after the terminal event")
		}
		switch typ {
		case RunStarted, RunFinished:
			if str("threadId") != threadID || str("runId") != runID {
				fail(i, "ids %v/%v, want %s/%s", ev["threadId"], ev["runId"], threadID, runID)
			}
			if typ == RunFinished && len(text)+len(reasoning)+len(span)+len(calls) > 0 {
				fail(i, "RUN_FINISHED with open items")
			}
			if o, ok := ev["outcome"].(map[string]any); ok && o["type"] == OutcomeInterrupt {
				ins, _ := o["interrupts"].([]any)
				if len(ins) == 0 {
					fail(i, "interrupt outcome without interrupts")
				}
				seen := map[string]bool{}
				for _, x := range ins {
					in, _ := x.(map[string]any)
					id, _ := in["id"].(string)
					if id == "" || seen[id] || in["reason"] == "" || in["reason"] == nil {
						fail(i, "bad interrupt %v", in)
					}
					seen[id] = true
				}
			}
		case RunError:
			str("message")
		case TextMessageStart:
			id := str("messageId")
			if text[id] {
				fail(i, "text %s already open", id)
			}
			if r, ok := ev["role"]; ok && r != "assistant" {
				fail(i, "role %v", r)
			}
			text[id] = true
		case TextMessageContent, TextMessageEnd:
			id := str("messageId")
			if !text[id] {
				fail(i, "text %s not open", id)
			}
			if typ == TextMessageContent {
				str("delta")
			} else {
				delete(text, id)
			}
		case ReasoningStart, ReasoningEnd:
			id := str("messageId")
			if span[id] == (typ == ReasoningStart) {
				fail(i, "reasoning span %s state", id)
			}
			span[id] = typ == ReasoningStart
			if !span[id] {
				delete(span, id)
			}
		case ReasoningMessageStart:
			id := str("messageId")
			if reasoning[id] || ev["role"] != "reasoning" {
				fail(i, "reasoning message %s", id)
			}
			reasoning[id] = true
		case ReasoningMessageContent, ReasoningMessageEnd:
			id := str("messageId")
			if !reasoning[id] {
				fail(i, "reasoning %s not open", id)
			}
			if typ == ReasoningMessageContent {
				str("delta")
			} else {
				delete(reasoning, id)
			}
		case ToolCallStart:
			id := str("toolCallId")
			str("toolCallName")
			if calls[id] {
				fail(i, "call %s open", id)
			}
			calls[id], started[id] = true, true
		case ToolCallArgs, ToolCallEnd:
			id := str("toolCallId")
			if !calls[id] {
				fail(i, "call %s not open", id)
			}
			if typ == ToolCallArgs {
				str("delta")
			} else {
				delete(calls, id)
			}
		case ToolCallResult:
			if !started[str("toolCallId")] {
				fail(i, "result for a call not started in this run")
			}
			str("messageId")
			if _, ok := ev["content"].(string); !ok {
				fail(i, "content missing")
			}
		case MessagesSnapshot:
			if _, ok := ev["messages"].([]any); !ok {
				fail(i, "messages missing")
			}
		default:
			fail(i, "unexpected type")
		}
	}
	if last, _ := evs[len(evs)-1]["type"].(string); last != RunFinished && last != RunError {
		t.Fatalf("stream ended without RUN_FINISHED/RUN_ERROR: %v", typesOf(evs))
	}
}

func typesOf(evs []map[string]any) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i], _ = ev["type"].(string)
	}
	return out
}

var (
	uuidRE      = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timestampRE = regexp.MustCompile(`"timestamp":[0-9]+`)
)

// normalize makes a transcript stable: journal ids (UUIDs) become <id1>,
// <id2>… in order of first appearance, timestamps become T.
func normalize(s string) string {
	names := map[string]string{}
	s = uuidRE.ReplaceAllStringFunc(s, func(u string) string {
		if n, ok := names[u]; ok {
			return n
		}
		names[u] = fmt.Sprintf("<id%d>", len(names)+1)
		return names[u]
	})
	return timestampRE.ReplaceAllString(s, `"timestamp":T`)
}

// golden compares got with testdata/name (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs (run with -update after checking):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// transcript is the golden form of a run: one frame per line.
func transcript(rs ...response) string {
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteString("---\n")
		}
		if r.status != http.StatusOK {
			fmt.Fprintf(&b, "HTTP %d %s\n%s", r.status, r.ctype, r.body)
			continue
		}
		for _, f := range r.frames {
			b.WriteString(f)
			b.WriteByte('\n')
		}
	}
	return normalize(b.String())
}

// journal returns the conversation's messages through the core.
func (e *env) journal(convID string, principal ...string) []agentik.Message {
	e.t.Helper()
	p := ""
	if len(principal) > 0 {
		p = principal[0]
	}
	return stacktest.Journal(e.t, e.eng, convID, p)
}

// allMessages returns every message of the conversation, of every branch.
func (e *env) allMessages(convID string) []agentik.Message {
	e.t.Helper()
	ctx := testCtx(e.t)
	conv, err := e.eng.Conversation(ctx, convID)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conv.Close()
	page, err := conv.Messages(ctx, agentik.MessagesRequest{Branch: agentik.BranchAll, Limit: agentik.MaxMessagesLimit})
	if err != nil {
		e.t.Fatal(err)
	}
	return page.Messages
}

func journalTypes(msgs []agentik.Message) string {
	var s []string
	for _, m := range msgs {
		s = append(s, m.Type)
	}
	return strings.Join(s, ",")
}

// input builds a RunAgentInput as HttpAgent sends it.
func input(thread, run string, msgs ...map[string]any) map[string]any {
	if msgs == nil {
		msgs = []map[string]any{}
	}
	return map[string]any{"threadId": thread, "runId": run, "protocolVersion": "1.0", "state": map[string]any{},
		"messages": msgs, "tools": []any{}, "context": []any{}, "forwardedProps": map[string]any{}}
}

func user(id, text string) map[string]any {
	return map[string]any{"id": id, "role": "user", "content": text}
}
