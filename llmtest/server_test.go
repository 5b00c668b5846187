package llmtest_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/llmtest"
)

const chatBody = `{"model":"m1","stream":true,"stream_options":{"include_usage":true},
 "messages":[{"role":"system","content":"sys"},{"role":"user","content":[{"type":"text","text":"hi "},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]},
 {"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
 {"role":"tool","tool_call_id":"c1","content":"ok"}],
 "tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`

func post(t *testing.T, s *llmtest.Server, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// events reads SSE data payloads until EOF or error.
func events(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out, sc.Err()
}

func TestTextStreamShape(t *testing.T) {
	s := llmtest.NewServer()
	defer s.Close()
	s.Enqueue(llmtest.Text("Hello big world"))
	resp := post(t, s, chatBody)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	evs, err := events(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if evs[len(evs)-1] != "[DONE]" {
		t.Fatalf("last event %q", evs[len(evs)-1])
	}
	var text strings.Builder
	var finish string
	var usage map[string]any
	for _, e := range evs[:len(evs)-1] {
		var c struct {
			ID      string `json:"id"`
			Object  string `json:"object"`
			Model   string `json:"model"`
			Choices []struct {
				Delta struct {
					Content *string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage map[string]any `json:"usage"`
		}
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatalf("chunk %q: %v", e, err)
		}
		if c.Object != "chat.completion.chunk" || c.Model != "m1" || c.ID == "" {
			t.Fatalf("bad chunk header %q", e)
		}
		if c.Usage != nil {
			usage = c.Usage
			if !strings.Contains(e, `"choices":[]`) {
				t.Fatalf("usage chunk must have choices: [] : %q", e)
			}
			continue
		}
		if !strings.Contains(e, `"usage":null`) {
			t.Fatalf("content chunk must carry usage null: %q", e)
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				text.WriteString(*ch.Delta.Content)
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	if text.String() != "Hello big world" || finish != "stop" || usage["completion_tokens"] != 3.0 {
		t.Fatalf("text %q finish %q usage %v", text.String(), finish, usage)
	}

	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Model != "m1" || !r.Stream || !r.StreamOptions.IncludeUsage || r.N != 1 {
		t.Fatalf("request %+v", r)
	}
	if r.LastUserText() != "hi " || r.Messages[1].Parts()[1].ImageURL.URL != "data:image/png;base64,AA==" {
		t.Fatalf("user message %+v", r.Messages[1])
	}
	if m := r.Messages[2]; !m.IsString() || m.ToolCalls[0].Function.Name != "f" || r.Messages[3].ToolCallID != "c1" {
		t.Fatalf("tool messages %+v", r.Messages[2:])
	}
	if !reflect.DeepEqual(r.ToolNames(), []string{"f"}) {
		t.Fatalf("tools %v", r.ToolNames())
	}
}

func TestToolCallsAndVariants(t *testing.T) {
	s := llmtest.NewServer()
	defer s.Close()
	s.Enqueue(
		llmtest.ToolCalls(llmtest.Call("a", `{"x":1}`).WithID("id_a"), llmtest.Call("b", `{"y":2}`)),
		llmtest.Stream().ToolCall(-1, "", "c", `{}`).ReasoningField("reasoning", "hm").UsageNullChoices(1, 2),
	)
	evs, _ := events(post(t, s, chatBody).Body)
	all := strings.Join(evs, "\n")
	for _, want := range []string{
		`"tool_calls":[{"index":0,"id":"id_a","type":"function","function":{"name":"a","arguments":""}}]`,
		`"tool_calls":[{"index":1,"id":"call_`,
		`"finish_reason":"tool_calls"`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("stream lacks %s:\n%s", want, all)
		}
	}
	evs, _ = events(post(t, s, chatBody).Body)
	all = strings.Join(evs, "\n")
	for _, want := range []string{
		`"tool_calls":[{"type":"function","function":{"name":"c","arguments":"{}"}}]`,
		`"delta":{"reasoning":"hm"}`,
		`"choices":null`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("stream lacks %s:\n%s", want, all)
		}
	}
	if strings.Contains(all, "[DONE]") {
		t.Error("unterminated script must not send [DONE]")
	}
}

func TestErrorReplyAndDefault(t *testing.T) {
	s := llmtest.NewServer()
	defer s.Close()
	s.Enqueue(llmtest.RateLimited("3"))
	resp := post(t, s, chatBody)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" || !strings.Contains(string(b), `"code":"rate_limit_exceeded"`) {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, b)
	}
	// Queue empty: the default handler answers, also without streaming.
	resp = post(t, s, `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
	var out struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Choices[0].Message.Content != llmtest.DefaultText {
		t.Fatalf("%v %+v", err, out)
	}
	s.Handle(func(r llmtest.Request) llmtest.Reply { return llmtest.Text("echo " + r.LastUserText()) })
	evs, _ := events(post(t, s, `{"model":"m","stream":true,"messages":[{"role":"user","content":"ping"}]}`).Body)
	if !strings.Contains(strings.Join(evs, ""), `"content":"ping"`) {
		t.Fatalf("handler not used: %v", evs)
	}
}

func TestPauseResetHang(t *testing.T) {
	s := llmtest.NewServer()
	g := llmtest.NewGate()
	s.Enqueue(llmtest.Stream().Role().Content("a").Pause(g).Content("b").Reset())
	resp := post(t, s, chatBody)
	<-g.Reached()
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || !strings.Contains(line, `"role":"assistant"`) {
		t.Fatalf("%q %v", line, err)
	}
	g.Release()
	if _, err := io.ReadAll(br); err == nil {
		t.Fatal("reset connection read without error")
	}

	// Hang ends when the server closes, so Close never blocks forever.
	g2 := llmtest.NewGate()
	s.Enqueue(llmtest.Stream().Role().Pause(g2).Hang())
	resp = post(t, s, chatBody)
	<-g2.Reached()
	g2.Release()
	s.Close()
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Fatal("hanging stream ended cleanly after Close")
	}
}

func TestSplit(t *testing.T) {
	if got := llmtest.SplitWords("a b  c"); !reflect.DeepEqual(got, []string{"a ", "b  ", "c"}) {
		t.Fatal(got)
	}
	if got := llmtest.SplitN(`{"é":1}`, 3); strings.Join(got, "") != `{"é":1}` || len(got) < 2 {
		t.Fatal(got)
	}
}

func TestDelaysCutByClose(t *testing.T) {
	s := llmtest.NewServer()
	g := llmtest.NewGate()
	// Reply 1 stalls in its per-chunk delay, reply 2 in a Sleep step; Close
	// must cut both instead of waiting an hour or ending them cleanly.
	s.Enqueue(llmtest.Text("late late").WithDelays(0, time.Hour))
	s.Enqueue(llmtest.Stream().Pause(g).Sleep(time.Hour).Content("late"))
	resp1 := post(t, s, chatBody)
	resp2 := post(t, s, chatBody)
	<-g.Reached()
	g.Release()
	s.Close()
	for i, r := range []*http.Response{resp1, resp2} {
		evs, err := events(r.Body)
		if err == nil || strings.Contains(strings.Join(evs, ""), "late") {
			t.Fatalf("reply %d: %v %v", i, evs, err)
		}
	}
}

// TestLean: a lean server hands its handler the last user message and what
// follows it (here the tool round after it), decoded as a full server
// decodes them, with the request's other fields and its raw body; it keeps
// no requests, and refuses bad JSON as before. A request without a user
// message keeps all its messages.
func TestLean(t *testing.T) {
	full := llmtest.NewServer()
	defer full.Close()
	lean := llmtest.NewServer()
	defer lean.Close()
	lean.Lean()
	got := make(chan llmtest.Request, 2)
	lean.Handle(func(r llmtest.Request) llmtest.Reply { got <- r; return llmtest.Text("ok") })
	body := strings.Replace(chatBody, `"messages":[`, `"messages":[{"role":"user","content":"earlier"},{"role":"assistant","content":"before"},`, 1)
	io.Copy(io.Discard, post(t, full, body).Body)
	io.Copy(io.Discard, post(t, lean, body).Body)
	want, r := full.Requests()[0], <-got
	if len(want.Messages) != 6 || !reflect.DeepEqual(r.Messages, want.Messages[3:]) {
		t.Errorf("lean messages %+v, want %+v", r.Messages, want.Messages[3:])
	}
	if r.Model != "m1" || !r.Stream || r.StreamOptions == nil || !reflect.DeepEqual(r.Tools, want.Tools) || string(r.Raw) != body {
		t.Errorf("lean request %+v", r)
	}
	if r.LastUserText() != "hi " {
		t.Errorf("last user text %q", r.LastUserText())
	}
	if n := len(lean.Requests()); n != 0 {
		t.Errorf("a lean server kept %d requests", n)
	}
	io.Copy(io.Discard, post(t, lean, `{"messages":[{"role":"system","content":"s"},{"role":"assistant","content":"a"}]}`).Body)
	if r := <-got; len(r.Messages) != 2 || r.Messages[1].Text() != "a" {
		t.Errorf("without a user message: %+v", r.Messages)
	}
	if resp := post(t, lean, `{"messages":[{"role":"user","content":"x"},`); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("bad JSON: %d", resp.StatusCode)
	}
	if resp := post(t, lean, `{"messages":[{"role":7}]}`); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a role that is not a string: %d", resp.StatusCode)
	}
}
