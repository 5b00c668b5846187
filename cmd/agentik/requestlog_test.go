package main

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
)

// TestRequestLogJSON: in JSON mode at the default level (info) every
// request is one line with its route pattern — not its path, which holds
// the conversation id — status, duration and principal.
func TestRequestLogJSON(t *testing.T) {
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "agentik.db"), "AGENTIK_LOG_FORMAT=json",
		"AGENTIK_AUTH_TOKENS=bob:tok-bob-secret")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := httpapi.NewClient(p.url+"/agentik", httpapi.WithToken("tok-bob-secret"))
	info, err := client.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Conversation(ctx, info.ID); err != nil {
		t.Fatal(err)
	}
	if s := statusOf(t, p.url+"/agentik/conversations/"+info.ID, ""); s != http.StatusUnauthorized {
		t.Fatalf("no token: %d", s)
	}
	p.waitLog(t, `"status":401`, 1) // the last request's line
	var lines []map[string]any
	for _, l := range strings.Split(p.log(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "request" {
			lines = append(lines, m)
		}
	}
	if len(lines) < 3 {
		t.Fatalf("%d request lines:\n%s", len(lines), p.log())
	}
	got := map[string]bool{}
	for _, l := range lines {
		if l["level"] != "INFO" && l["level"] != "WARN" {
			t.Errorf("level %v", l["level"])
		}
		if _, ok := l["duration"].(float64); !ok {
			t.Errorf("no duration: %v", l)
		}
		got[l["method"].(string)+" "+l["route"].(string)+" "+l["principal"].(string)+" "+jsonNum(l["status"])] = true
	}
	for _, want := range []string{
		"POST POST /agentik/conversations bob 201",
		"GET GET /agentik/conversations/{id} bob 200",
		"GET GET /agentik/conversations/{id} - 401",
	} {
		if !got[want] {
			t.Errorf("no line %q in %v", want, got)
		}
	}
	if strings.Contains(strings.Join(filterRequestLines(p.log()), "\n"), info.ID) {
		t.Errorf("a request line shows the raw path:\n%s", p.log())
	}

}

func jsonNum(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func filterRequestLines(log string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, `"msg":"request"`) {
			out = append(out, l)
		}
	}
	return out
}
