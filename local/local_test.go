package local

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hybridgroup/yzma/pkg/llama"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/local/localtest"
)

// openTiny writes a tiny model and opens it.
func openTiny(t *testing.T, tm localtest.Model, o Options) *Model {
	t.Helper()
	o.Library = localtest.LlamaLib(t)
	if o.Threads == 0 {
		o.Threads = 1 // a tiny model; more threads only contend on a busy machine
	}
	o.Path = filepath.Join(t.TempDir(), "tiny.gguf")
	if tm.Template == "" {
		tm.Template = localtest.ChatML
	}
	tm.Write(t, o.Path)
	if o.ContextTokens == 0 {
		o.ContextTokens = 256
	}
	m, err := Open(o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { forget(m) })
	return m
}

// forget frees a test's model and drops it from the process's models.
func forget(m *Model) {
	models.Lock()
	defer models.Unlock()
	for p, x := range models.byPath {
		if x == m {
			delete(models.byPath, p)
		}
	}
	m.Close()
}

func userSays(s string) agentik.ModelRequest {
	return agentik.ModelRequest{System: "You are a test.", Messages: []agentik.ModelMessage{{Role: "user", Content: []agentik.Content{agentik.Text(s)}}}}
}

func generate(t *testing.T, m *Model, req agentik.ModelRequest) (agentik.ModelResponse, []string) {
	t.Helper()
	var deltas []string
	resp, err := m.Generate(context.Background(), req, func(d agentik.ModelDelta) {
		if d.Kind != agentik.DeltaText {
			t.Errorf("delta of kind %q", d.Kind)
		}
		deltas = append(deltas, d.Text)
	})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return resp, deltas
}

// TestStream: the model's answer streams token by token, ends at its
// end-of-turn token (not shown) with finish "stop", and the tokens are
// counted by the model's tokenizer.
func TestStream(t *testing.T) {
	m := openTiny(t, localtest.Hello(), Options{})
	if info := m.Info(); info.Name != "tiny-test" || info.ContextTokens != 256 || info.ImageInput {
		t.Fatalf("Info = %+v", info)
	}
	req := userSays("hi")
	resp, deltas := generate(t, m, req)
	if resp.Text != "Hello world" || resp.FinishReason != "stop" || len(resp.ToolCalls) != 0 {
		t.Fatalf("response %+v", resp)
	}
	if strings.Join(deltas, "") != "Hello world" || len(deltas) != 2 {
		t.Fatalf("deltas %q", deltas)
	}
	prompt, err := applyTemplate(m.template, messages(req))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(prompt, "<|im_start|>system\nYou are a test.<|im_end|>") || !strings.HasSuffix(prompt, "<|im_start|>assistant\n") {
		t.Fatalf("the model's chat template was not applied: %q", prompt)
	}
	if want := int64(m.CountTokens(prompt) + 1); resp.Tokens.Input != want || resp.Tokens.Output != 2 { // +1: the BOS token
		t.Fatalf("tokens %+v, want input %d output 2", resp.Tokens, want)
	}
}

var _ = json.Valid

// TestInterrupt: a call ends at once when its context does, in the middle
// of an answer that would not end by itself, and the slot serves the next
// call.
func TestInterrupt(t *testing.T) {
	m := openTiny(t, localtest.La(), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var deltas []string
	_, err := m.Generate(ctx, userSays("sing"), func(d agentik.ModelDelta) {
		deltas = append(deltas, d.Text)
		if len(deltas) == 3 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if len(deltas) != 3 {
		t.Fatalf("%d deltas after the interrupt at the third: %q", len(deltas), deltas)
	}
	resp, _ := generate(t, m, userSays("sing"))
	if resp.FinishReason != "length" {
		t.Fatalf("the call after an interrupt: %+v", resp)
	}
}

// TestStop: an answer ends at the model's end-of-turn token ("stop"), at
// MaxTokens or when the context is full ("length"); a prompt longer than
// the context is ErrContextOverflow.
func TestStop(t *testing.T) {
	m := openTiny(t, localtest.La(), Options{MaxTokens: 5})
	resp, deltas := generate(t, m, userSays("sing"))
	if resp.Text != "la la la la la" || resp.FinishReason != "length" || resp.Tokens.Output != 5 || len(deltas) != 5 {
		t.Fatalf("MaxTokens 5: %+v, deltas %q", resp, deltas)
	}

	full := openTiny(t, localtest.La(), Options{ContextTokens: 96})
	resp, _ = generate(t, full, userSays("sing"))
	if resp.FinishReason != "length" || resp.Tokens.Input+resp.Tokens.Output != 96 {
		t.Fatalf("a full context: %+v", resp.Tokens)
	}
	_, err := full.Generate(context.Background(), userSays(strings.Repeat("long ", 40)), func(agentik.ModelDelta) { t.Error("a delta") })
	if !errors.Is(err, agentik.ErrContextOverflow) {
		t.Fatalf("a prompt beyond the context: %v", err)
	}

	hello := openTiny(t, localtest.Hello(), Options{MaxTokens: 5})
	if resp, _ := generate(t, hello, userSays("hi")); resp.FinishReason != "stop" || resp.Text != "Hello world" {
		t.Fatalf("an answer that ends by itself: %+v", resp)
	}
}

var weather = agentik.ToolSpec{Name: "weather", Description: "The weather", Parameters: agentik.RawJSON(
	`{"type":"object","properties":{"unit":{"enum":["celsius","fahrenheit"]},"days":{"type":"integer"}},"required":["unit"]}`)}

// TestToolCallGrammar: the template has no tool format, so the model is
// told the tool protocol; when it starts a call, a grammar holds it to a
// JSON call of an offered tool with arguments its schema allows, though
// its weights are random.
func TestToolCallGrammar(t *testing.T) {
	m := openTiny(t, localtest.Model{Next: map[int]int{localtest.Byte('\n'): localtest.TokToolCall}}, Options{ContextTokens: 1024})
	clock := agentik.ToolSpec{Name: "clock", Parameters: agentik.RawJSON(`{"type":"object","properties":{}}`)}
	req := userSays("weather?")
	for _, tools := range [][]agentik.ToolSpec{{clock, weather}, {weather}} {
		req.Tools = tools
		resp, deltas := generate(t, m, req)
		if len(deltas) != 0 || resp.Text != "" || resp.FinishReason != "tool_calls" || len(resp.ToolCalls) != 1 {
			t.Fatalf("response %+v, deltas %q", resp, deltas)
		}
		c := resp.ToolCalls[0]
		t.Logf("offered %d tools, the call: %s %s", len(tools), c.Name, c.Arguments)
		checkCall(t, tools, c)
	}
	prompt, _ := applyTemplate(m.template, messages(req))
	if !strings.Contains(prompt, `{"name":"weather","description":"The weather","parameters":{"type":"object"`) || !strings.Contains(prompt, toolCallTag) {
		t.Fatalf("the tools are not told: %q", prompt)
	}

	// Without tools the same model just says the tag's text (and then
	// nothing: its next tokens are <unk>, which are not text).
	resp, _ := generate(t, m, userSays("weather?"))
	if len(resp.ToolCalls) != 0 || resp.Text != toolCallTag || resp.FinishReason != "length" {
		t.Fatalf("a call without tools: %+v", resp)
	}
}

// checkCall fails unless c calls one of tools with arguments its schema
// (clock's or weather's) allows.
func checkCall(t *testing.T, tools []agentik.ToolSpec, c agentik.ToolCall) {
	t.Helper()
	var args map[string]any
	if err := json.Unmarshal(c.Arguments, &args); err != nil || c.ID == "" {
		t.Fatalf("call %+v: %v", c, err)
	}
	offered := false
	for _, tool := range tools {
		offered = offered || tool.Name == c.Name
	}
	if !offered {
		t.Fatalf("a call of %q, not offered", c.Name)
	}
	switch c.Name {
	case "clock":
		if len(args) != 0 {
			t.Fatalf("clock takes no arguments: %s", c.Arguments)
		}
	case "weather":
		if u := args["unit"]; u != "celsius" && u != "fahrenheit" {
			t.Fatalf("weather's unit: %s", c.Arguments)
		}
		if d, ok := args["days"]; ok && d != float64(int64(d.(float64))) {
			t.Fatalf("weather's days: %s", c.Arguments)
		}
		for k := range args {
			if k != "unit" && k != "days" {
				t.Fatalf("weather has no %q: %s", k, c.Arguments)
			}
		}
	}
}

// TestKVCacheReuse: a conversation's next turn keeps the previous turn's
// cache and decodes only what is new; a rewritten history is rebuilt, and
// the answer is the same either way.
func TestKVCacheReuse(t *testing.T) {
	m := openTiny(t, localtest.Hello(), Options{})
	first := userSays("hi")
	resp, _ := generate(t, m, first)
	if m.lastKept.Load() != 0 {
		t.Fatalf("a first call kept %d tokens", m.lastKept.Load())
	}
	next := first
	next.Messages = append(append([]agentik.ModelMessage(nil), first.Messages...),
		agentik.ModelMessage{Role: "assistant", Content: []agentik.Content{agentik.Text(resp.Text)}},
		agentik.ModelMessage{Role: "user", Content: []agentik.Content{agentik.Text("again")}})
	resp2, _ := generate(t, m, next)
	if resp2.Text != "Hello world" {
		t.Fatalf("second turn: %+v", resp2)
	}
	if m.lastKept.Load() < resp.Tokens.Input {
		t.Fatalf("the second turn kept %d tokens of the cache, the first turn's prompt is %d", m.lastKept.Load(), resp.Tokens.Input)
	}
	rewritten := next
	rewritten.System = "Another system prompt."
	resp3, _ := generate(t, m, rewritten)
	a, _ := applyTemplate(m.template, messages(next))
	b, _ := applyTemplate(m.template, messages(rewritten))
	shared := commonPrefix(llama.Tokenize(m.vocab, a, true, true), llama.Tokenize(m.vocab, b, true, true))
	if resp3.Text != "Hello world" || m.lastKept.Load() != int64(shared) || shared > 20 {
		t.Fatalf("a rewritten history kept %d tokens, shares %d: %+v", m.lastKept.Load(), shared, resp3)
	}
}

// TestSlotsQueue: calls beyond the model's slots wait for one and then
// run; none fails.
func TestSlotsQueue(t *testing.T) {
	m := openTiny(t, localtest.Hello(), Options{Slots: 1})
	queued := make(chan struct{})
	m.onQueue = func() { close(queued) }
	release := make(chan struct{})
	first := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		once := sync.Once{}
		_, err := m.Generate(context.Background(), userSays("hi"), func(agentik.ModelDelta) {
			once.Do(func() { close(started); <-release })
		})
		first <- err
	}()
	<-started
	second := make(chan agentik.ModelResponse, 1)
	go func() {
		resp, err := m.Generate(context.Background(), userSays("hi"), func(agentik.ModelDelta) {})
		if err != nil {
			t.Error(err)
		}
		second <- resp
	}()
	<-queued
	select {
	case <-second:
		t.Fatal("the second call ran while the only slot was taken")
	default:
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if resp := <-second; resp.Text != "Hello world" {
		t.Fatalf("the queued call: %+v", resp)
	}
}

// TestOneModelPerFile: agents naming the same file share one model.
func TestOneModelPerFile(t *testing.T) {
	m := openTiny(t, localtest.Hello(), Options{})
	again, err := Open(Options{Library: localtest.LlamaLib(t), Path: filepath.Join(filepath.Dir(m.path), ".", "tiny.gguf")})
	if err != nil || again != m {
		t.Fatalf("Open again: %p %v, want %p", again, err, m)
	}
}

// TestMissingLibrary: no folder, or one without llama.cpp's libraries, is
// a start-up error that says what is missing.
func TestMissingLibrary(t *testing.T) {
	for _, c := range []struct{ dir, want string }{
		{"", "AGENTIK_LLAMA_LIB"},
		{filepath.Join(t.TempDir(), "nowhere"), "is not a folder"},
		{t.TempDir(), "no libggml.so in"},
	} {
		err := loadLibrary(c.dir)
		if !errors.Is(err, ErrLibrary) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("loadLibrary(%q) = %v, want %q", c.dir, err, c.want)
		}
	}
}

// TestWrongLibrary: a llama.cpp of another release, or a library that is
// not llama.cpp at all, is refused before anything of it is used.
func TestWrongLibrary(t *testing.T) {
	lib := localtest.LlamaLib(t)
	real, err := filepath.Glob(filepath.Join(lib, "*.so"))
	if err != nil || len(real) == 0 {
		t.Fatalf("no libraries in %s: %v", lib, err)
	}
	// linked makes a folder of links to the real libraries but for
	// libllama.so, which replace writes.
	linked := func(replace func(dir string)) string {
		dir := t.TempDir()
		for _, f := range real {
			if !strings.HasPrefix(filepath.Base(f), "libllama.") {
				if err := os.Symlink(f, filepath.Join(dir, filepath.Base(f))); err != nil {
					t.Fatal(err)
				}
			}
		}
		replace(dir)
		return dir
	}

	older := linked(func(dir string) {
		b, err := os.ReadFile(filepath.Join(lib, "libllama.v0.5.0.so"))
		if err != nil {
			t.Fatal(err)
		}
		// The same library, reporting release 0.4.0 (the string
		// llama_version returns, patched in place).
		if n := strings.Count(string(b), "0.5.0-dev\x00"); n != 1 {
			t.Fatalf("%d version strings in libllama", n)
		}
		b = []byte(strings.Replace(string(b), "0.5.0-dev\x00", "0.4.0-dev\x00", 1))
		if err := os.WriteFile(filepath.Join(dir, "libllama.v0.4.0.so"), b, 0o755); err != nil {
			t.Fatal(err)
		}
	})
	err = loadLibrary(older)
	if !errors.Is(err, ErrLibrary) || !strings.Contains(err.Error(), "is llama.cpp 0.4.0-dev; this agentik needs llama.cpp 0.5.0") {
		t.Errorf("another release: %v", err)
	}

	foreign := linked(func(dir string) {
		if err := os.Symlink(filepath.Join(lib, "libggml-base.so"), filepath.Join(dir, "libllama.so")); err != nil {
			t.Fatal(err)
		}
	})
	err = loadLibrary(foreign)
	if !errors.Is(err, ErrLibrary) || !strings.Contains(err.Error(), "has no symbol llama_version") {
		t.Errorf("not llama.cpp: %v", err)
	}
}

// TestBadModel: a missing file, a file that is not GGUF, a GGUF llama.cpp
// cannot load and a chat template it does not know are start-up errors
// that name the file and the reason.
func TestBadModel(t *testing.T) {
	lib := localtest.LlamaLib(t)
	dir := t.TempDir()
	notGGUF := filepath.Join(dir, "model.txt")
	if err := os.WriteFile(notGGUF, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	noArch := filepath.Join(dir, "noarch.gguf")
	if err := localtest.WriteGGUF(noArch, []localtest.KV{{Key: "general.architecture", Val: "no-such-arch"}}, nil); err != nil {
		t.Fatal(err)
	}
	badTemplate := filepath.Join(dir, "template.gguf")
	localtest.Model{Next: localtest.Hello().Next, Template: "{{ messages | something_unknown }}"}.Write(t, badTemplate)
	for _, c := range []struct{ path, want string }{
		{"", "no model file given"},
		{filepath.Join(dir, "missing.gguf"), "cannot read"},
		{notGGUF, "is not a GGUF file"},
		{noArch, "could not load"},
		{badTemplate, "its chat template is not one llama.cpp 0.5.0 knows"},
	} {
		m, err := Open(Options{Library: lib, Path: c.path, ContextTokens: 64, Threads: 1})
		if err == nil {
			forget(m)
		}
		if !errors.Is(err, ErrModel) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%q) = %v, want %q", c.path, err, c.want)
		}
	}
}

// TestSlotsParallel: with two slots, a second call runs while the first
// is held in the middle of its answer (it does not queue), and the
// conversation that comes back finds its own cache.
func TestSlotsParallel(t *testing.T) {
	m := openTiny(t, localtest.Hello(), Options{Slots: 2})
	m.onQueue = func() { t.Error("a call queued with a slot free") }
	a := userSays("first conversation")
	b := userSays("second conversation, another one")
	held := make(chan struct{})
	release := make(chan struct{})
	done := make(chan agentik.ModelResponse, 1)
	go func() {
		once := sync.Once{}
		resp, err := m.Generate(context.Background(), a, func(agentik.ModelDelta) {
			once.Do(func() { close(held); <-release })
		})
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	<-held
	if resp, _ := generate(t, m, b); resp.Text != "Hello world" {
		t.Fatalf("the parallel call: %+v", resp)
	}
	close(release)
	ra := <-done
	if ra.Text != "Hello world" {
		t.Fatalf("the held call: %+v", ra)
	}
	// Each conversation's next turn finds its whole previous prompt.
	for _, c := range []struct {
		req  agentik.ModelRequest
		resp agentik.ModelResponse
	}{{a, ra}, {b, agentik.ModelResponse{Text: "Hello world"}}} {
		next := c.req
		next.Messages = append(append([]agentik.ModelMessage(nil), c.req.Messages...),
			agentik.ModelMessage{Role: "assistant", Content: []agentik.Content{agentik.Text(c.resp.Text)}},
			agentik.ModelMessage{Role: "user", Content: []agentik.Content{agentik.Text("more")}})
		prev, _ := applyTemplate(m.template, messages(c.req))
		want := int64(len(llama.Tokenize(m.vocab, prev, true, true)))
		generate(t, m, next)
		if m.lastKept.Load() < want {
			t.Fatalf("%q: kept %d tokens, its previous prompt is %d", agentik.JoinText(c.req.Messages[0].Content), m.lastKept.Load(), want)
		}
	}
}
