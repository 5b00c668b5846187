package openaiapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentik/agentik"
)

// conversationObject is a conversation as the Conversations API shows it.
// Its metadata is the conversation's title ("title"); other keys are not
// kept.
type conversationObject struct {
	ID        string            `json:"id"`
	Object    string            `json:"object"`
	CreatedAt int64             `json:"created_at"`
	Metadata  map[string]string `json:"metadata"`
}

func conversationOf(info agentik.ConversationInfo) conversationObject {
	meta := map[string]string{}
	if info.Title != "" {
		meta["title"] = info.Title
	}
	return conversationObject{ID: info.ID, Object: "conversation", CreatedAt: info.CreatedAt.Unix(), Metadata: meta}
}

// conversationBody is the body of POST /v1/conversations[/{id}].
type conversationBody struct {
	Metadata map[string]string `json:"metadata"`
	Items    []json.RawMessage `json:"items"`
	Model    string            `json:"model"`
}

// decodeConversationBody decodes a conversation body; an empty body is
// an empty conversation.
func decodeConversationBody(b []byte) (conversationBody, error) {
	var c conversationBody
	if len(b) == 0 {
		return c, nil
	}
	if err := decodeStrict(b, &c); err != nil {
		return c, err
	}
	if len(c.Items) > 0 {
		return c, param(agentik.EInvalid, "items", "items: a conversation starts empty here; send its first message with POST /v1/responses and conversation")
	}
	if t := c.Metadata["title"]; len(t) > 512 {
		return c, param(agentik.EInvalid, "metadata.title", "metadata.title: at most 512 bytes")
	}
	return c, nil
}

func (h *Handler) createConversation(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	body, err := h.readBody(w, r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	c, err := decodeConversationBody(body)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	m, err := h.modelOrFirst(ctx, c.Model)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	info, err := m.Agent.CreateConversation(ctx, agentik.CreateRequest{Title: c.Metadata["title"]})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, conversationOf(info))
}

func (h *Handler) getConversation(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	_, conv, err := h.findConversation(ctx, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	defer conv.Close()
	info, err := conv.Info(ctx)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, conversationOf(info))
}

func (h *Handler) updateConversation(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	_, conv, err := h.findConversation(ctx, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	defer conv.Close()
	body, err := h.readBody(w, r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	c, err := decodeConversationBody(body)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	info, err := conv.Rename(ctx, c.Metadata["title"])
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, conversationOf(info))
}

func (h *Handler) deleteConversation(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	m, conv, err := h.findConversation(ctx, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	conv.Close()
	if err := m.Agent.DeleteConversation(ctx, conv.ID()); err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": conv.ID(), "object": "conversation.deleted", "deleted": true})
}

// Paging of GET /v1/conversations/{id}/items.
const (
	defaultItemsLimit = 20
	maxItemsLimit     = 100
)

func (h *Handler) listItems(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	_, conv, err := h.findConversation(ctx, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	defer conv.Close()
	pg, err := pagingOf(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	journal, _, err := readJournal(ctx, conv)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, pg.list(conversationItems(journal)))
}

// paging is how a list of items is asked for: OpenAI's after, limit (1
// to 100, default 20) and order (asc, or desc: the default).
type paging struct {
	limit int
	asc   bool
	after string
}

func pagingOf(r *http.Request) (paging, error) {
	q := r.URL.Query()
	pg := paging{limit: defaultItemsLimit, after: q.Get("after")}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxItemsLimit {
			return pg, param(agentik.EInvalid, "limit", "limit: want 1 to %d", maxItemsLimit)
		}
		pg.limit = n
	}
	switch q.Get("order") {
	case "asc":
		pg.asc = true
	case "", "desc":
	default:
		return pg, param(agentik.EInvalid, "order", "order: want asc or desc")
	}
	return pg, nil
}

// list is the page of items (oldest first) that pg asks for, as a list
// object.
func (pg paging) list(items []item) map[string]any {
	if !pg.asc {
		for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
			items[i], items[j] = items[j], items[i]
		}
	}
	if pg.after != "" {
		for i, it := range items {
			if it["id"] == pg.after {
				items = items[i+1:]
				break
			}
		}
	}
	more := len(items) > pg.limit
	if more {
		items = items[:pg.limit]
	}
	list := map[string]any{"object": "list", "data": items, "has_more": more, "first_id": nil, "last_id": nil}
	if len(items) > 0 {
		list["first_id"], list["last_id"] = items[0]["id"], items[len(items)-1]["id"]
	}
	return list
}

// conversationItems renders a journal as Conversations items, oldest
// first: messages, function calls and their outputs (client tools), the
// agent's own tool calls as mcp_call with their outputs. The context parts
// a user message carries for the model are not shown.
func conversationItems(journal []agentik.Message) []item {
	out := []item{}
	client := map[string]bool{}
	mcp := map[string]item{}
	for _, m := range journal {
		switch m.Type {
		case agentik.MsgUser:
			client = map[string]bool{}
			var meta map[string]string
			if m.Context != nil {
				meta = m.Context.Metadata
			}
			for _, n := range strings.Split(meta[MetaClientTools], ",") {
				client[n] = n != ""
			}
			parts := m.Content
			if n, _ := strconv.Atoi(meta[MetaContextParts]); n > 0 && n <= len(parts) {
				parts = parts[:len(parts)-n]
			}
			out = append(out, item{"type": "message", "id": "msg_" + m.ID, "status": "completed", "role": "user", "content": inputParts(parts)})
		case agentik.MsgAssistant:
			out = append(out, item{"type": "message", "id": "msg_" + m.ID, "status": "completed", "role": "assistant",
				"content": []any{outputTextPart(agentik.JoinText(m.Content))}})
		case agentik.MsgToolCall:
			if client[m.Name] {
				out = append(out, item{"type": "function_call", "id": "fc_" + m.CallID, "call_id": m.CallID, "name": m.Name, "arguments": string(m.Arguments), "status": "completed"})
				continue
			}
			it := item{"type": "mcp_call", "id": "mcp_" + m.CallID, "server_label": "agentik", "name": m.Name, "arguments": string(m.Arguments), "output": nil, "error": nil, "status": "in_progress"}
			mcp[m.CallID] = it
			out = append(out, it)
		case agentik.MsgToolResult:
			if it, ok := mcp[m.CallID]; ok {
				if m.IsError {
					it["error"], it["status"] = agentik.JoinText(m.Content), "failed"
				} else {
					it["output"], it["status"] = agentik.JoinText(m.Content), "completed"
				}
				continue
			}
			out = append(out, item{"type": "function_call_output", "id": "fco_" + m.ID, "call_id": m.CallID, "output": agentik.JoinText(m.Content), "status": "completed"})
		}
	}
	return out
}

// inputParts are a user message's parts as input content.
func inputParts(parts []agentik.Content) []any {
	out := []any{}
	for _, p := range parts {
		if p.Type == agentik.ContentImage {
			out = append(out, map[string]any{"type": "input_image", "image_url": "data:" + p.MIME + ";base64," + p.Data, "detail": "auto"})
			continue
		}
		out = append(out, map[string]any{"type": "input_text", "text": p.Text})
	}
	return out
}
