package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/internal/stacktest"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/openai"
	"github.com/agentik/agentik/tools"
)

var update = flag.Bool("update", false, "rewrite golden files")

// env is the real stack behind the facade: the engine over a SQLite file,
// the OpenAI adapter talking to a scripted llmtest server, served on a real
// listener.
type env struct {
	t   *testing.T
	llm *llmtest.Server
	eng *engine.Engine
	srv *httptest.Server
	url string // the JSON-RPC endpoint
}

type envOpts struct {
	imageInput bool
	keepAlive  time.Duration
	tools      []agentik.Tool         // the agent's tools beside current_time
	approval   agentik.ApprovalPolicy // the agent's approval policy
	loseDeltas bool                   // the bus loses deltas (stacktest.LoseDeltas)
}

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	st := stacktest.New(t,
		stacktest.Model(func(m *openai.Options) { m.ImageInput = o.imageInput }),
		stacktest.Engine(func(eo *engine.Options) {
			eo.Tools = tools.NewRegistry(append([]agentik.Tool{tools.CurrentTime{}}, o.tools...)...)
			eo.Approval = o.approval
			eo.Info = agentik.AgentInfo{ID: "test", Name: "Test agent", Description: "A test agent", Version: "1.2.3"}
			eo.ImageInput = o.imageInput
			if o.loseDeltas {
				stacktest.LoseDeltas(eo)
			}
		}))
	eng := st.Engine
	mux := http.NewServeMux()
	s := NewServer(eng, Options{KeepAlive: o.keepAlive, MaxBodyBytes: 64 << 10})
	mux.Handle("GET "+CardPath, s.CardHandler())
	mux.Handle("GET "+LegacyCardPath, s.CardHandler())
	mux.Handle("/a2a", s)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		eng.Shutdown(ctx) // before the listener closes; the stack's cleanup finds it done
		srv.Close()
	})
	return &env{t: t, llm: st.LLM, eng: eng, srv: srv, url: srv.URL + "/a2a"}
}

// post sends a raw body and returns status, content type and body.
func (e *env) post(body string) (int, string, []byte) {
	e.t.Helper()
	req, _ := http.NewRequestWithContext(e.t.Context(), http.MethodPost, e.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), b
}

// rpc calls method with params and returns the decoded response envelope.
func (e *env) rpc(method string, params any) rpcResp {
	e.t.Helper()
	p, _ := json.Marshal(params)
	status, ct, b := e.post(`{"jsonrpc":"2.0","id":7,"method":"` + method + `","params":` + string(p) + `}`)
	if status != http.StatusOK || ct != "application/json" {
		e.t.Fatalf("%s: HTTP %d %s: %s", method, status, ct, b)
	}
	var r rpcResp
	if err := json.Unmarshal(b, &r); err != nil {
		e.t.Fatalf("%s: %v: %s", method, err, b)
	}
	r.raw = b
	return r
}

type rpcResp struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *Error          `json:"error"`
	raw     []byte
}

// sse posts a streaming call and returns the data payloads in order.
func (e *env) sse(method string, params any, onEvent func(i int, data []byte)) [][]byte {
	e.t.Helper()
	p, _ := json.Marshal(params)
	req, _ := http.NewRequestWithContext(e.t.Context(), http.MethodPost, e.url,
		strings.NewReader(`{"jsonrpc":"2.0","id":"s1","method":"`+method+`","params":`+string(p)+`}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("%s: content type %q: %s", method, ct, b)
	}
	var out [][]byte
	buf := make([]byte, 0, 4096)
	tmp := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(tmp)
		buf = append(buf, tmp[:n]...)
		for {
			i := bytes.Index(buf, []byte("\n\n"))
			if i < 0 {
				break
			}
			frame := buf[:i]
			buf = buf[i+2:]
			if d, ok := bytes.CutPrefix(frame, []byte("data: ")); ok {
				var env rpcResp
				if err := json.Unmarshal(d, &env); err != nil || string(env.ID) != `"s1"` || env.JSONRPC != "2.0" {
					e.t.Fatalf("bad SSE frame %s", d)
				}
				if env.Error != nil {
					e.t.Fatalf("stream error: %s", d)
				}
				out = append(out, env.Result)
				if onEvent != nil {
					onEvent(len(out)-1, env.Result)
				}
			}
		}
		if err != nil {
			return out
		}
	}
}

var (
	uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timeRE = regexp.MustCompile(`"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"`)
)

// golden compares got (JSON) with testdata/golden/name.json after replacing
// ids and times; -update rewrites the file.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	norm := timeRE.ReplaceAll(uuidRE.ReplaceAll(got, []byte("<uuid>")), []byte(`"<time>"`))
	var v any
	if err := json.Unmarshal(norm, &v); err != nil {
		t.Fatalf("%s: %v: %s", name, err, got)
	}
	var pb bytes.Buffer
	enc := json.NewEncoder(&pb)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	enc.Encode(v)
	pretty := pb.Bytes()
	path := filepath.Join("testdata", "golden", name+".json")
	if *update {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, pretty, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(want, pretty) {
		t.Errorf("%s differs from %s:\n%s", name, path, pretty)
	}
}

func v1Msg(text, contextID string) map[string]any {
	m := map[string]any{"messageId": "msg-" + text, "role": "ROLE_USER", "parts": []any{map[string]any{"text": text}}}
	if contextID != "" {
		m["contextId"] = contextID
	}
	return m
}

func v03Msg(text, contextID string) map[string]any {
	m := map[string]any{"kind": "message", "messageId": "msg-" + text, "role": "user", "parts": []any{map[string]any{"kind": "text", "text": text}}}
	if contextID != "" {
		m["contextId"] = contextID
	}
	return m
}

var listAll = agentik.ListRequest{Limit: 100}
