package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentik/agentik"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxResourceText bounds the text of an embedded resource passed to the
// model: a server can embed a whole file, the model needs a readable part.
const maxResourceText = 64 << 10

// toResult maps an MCP tool result onto our content: text as text, images
// of a type the core knows as image parts (the LLM adapter moves them where
// the model takes them), everything else as a text description. Structured
// content is given as JSON text when the server sent no text alongside it
// (servers are asked to mirror it in text, not all do).
func toResult(res *sdk.CallToolResult) agentik.ToolResult {
	out := agentik.ToolResult{IsError: res.IsError}
	hasText := false
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			out.Content = append(out.Content, agentik.Text(c.Text))
			hasText = true
		case *sdk.ImageContent:
			out.Content = append(out.Content, binaryPart("image", c.MIMEType, c.Data))
		case *sdk.AudioContent:
			out.Content = append(out.Content, agentik.Text(fmt.Sprintf("[audio %s, %d bytes, not shown]", c.MIMEType, len(c.Data))))
		case *sdk.ResourceLink:
			out.Content = append(out.Content, agentik.Text(describeLink(c)))
			hasText = true
		case *sdk.EmbeddedResource:
			out.Content = append(out.Content, embedded(c.Resource))
			hasText = true
		default:
			out.Content = append(out.Content, agentik.Text(fmt.Sprintf("[unsupported %T content]", c)))
		}
	}
	if !hasText && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			out.Content = append(out.Content, agentik.Text(string(b)))
		}
	}
	// Empty text parts are not valid content; keep the result non-empty.
	out.Content = slices.DeleteFunc(out.Content, func(c agentik.Content) bool {
		return c.Type == agentik.ContentText && c.Text == ""
	})
	if len(out.Content) == 0 {
		if out.IsError {
			out.Content = []agentik.Content{agentik.Text("the tool failed without a message")}
		} else {
			out.Content = []agentik.Content{agentik.Text("(the tool returned no content)")}
		}
	}
	return out
}

// binaryPart is an image part when the core accepts the type, else a note.
func binaryPart(kind, mime string, data []byte) agentik.Content {
	if len(data) > 0 && slices.Contains(agentik.ImageMIMEs, strings.ToLower(mime)) {
		return agentik.Image(strings.ToLower(mime), data)
	}
	return agentik.Text(fmt.Sprintf("[%s %s, %d bytes, not shown]", kind, mime, len(data)))
}

func describeLink(l *sdk.ResourceLink) string {
	var b strings.Builder
	b.WriteString("resource link: ")
	if l.Name != "" {
		b.WriteString(l.Name + " ")
	}
	b.WriteString("<" + l.URI + ">")
	if l.MIMEType != "" {
		b.WriteString(" (" + l.MIMEType + ")")
	}
	if l.Description != "" {
		b.WriteString(": " + l.Description)
	}
	return b.String()
}

func embedded(r *sdk.ResourceContents) agentik.Content {
	if r == nil {
		return agentik.Text("[empty embedded resource]")
	}
	if r.Blob != nil {
		if strings.HasPrefix(strings.ToLower(r.MIMEType), "image/") {
			return binaryPart("image", r.MIMEType, r.Blob)
		}
		return agentik.Text(fmt.Sprintf("resource <%s> (%s): [%d bytes of binary data, not shown]", r.URI, r.MIMEType, len(r.Blob)))
	}
	text := r.Text
	if len(text) > maxResourceText {
		text = text[:maxResourceText] + "\n[… truncated]"
	}
	head := "resource <" + r.URI + ">"
	if r.MIMEType != "" {
		head += " (" + r.MIMEType + ")"
	}
	return agentik.Text(head + ":\n" + text)
}

// errorResult turns a failed call into the error result the model sees. A
// JSON-RPC error (unknown tool, bad arguments from some servers) keeps its
// code and message: they tell the model what to fix.
func errorResult(server string, err error) agentik.ToolResult {
	var re *jsonrpc.Error
	if errors.As(err, &re) {
		return agentik.ErrorResult(fmt.Sprintf("MCP error %d: %s", re.Code, re.Message))
	}
	if errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, sdk.ErrSessionMissing) {
		return agentik.ErrorResult(fmt.Sprintf("the MCP server %q closed the connection; it is being restarted, try again later", server))
	}
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	if errors.As(err, &typeErr) || errors.As(err, &syntaxErr) || strings.Contains(err.Error(), "cannot unmarshal") {
		// The decoder's text names internal Go types: useless to the model.
		return agentik.ErrorResult(fmt.Sprintf("the MCP server %q returned a malformed result", server))
	}
	return agentik.ErrorResult(fmt.Sprintf("the MCP server %q failed: %v", server, err))
}
