package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test MCP server: a real go-sdk server whose tools misbehave on
// demand. The test binary runs it over stdio when started with
// testServerEnv set (see TestMain); HTTP tests serve it in-process.
const testServerEnv = "AGENTIK_MCP_TEST_SERVER"

// Environment of the stdio test server.
const (
	startsFileEnv = "MCP_TEST_STARTS_FILE" // a line is appended per start
	stubbornEnv   = "MCP_TEST_STUBBORN"    // "1": ignore SIGTERM and stdin EOF
	cancelFileEnv = "MCP_TEST_CANCEL_FILE" // "slow" writes "started", then "cancelled"
	rawEnv        = "MCP_TEST_RAW"         // "1": the hand-written garbage server (garbage_test.go)
)

var pngPixel = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xcf\xc0\xf0\x1f\x00\x05\x00\x01\xff\x89\x99=\x1d\x00\x00\x00\x00IEND\xaeB`\x82")

func textResult(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

func objSchema(props map[string]any, required ...string) map[string]any {
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// newTestServer builds the misbehaving server. hang blocks until release
// is closed (nil: forever).
func newTestServer(release <-chan struct{}) *sdk.Server {
	// Small pages: the client must follow nextCursor to see every tool.
	srv := sdk.NewServer(&sdk.Implementation{Name: "agentik-test-server", Version: "1.0"}, &sdk.ServerOptions{PageSize: 4})
	add := func(name, desc string, schema map[string]any, h sdk.ToolHandler) {
		if schema == nil {
			schema = objSchema(map[string]any{})
		}
		srv.AddTool(&sdk.Tool{Name: name, Description: desc, InputSchema: schema}, h)
	}
	type echoIn struct {
		Text string `json:"text"`
	}
	// Typed, so the SDK validates the arguments against the schema.
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", Description: "Echoes the text"},
		func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
			return textResult("echo: " + in.Text), nil, nil
		})
	add("pid", "Returns the server's process id", nil,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return textResult(strconv.Itoa(os.Getpid())), nil
		})
	add("spawn", "Starts a grandchild process and returns its pid", nil,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			c := exec.Command("sleep", "300")
			if err := c.Start(); err != nil {
				return nil, err
			}
			return textResult(strconv.Itoa(c.Process.Pid)), nil
		})
	add("crash", "Exits the server process mid-call", nil,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			os.Exit(3)
			return nil, nil
		})
	add("hang", "Never answers, ignoring cancellation", nil,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if release == nil {
				select {}
			}
			<-release
			return textResult("released"), nil
		})
	add("slow", "Answers when the call is cancelled (notes it in the cancel file)", nil,
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if f := os.Getenv(cancelFileEnv); f != "" {
				os.WriteFile(f, []byte("started"), 0o644)
			}
			<-ctx.Done()
			if f := os.Getenv(cancelFileEnv); f != "" {
				os.WriteFile(f, []byte("cancelled"), 0o644)
			}
			return textResult("cancelled"), nil
		})
	add("fail", "Returns an isError result", nil,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			r := textResult("the widget is broken")
			r.IsError = true
			return r, nil
		})
	add("rpc_error", "Answers with a JSON-RPC error", nil,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: -32042, Message: "the database is on fire"}
		})
	add("image", "Returns a 1x1 PNG and a caption", nil,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "a pixel"},
				&sdk.ImageContent{MIMEType: "image/png", Data: pngPixel},
			}}, nil
		})
	add("structured", "Returns only structured content", nil,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{StructuredContent: map[string]any{"temperature": 21}}, nil
		})
	add("add_tool", "Adds a tool named by the argument (sends tools/list_changed)",
		objSchema(map[string]any{"name": map[string]any{"type": "string"}}, "name"),
		func(_ context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var a struct{ Name string }
			json.Unmarshal(r.Params.Arguments, &a)
			srv.AddTool(&sdk.Tool{Name: a.Name, Description: "added at run time", InputSchema: objSchema(map[string]any{})},
				func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
					return textResult("I am " + a.Name), nil
				})
			return textResult("added " + a.Name), nil
		})
	add("name.with.dots", "A tool whose MCP name models do not accept", nil,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return textResult("dots ok"), nil
		})
	add(strings.Repeat("x", 70), "A tool whose name is too long for models", nil,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return textResult("long ok"), nil
		})
	return srv
}

// runStdioTestServer is the body of the test binary in server mode.
func runStdioTestServer() {
	if os.Getenv(rawEnv) == "1" {
		runRawTestServer()
		return
	}
	if f := os.Getenv(startsFileEnv); f != "" {
		fh, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(fh, os.Getpid())
			fh.Close()
		}
	}
	if os.Getenv(stubbornEnv) == "1" {
		signal.Ignore(syscall.SIGTERM)
	}
	err := newTestServer(nil).Run(context.Background(), &sdk.StdioTransport{})
	if os.Getenv(stubbornEnv) == "1" {
		select {} // a server that outlives its stdin: only a kill ends it
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "test server:", err)
		os.Exit(1)
	}
	os.Exit(0)
}
