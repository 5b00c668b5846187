package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/local/localtest"
)

// TestLocalBackendStartupErrors: the local backend without a model, with
// a library folder lacking llama.cpp, or with a file that is not a model,
// does not start: exit code 2 and a message naming what is wrong.
func TestLocalBackendStartupErrors(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "model.gguf")
	if err := os.WriteFile(model, []byte("not a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		env  []string
		want string
	}{
		{[]string{"AGENTIK_LLM_BACKEND=local"}, "AGENTIK_LOCAL_MODEL_PATH"},
		{[]string{"AGENTIK_LLM_BACKEND=local", "AGENTIK_LOCAL_MODEL_PATH=" + model}, "AGENTIK_LLAMA_LIB"},
		{[]string{"AGENTIK_LLM_BACKEND=local", "AGENTIK_LOCAL_MODEL_PATH=" + model, "AGENTIK_LLAMA_LIB=" + dir}, "no libggml.so in " + dir},
		{[]string{"AGENTIK_LLM_BACKEND=local", "AGENTIK_LOCAL_MODEL_PATH=" + model, "AGENTIK_LOCAL_THREADS=many"}, "AGENTIK_LOCAL_THREADS"},
	}
	if lib := localtest.LlamaLib(t); lib != "" {
		cases = append(cases, struct {
			env  []string
			want string
		}{[]string{"AGENTIK_LLM_BACKEND=local", "AGENTIK_LOCAL_MODEL_PATH=" + model, "AGENTIK_LLAMA_LIB=" + lib}, model + " is not a GGUF file"})
	}
	for _, c := range cases {
		cmd := exec.Command(binary, "serve")
		cmd.Env = append(os.Environ(), append([]string{"AGENTIK_PORT=0", "AGENTIK_HOST=127.0.0.1", "AGENTIK_DB_PATH=" + filepath.Join(dir, "a.db"), "AGENTIK_LLAMA_LIB="}, c.env...)...)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errorsAs(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), c.want) {
			t.Errorf("%v: want exit 2 naming %q, got %v:\n%s", c.env, c.want, err, out)
		}
	}
}

// TestLocalBackendServes: an agent of the configuration file on the local
// backend answers through the HTTP API with the model in the process.
func TestLocalBackendServes(t *testing.T) {
	lib := localtest.LlamaLib(t)
	dir := t.TempDir()
	localtest.Model{Next: localtest.Hello().Next, Template: localtest.ChatML}.Write(t, filepath.Join(dir, "tiny.gguf"))
	conf := filepath.Join(dir, "agentik.yaml")
	yaml := "agents:\n  - id: tiny\n    model:\n      backend: local\n      path: tiny.gguf\n      threads: 1\n      context_tokens: 2048\n"
	if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, "AGENTIK_CONFIG="+conf, "AGENTIK_LLAMA_LIB="+lib, "AGENTIK_DB_PATH="+filepath.Join(dir, "a.db"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := httpapi.NewClient(p.url + "/agentik")
	info, err := client.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	conv, _ := client.Conversation(ctx, info.ID)
	s, err := conv.Events(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("hi")}}); err != nil {
		t.Fatal(err)
	}
	for ev := range s.C() {
		if ev.Type == agentik.EvError {
			t.Fatalf("the turn failed: %+v\n%s", ev, p.log())
		}
		if ev.Type == agentik.EvAssistantMessage {
			if got := agentik.JoinText(ev.Message.Content); got != "Hello world" {
				t.Fatalf("answer %q\n%s", got, p.log())
			}
			return
		}
	}
	t.Fatalf("no answer: %v\n%s", s.Err(), p.log())
}
