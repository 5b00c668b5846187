package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentik/agentik/llmtest"
)

// TestLangGraphStoreAndCronsWired: the process gives its LangGraph door
// the agent's memory and schedules: a store put through /langgraph is the
// block the native API reads, a cron made there is a schedule the native
// API lists, /info says crons; another principal sees neither.
func TestLangGraphStoreAndCronsWired(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	file := filepath.Join(t.TempDir(), "agentik.yaml")
	os.WriteFile(file, []byte(fmt.Sprintf(memoryConfig, llm.URL())), 0o600)
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "m.db"), "AGENTIK_CONFIG="+file,
		"ALICE_TOKEN="+aliceMem, "BOB_TOKEN="+bobMem)
	for _, lg := range []string{p.url + "/langgraph", p.url + "/agents/helper/langgraph"} {
		if st, body := lgDo(t, "GET", lg+"/info", aliceMem, nil); st != 200 || !strings.Contains(body, `"crons":true`) {
			t.Fatalf("%s/info: %d %s", lg, st, body)
		}
	}
	lg := p.url + "/langgraph"
	put := map[string]any{"namespace": []string{"memory"}, "key": "human", "value": map[string]any{"value": "Alice via LangGraph"}}
	if st, body := lgDo(t, "PUT", lg+"/store/items", aliceMem, put); st != 204 {
		t.Fatalf("put: %d %s", st, body)
	}
	if b := memBlock(t, p.url+"/agents/helper", aliceMem, "human"); b.Value != "Alice via LangGraph" {
		t.Fatalf("native block %+v", b)
	}
	if st, body := lgDo(t, "GET", lg+"/store/items?namespace=memory&key=human", bobMem, nil); st != 200 || strings.Contains(body, "Alice") {
		t.Fatalf("bob reads %d %s", st, body)
	}
	cron := map[string]any{"assistant_id": "helper", "schedule": "0 9 * * *",
		"input": map[string]any{"messages": []map[string]any{{"type": "human", "content": "good morning"}}}}
	st, body := lgDo(t, "POST", p.url+"/agents/helper/langgraph/runs/crons", aliceMem, cron)
	if st != 200 || !strings.Contains(body, `"schedule":"0 9 * * *"`) {
		t.Fatalf("cron: %d %s", st, body)
	}
	if st, body := lgDo(t, "GET", p.url+"/agents/helper/schedules", aliceMem, nil); st != 200 || !strings.Contains(body, "good morning") {
		t.Fatalf("native schedules: %d %s", st, body)
	}
	if st, body := lgDo(t, "POST", lg+"/runs/crons/search", bobMem, map[string]any{}); st != 200 || body != "[]\n" && body != "[]" {
		t.Fatalf("bob's crons: %d %q", st, body)
	}
}
