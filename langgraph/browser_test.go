package langgraph

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/internal/stacktest"
	"github.com/agentik/agentik/internal/testenv"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/tools"
)

const pageDir = "testdata/usestream"

// TestUseStreamBrowser: a React page on the SDK's useStream hook, in
// headless Chromium, against the door: a sent message's answer streams in
// (the page shows part of it while the model holds the rest), a reload
// restores the thread, regenerate gives a second answer on a new branch
// and the branch arrows switch between the two, an edit answers the edited
// message, and an approval is answered in the page.
func TestUseStreamBrowser(t *testing.T) {
	chromium := os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		testenv.Missing(t, "Chromium is required (Debian's chromium at %s)", chromium)
	}
	testenv.NPM(t, pageDir)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "node", "build.mjs")
	build.Dir = pageDir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("bundling the page: %v\n%s", err, out)
	}

	st := stacktest.New(t, stacktest.Engine(func(o *engine.Options) {
		o.Tools = tools.NewRegistry(sendMail{})
		o.Approval = agentik.ApprovalPolicy{{Pattern: "send_*", Action: agentik.ApprovalAsk}}
	}))
	gate := llmtest.NewGate()
	st.LLM.Enqueue(
		llmtest.Stream().Role().Content("the first ").Pause(gate).Content("answer ", "streams ", "in").Finish("stop").Usage(3, 5).Done(),
		llmtest.Text("a second answer"),
		llmtest.Text("the answer to the edit"),
		llmtest.ToolCalls(llmtest.Call("send_mail", `{"to":"bob"}`)),
		llmtest.Text("mail sent"),
	)
	h := New(Options{Agents: func(context.Context) []agentik.Agent { return []agentik.Agent{st.Engine} }})
	mux := http.NewServeMux()
	h.Mount(mux, "/langgraph", func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r.WithContext(agentik.WithPrincipal(r.Context(), r.Header.Get("X-Api-Key"))))
		})
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, pageDir+"/index.html") })
	mux.HandleFunc("GET /app.js", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, pageDir+"/dist/app.js") })
	mux.HandleFunc("POST /release", func(w http.ResponseWriter, r *http.Request) { gate.Release() })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	drive := exec.CommandContext(ctx, "node", "drive.mjs", srv.URL+"/?key=alice")
	drive.Dir = pageDir
	drive.Env = append(os.Environ(), "CHROMIUM="+chromium)
	var stderr strings.Builder
	drive.Stderr = &stderr
	b, err := drive.Output()
	if err != nil {
		t.Fatalf("the page: %v\n%s", err, stderr.String())
	}
	type item struct{ Type, Text, Branch string }
	var out struct {
		Send struct {
			Partial string
			All     []item
		}
		URL                                      string
		Reload, Regenerate, Previous, Next, Edit []item
		Approval                                 struct {
			Action        string
			All           []item
			InterruptGone bool
		}
		Errors []string
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if out.Send.Partial != "the first " {
		t.Errorf("while the model held its answer the page showed %q", out.Send.Partial)
	}
	texts := func(items []item) string {
		var s []string
		for _, it := range items {
			s = append(s, it.Type+":"+it.Text+branchOf(it.Branch))
		}
		return strings.Join(s, " | ")
	}
	for _, c := range []struct {
		name  string
		items []item
		want  string
	}{
		{"send", out.Send.All, "human:hello | ai:the first answer streams in"},
		{"reload", out.Reload, "human:hello | ai:the first answer streams in"},
		{"regenerate", out.Regenerate, "human:hello | ai:a second answer [2/2]"},
		{"previous", out.Previous, "human:hello | ai:the first answer streams in [1/2]"},
		{"next", out.Next, "human:hello | ai:a second answer [2/2]"},
		{"edit", out.Edit, "human:hello, edited [2/2] | ai:the answer to the edit"},
	} {
		if got := texts(c.items); got != c.want {
			t.Errorf("%s: the page shows\n %s\nwant\n %s", c.name, got, c.want)
		}
	}
	if !strings.Contains(out.URL, "thread=") {
		t.Errorf("the page's URL does not name its thread: %s", out.URL)
	}
	if out.Approval.Action != "send_mail" || !out.Approval.InterruptGone ||
		!strings.HasSuffix(texts(out.Approval.All), "human:mail bob | ai: | tool:sent {\"to\":\"bob\"} | ai:mail sent") {
		t.Errorf("approval: %+v\n%s", out.Approval, texts(out.Approval.All))
	}
	if len(out.Errors) > 0 {
		t.Errorf("page errors: %v", out.Errors)
	}
}

func branchOf(b string) string {
	if b == "" {
		return ""
	}
	return " [" + b + "]"
}
