package ws_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/agentik/agentik/internal/stacktest"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/openai"
	"github.com/agentik/agentik/ws"
)

// Connect, send one message and print the answer as it streams.
func ExampleDial() {
	url, stop := exampleServer(llmtest.Text("Hello! How can I help?"))
	defer stop()
	ctx := context.Background()

	conn, err := ws.Dial(ctx, url, nil) // returns once the server sent STATUS
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	conn.Send(ctx, "Hi")
	for m := range conn.Messages() {
		switch m := m.(type) {
		case *ws.TextChunk:
			fmt.Print(m.Text)
		case *ws.End:
			fmt.Printf("\n[%d tokens]\n", m.TokensUsed)
			return
		case *ws.Error:
			fmt.Println("error:", m.Code, m.Details)
		}
	}
	// Output:
	// Hello! How can I help?
	// [15 tokens]
}

// Tool activity is an opt-in extension: ask for it with Events.
func ExampleDialOptions_events() {
	url, stop := exampleServer(
		llmtest.ToolCalls(llmtest.Call("current_time", `{"timezone":"Europe/Paris"}`).WithID("call_1")),
		llmtest.Text("It is late."),
	)
	defer stop()
	ctx := context.Background()

	conn, err := ws.Dial(ctx, url, &ws.DialOptions{Events: []string{ws.ExtTools}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	conn.Send(ctx, "What time is it in Paris?")
	for m := range conn.Messages() {
		switch m := m.(type) {
		case *ws.ToolCall:
			fmt.Printf("-> %s %s\n", m.Name, m.Arguments)
		case *ws.ToolResult:
			fmt.Printf("<- %s error=%v\n", m.Name, m.IsError)
		case *ws.TextChunk:
			fmt.Print(m.Text)
		case *ws.End:
			fmt.Println()
			return
		}
	}
	// Output:
	// -> current_time {"timezone":"Europe/Paris"}
	// <- current_time error=false
	// It is late.
}

// After GRACEFUL_DISCONNECT (idle timeout, server restart) Reconnect
// attaches a new connection to the same conversation.
func ExampleConn_Reconnect() {
	url, stop := exampleServerIdle(200*time.Millisecond, llmtest.Text("Still here."))
	defer stop()
	ctx := context.Background()

	conn, err := ws.Dial(ctx, url, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for range conn.Messages() { // the example server's idle timeout is short
	}
	fmt.Println("ended:", errors.Is(conn.Err(), ws.ErrGracefulDisconnect))

	again, err := conn.Reconnect(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer again.Close()
	fmt.Println("same conversation:", again.ConversationID() == conn.ConversationID())
	// Output:
	// ended: true
	// same conversation: true
}

// exampleServer serves the real engine on a temporary SQLite database, with
// the model replaced by scripted replies. It is test scaffolding, not part
// of the examples.
func exampleServer(replies ...llmtest.Reply) (url string, stop func()) {
	return exampleServerIdle(time.Minute, replies...)
}

// exampleServerIdle is exampleServer whose connections end after idle
// without a client message. Only the reconnect example wants it short: on
// a busy machine 200 ms can pass between Dial and Send, or while an answer
// streams, and end the other examples' connections mid-way.
func exampleServerIdle(idle time.Duration, replies ...llmtest.Reply) (url string, stop func()) {
	ctx := context.Background()
	st, err := stacktest.Open(ctx, stacktest.Model(func(o *openai.Options) { o.Model = "example" }))
	if err != nil {
		panic(err)
	}
	st.LLM.Enqueue(replies...)
	srv := ws.NewServer(st.Engine, ws.Options{IdleTimeout: idle})
	mux := http.NewServeMux()
	mux.Handle("GET /agentik/ws", srv)
	hs := httptest.NewServer(mux)
	return "ws" + strings.TrimPrefix(hs.URL, "http") + "/agentik/ws", func() {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		st.Engine.Shutdown(ctx)
		hs.Close()
		st.Close()
	}
}
