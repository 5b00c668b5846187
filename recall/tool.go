package recall

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentik/agentik"
)

// ToolName is the name the model calls the search by.
const ToolName = "conversation_search"

// Tool returns the conversation_search tool over r.
func (r *Recall) Tool() agentik.Tool { return searchTool{r} }

// searchTool is conversation_search {query, limit?}: the hits as JSON text
// the model reads, {"hits": [{conversation_id, seq, role, date,
// snippet}]}. A bad query is an error result the model sees.
type searchTool struct{ r *Recall }

var _ agentik.Tool = searchTool{}

func (t searchTool) Spec() agentik.ToolSpec {
	how := "newest first. Every word of the query must be in a message for it to be found."
	if t.r.vecs != nil {
		how = "best first: messages that hold every word of the query, and messages close to it in meaning."
	}
	return agentik.ToolSpec{
		Name: ToolName,
		Description: "Searches the messages you and this user exchanged in all your past conversations (not only this one), " +
			how + " Each hit has the conversation id, " +
			"the message's seq, who said it (user or assistant), its date and a snippet of its text.",
		Parameters: agentik.RawJSON(fmt.Sprintf(`{"type":"object","properties":{`+
			`"query":{"type":"string","description":"the words to look for"},`+
			`"limit":{"type":"integer","minimum":1,"maximum":%d,"description":"at most this many hits (default %d)"}},`+
			`"required":["query"]}`, agentik.MaxSearchLimit, agentik.DefaultSearchLimit)),
		Source: "builtin",
	}
}

// hitsBody is what the search tool and GET {p}/memory/search answer.
type hitsBody struct {
	Hits []agentik.SearchHit `json:"hits"`
}

func (t searchTool) Call(ctx context.Context, args agentik.RawJSON) (agentik.ToolResult, error) {
	req, err := decodeArgs(args)
	if err != nil {
		return agentik.ErrorResult(err.Error()), nil
	}
	hits, err := t.r.Search(ctx, req)
	if agentik.ErrorCode(err) == agentik.EInvalid {
		return agentik.ErrorResult(agentik.ErrorMessage(err)), nil
	}
	if err != nil {
		return agentik.ToolResult{}, err
	}
	if hits == nil {
		hits = []agentik.SearchHit{}
	}
	out, err := json.Marshal(hitsBody{Hits: hits})
	if err != nil {
		return agentik.ToolResult{}, err
	}
	return agentik.ToolResult{Content: []agentik.Content{agentik.Text(string(out))}}, nil
}

// decodeArgs reads the tool's arguments: a JSON object with a string
// query and an optional integer limit.
func decodeArgs(args agentik.RawJSON) (agentik.SearchRequest, error) {
	var in struct {
		Query *string `json:"query"`
		Limit *int    `json:"limit"`
	}
	if err := json.Unmarshal(args, &in); err != nil || in.Query == nil {
		return agentik.SearchRequest{}, fmt.Errorf("arguments must be a JSON object with a string query and an optional integer limit (1 to %d)", agentik.MaxSearchLimit)
	}
	req := agentik.SearchRequest{Query: *in.Query}
	if in.Limit != nil {
		if *in.Limit < 1 || *in.Limit > agentik.MaxSearchLimit {
			return agentik.SearchRequest{}, fmt.Errorf("limit must be between 1 and %d", agentik.MaxSearchLimit)
		}
		req.Limit = *in.Limit
	}
	return req, nil
}
