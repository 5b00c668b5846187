package mcp

import (
	"strings"
	"testing"

	"github.com/agentik/agentik"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestToResultMapsEveryContentKind(t *testing.T) {
	res := toResult(&sdk.CallToolResult{Content: []sdk.Content{
		&sdk.TextContent{Text: "hello"},
		&sdk.ImageContent{MIMEType: "image/PNG", Data: pngPixel},
		&sdk.ImageContent{MIMEType: "image/svg+xml", Data: []byte("<svg/>")},
		&sdk.AudioContent{MIMEType: "audio/wav", Data: []byte("RIFF")},
		&sdk.ResourceLink{URI: "file:///a.txt", Name: "a.txt", MIMEType: "text/plain"},
		&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "demo://r/1", MIMEType: "text/plain", Text: "body"}},
		&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "demo://r/2", MIMEType: "application/zip", Blob: []byte{1, 2, 3}}},
	}, StructuredContent: map[string]any{"ignored": "because text exists"}})
	if res.IsError {
		t.Fatal("is error")
	}
	var kinds []string
	for _, c := range res.Content {
		if err := c.Validate(); err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if c.Type == agentik.ContentImage {
			kinds = append(kinds, "image:"+c.MIME)
		} else {
			kinds = append(kinds, c.Text)
		}
	}
	got := strings.Join(kinds, "|")
	for _, want := range []string{"hello|image:image/png|[image image/svg+xml, 6 bytes, not shown]|[audio audio/wav, 4 bytes, not shown]",
		"resource link: a.txt <file:///a.txt> (text/plain)", "resource <demo://r/1> (text/plain):\nbody",
		"resource <demo://r/2> (application/zip): [3 bytes of binary data, not shown]"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "ignored") {
		t.Error("structured content repeated although text was sent")
	}
}

func TestToResultStructuredOnlyAndEmpty(t *testing.T) {
	res := toResult(&sdk.CallToolResult{StructuredContent: map[string]any{"t": 21}})
	if len(res.Content) != 1 || res.Content[0].Text != `{"t":21}` {
		t.Fatalf("%+v", res)
	}
	res = toResult(&sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{}}})
	if !res.IsError || len(res.Content) != 1 || res.Content[0].Text == "" {
		t.Fatalf("%+v", res)
	}
}
