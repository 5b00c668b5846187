package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
)

// TestConfigExampleStartsAsWritten runs the two commands docs/config.md
// gives a new user, as written, in an empty directory with no variable of
// the example set: the server starts on the file agentik config example
// printed, and its agents answer a message on the offline demo model. Only
// the port is moved (AGENTIK_PORT=0) so that the test does not need 8080.
func TestConfigExampleStartsAsWritten(t *testing.T) {
	dir := t.TempDir()
	sh := exec.Command("sh", "-c", "agentik config example > agentik.yaml && exec agentik serve --config agentik.yaml")
	sh.Dir = dir
	env := []string{"PATH=" + filepath.Dir(binary) + string(os.PathListSeparator) + os.Getenv("PATH")}
	for _, kv := range os.Environ() { // nothing of the caller's configuration leaks in
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "AGENTIK_") || strings.HasPrefix(name, "OPENAI_") {
			env = append(env, name+"=")
		}
	}
	p := startCmd(t, sh, env...)
	for _, base := range []string{"/agentik", "/agents/assistant", "/agents/notes"} {
		ctx := testCtx(t)
		c := httpapi.NewClient(p.url + base)
		info, err := c.CreateConversation(ctx, agentik.CreateRequest{})
		if err != nil {
			t.Fatalf("%s: %v\n%s", base, err, p.log())
		}
		conv, err := c.Conversation(ctx, info.ID)
		if err != nil {
			t.Fatal(err)
		}
		s, err := conv.Events(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("hello from the example")}}); err != nil {
			t.Fatal(err)
		}
		var answer strings.Builder
		for ev := range s.C() {
			if ev.Type == agentik.EvAssistantMessage && ev.Message != nil {
				for _, c := range ev.Message.Content {
					answer.WriteString(c.Text)
				}
			}
			if ev.Type == agentik.EvEnd {
				break
			}
		}
		s.Close()
		conv.Close()
		if !strings.Contains(answer.String(), "hello from the example") {
			t.Fatalf("%s answered %q\n%s", base, answer.String(), p.log())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "agentik.db")); err != nil {
		t.Errorf("the example's database is not where it says: %v", err)
	}
}

// TestConfigExampleFull: agentik config example --full prints the
// annotated three-agent file, which agentik config check passes once the
// variables and the prompt file it names exist.
func TestConfigExampleFull(t *testing.T) {
	out, _, code := runCLI(t, nil, "config", "example", "--full")
	if code != exitOK || strings.Count(out, "  - id: ") != 3 {
		t.Fatalf("example --full: %d %s", code, out)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "agentik.yaml")
	os.WriteFile(file, []byte(out), 0o600)
	os.Mkdir(filepath.Join(dir, "prompts"), 0o755)
	os.WriteFile(filepath.Join(dir, "prompts", "coder.md"), []byte("You write code."), 0o600)
	env := []string{"ALICE_TOKEN=alice-secret-0123456789", "ROUTER_TOKEN=router-secret-0123456789", "OPS_TOKEN=ops-secret-0123456789", "OPENAI_API_KEY=sk-x"}
	out, stderr, code := runCLI(t, env, "config", "check", file)
	if code != exitOK || !strings.Contains(out, "ok, 3 agents: support, coder, router") {
		t.Fatalf("check of the full example: %d %s %s", code, out, stderr)
	}
}
