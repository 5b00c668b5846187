package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// weatherServer serves a small go-sdk MCP server over Streamable HTTP that
// requires the X-Api-Key header, and returns its /mcp URL.
func weatherServer(t *testing.T, key string) string {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "weather", Version: "1.0"}, nil)
	type in struct {
		City string `json:"city" jsonschema:"the city"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "lookup.weather", Description: "Weather of a city"},
		func(_ context.Context, _ *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "sunny in " + a.City}}}, nil, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != key {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return "http://" + ln.Addr().String() + "/mcp"
}

func writeMCPConfig(t *testing.T, v string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(p, []byte(v), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestToolsCommandListsMCPTools(t *testing.T) {
	url := weatherServer(t, "k3y")
	cfg := writeMCPConfig(t, fmt.Sprintf(`{"mcpServers": {
		"weather": {"type": "http", "url": %q, "headers": {"X-Api-Key": "${WEATHER_KEY}"}},
		"broken": {"command": "/nonexistent/server"}
	}}`, url))
	cmd := exec.Command(binary, "tools")
	cmd.Env = append(os.Environ(), "AGENTIK_MCP_CONFIG="+cfg, "WEATHER_KEY=k3y", "AGENTIK_MCP_STARTUP_WAIT=20s")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("agentik tools: %v\n%s", err, stderr.String())
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Fatalf("agentik tools took %s: the broken server held it up", took)
	}
	got := string(out)
	for _, want := range []string{"current_time\tbuiltin", "lookup_weather\tmcp:weather\tWeather of a city", `"city"`, "mcp server weather (", ": up, 1 tools"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if !strings.Contains(stderr.String(), "nonexistent") {
		t.Errorf("the broken server is not reported:\n%s", stderr.String())
	}
}

func TestBadMCPConfigStopsStartup(t *testing.T) {
	cfg := writeMCPConfig(t, `{"mcpServers": {"gh": {"url": "http://127.0.0.1:9/mcp", "type": "carrier-pigeon"}}}`)
	cmd := exec.Command(binary, "serve")
	cmd.Env = append(os.Environ(), "AGENTIK_MCP_CONFIG="+cfg, "AGENTIK_PORT=0", "AGENTIK_HOST=127.0.0.1", "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"))
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("want a failed start, got %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "mcpServers.gh.type") || !strings.Contains(string(out), "carrier-pigeon") {
		t.Fatalf("message does not name the field:\n%s", out)
	}
	cmd = exec.Command(binary, "serve")
	cmd.Env = append(os.Environ(), "AGENTIK_MCP_CONFIG=/nonexistent/mcp.json")
	out, _ = cmd.CombinedOutput()
	if !strings.Contains(string(out), "AGENTIK_MCP_CONFIG") {
		t.Fatalf("missing file not reported:\n%s", out)
	}
}

// pidAlive reports whether pid runs (a zombie does not count).
func pidAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] != "Z" && f[2] != "X"
}

// A stdio server that never answers is still a child of agentik: it must
// not outlive agentik, neither a graceful stop nor a SIGKILL.
func TestMCPChildrenDoNotOutliveAgentik(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "pid")
			cfg := writeMCPConfig(t, fmt.Sprintf(`{"mcpServers": {"mute": {"command": "sh", "args": ["-c", "echo $$ > %s; exec sleep 300"]}}}`, pidFile))
			p := startProc(t, "AGENTIK_MCP_CONFIG="+cfg, "AGENTIK_DB_PATH="+filepath.Join(dir, "a.db"), "AGENTIK_DRAIN_TIMEOUT=1s", "AGENTIK_MCP_CLOSE_TIMEOUT=500ms")
			var pid int
			deadline := time.Now().Add(20 * time.Second)
			for pid == 0 || !pidAlive(pid) {
				if time.Now().After(deadline) {
					t.Fatalf("the MCP server was not started:\n%s", p.log())
				}
				b, _ := os.ReadFile(pidFile)
				pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
				time.Sleep(10 * time.Millisecond)
			}
			start := time.Now()
			p.cmd.Process.Signal(sig)
			select {
			case <-p.done:
			case <-time.After(15 * time.Second):
				t.Fatalf("agentik did not stop:\n%s", p.log())
			}
			if sig == syscall.SIGTERM {
				if took := time.Since(start); took > 8*time.Second {
					t.Fatalf("shutdown took %s", took)
				}
			}
			deadline = time.Now().Add(10 * time.Second)
			for pidAlive(pid) {
				if time.Now().After(deadline) {
					syscall.Kill(pid, syscall.SIGKILL)
					t.Fatalf("the MCP server (pid %d) outlived agentik (%s)", pid, sig)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

func TestToolsEndpoint(t *testing.T) {
	url := weatherServer(t, "k3y")
	cfg := writeMCPConfig(t, fmt.Sprintf(`{"servers": {"weather": {"type": "streamable-http", "url": %q, "headers": ["X-Api-Key: k3y"]},
		"down": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}}`, url))
	dir := t.TempDir()
	p := startProc(t, "AGENTIK_MCP_CONFIG="+cfg, "AGENTIK_DB_PATH="+filepath.Join(dir, "a.db"), "AGENTIK_AUTH_TOKENS=alice:tok-alice-123456")

	res, err := http.Get(p.url + "/agentik/tools")
	if err != nil {
		t.Fatal(err)
	}
	var eb struct{ Error struct{ Code string } }
	json.NewDecoder(res.Body).Decode(&eb)
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized || eb.Error.Code != "unauthorized" {
		t.Fatalf("without a token: %d %+v", res.StatusCode, eb)
	}

	req, _ := http.NewRequest("GET", p.url+"/agentik/tools", nil)
	req.Header.Set("Authorization", "Bearer tok-alice-123456")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		Tools []struct {
			Name, Source string
			Parameters   map[string]any
		}
		Servers []struct {
			Name, State, Transport, Error string
			Tools                         int
		}
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != 200 {
		t.Fatalf("%d %v", res.StatusCode, err)
	}
	var found bool
	for _, tl := range body.Tools {
		if tl.Name == "lookup_weather" && tl.Source == "mcp:weather" && tl.Parameters["type"] == "object" {
			found = true
		}
	}
	if !found {
		t.Fatalf("tools %+v", body.Tools)
	}
	if len(body.Servers) != 2 || body.Servers[0].State != "up" || body.Servers[0].Tools != 1 ||
		body.Servers[1].State != "failed" || body.Servers[1].Error == "" {
		t.Fatalf("servers %+v", body.Servers)
	}
}
