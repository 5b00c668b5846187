package agui

import (
	"strings"
	"testing"

	"github.com/agentik/agentik/config"
)

// TestConfig: the facade's variables, their defaults and their refusals.
func TestConfig(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	c, err := config.FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if a := c.AGUI; !a.Enabled || a.Path != DefaultPath || a.IfBusy != "enqueue" || a.OnDisconnect != DisconnectInterrupt {
		t.Fatalf("defaults %+v", a)
	}
	c, err = config.FromEnv(env(map[string]string{"AGENTIK_AGUI": "off", "AGENTIK_AGUI_PATH": "/ui/agui",
		"AGENTIK_AGUI_IF_BUSY": "reject", "AGENTIK_AGUI_ON_DISCONNECT": "continue"}))
	if err != nil {
		t.Fatal(err)
	}
	if a := c.AGUI; a.Enabled || a.Path != "/ui/agui" || a.IfBusy != "reject" || a.OnDisconnect != DisconnectContinue {
		t.Fatalf("set %+v", a)
	}
	_, err = config.FromEnv(env(map[string]string{"AGENTIK_AGUI": "maybe", "AGENTIK_AGUI_PATH": "agui",
		"AGENTIK_AGUI_IF_BUSY": "later", "AGENTIK_AGUI_ON_DISCONNECT": "abort"}))
	for _, v := range []string{"AGENTIK_AGUI=", "AGENTIK_AGUI_PATH=", "AGENTIK_AGUI_IF_BUSY=", "AGENTIK_AGUI_ON_DISCONNECT="} {
		if err == nil || !strings.Contains(err.Error(), v) {
			t.Errorf("want an error naming %s, got %v", v, err)
		}
	}
}
