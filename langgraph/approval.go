package langgraph

import (
	"encoding/json"
	"strings"

	"github.com/agentik/agentik"
)

// Interrupt is a pending approval as LangGraph shows an interrupt: its
// value follows LangChain's human-in-the-loop shape.
type Interrupt struct {
	Value HITLRequest `json:"value"`
	ID    string      `json:"id"`
}

// HITLRequest is the value of an approval interrupt: the calls that wait,
// and what may be decided of each.
type HITLRequest struct {
	ActionRequests []ActionRequest `json:"action_requests"`
	ReviewConfigs  []ReviewConfig  `json:"review_configs"`
}

// ActionRequest is one call that waits.
type ActionRequest struct {
	Name        string          `json:"name"`
	Args        json.RawMessage `json:"args"`
	Description string          `json:"description"`
}

// ReviewConfig says which decisions a call takes.
type ReviewConfig struct {
	ActionName       string   `json:"action_name"`
	AllowedDecisions []string `json:"allowed_decisions"`
}

// interrupts is the one interrupt of the approvals that wait (they belong
// to one turn): one action request per call, in the order they were
// requested. Its id is the first call's.
func interrupts(pend []agentik.PendingApproval) []Interrupt {
	if len(pend) == 0 {
		return nil
	}
	req := HITLRequest{}
	for _, p := range pend {
		args := json.RawMessage(p.Arguments)
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		req.ActionRequests = append(req.ActionRequests, ActionRequest{Name: p.Name, Args: args, Description: p.Prompt()})
		req.ReviewConfigs = append(req.ReviewConfigs, ReviewConfig{ActionName: p.Name, AllowedDecisions: []string{"approve", "edit", "reject"}})
	}
	return []Interrupt{{Value: req, ID: pend[0].CallID}}
}

// interruptMap is a thread's interrupts keyed by the task that waits.
func interruptMap(pend []agentik.PendingApproval) map[string]any {
	its := interrupts(pend)
	if len(its) == 0 {
		return map[string]any{}
	}
	return map[string]any{pend[0].ReplyTo: its}
}

// Decision answers one action request.
type Decision struct {
	Type         string `json:"type"` // approve | edit | reject
	Message      string `json:"message,omitempty"`
	EditedAction *struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"edited_action,omitempty"`
}

// decisions reads command.resume: {decisions:[…]}, or a map from the
// interrupt's id to that, as LangGraph takes resumes of several
// interrupts.
func decisions(resume json.RawMessage, pend []agentik.PendingApproval) ([]Decision, error) {
	var direct struct {
		Decisions []Decision `json:"decisions"`
	}
	if err := json.Unmarshal(resume, &direct); err == nil && direct.Decisions != nil {
		return direct.Decisions, nil
	}
	var byID map[string]json.RawMessage
	if err := json.Unmarshal(resume, &byID); err == nil && len(pend) > 0 {
		if v, ok := byID[pend[0].CallID]; ok {
			return decisions(v, nil)
		}
	}
	return nil, agentik.Errorf(agentik.EInvalid, "command.resume must be {decisions: [{type: approve|edit|reject}, …]}, one decision per action request")
}

// resolutions pairs the decisions with the calls that wait, in order.
func resolutions(ds []Decision, pend []agentik.PendingApproval) ([]agentik.Resolution, error) {
	if len(ds) != len(pend) {
		return nil, agentik.Errorf(agentik.EInvalid, "command.resume has %d decisions; %d action requests wait", len(ds), len(pend))
	}
	out := make([]agentik.Resolution, len(ds))
	for i, d := range ds {
		switch d.Type {
		case "approve":
			out[i] = agentik.Resolution{Approved: true}
		case "reject":
			out[i] = agentik.Resolution{Approved: false, Reason: d.Message}
		case "edit":
			if d.EditedAction == nil {
				return nil, agentik.Errorf(agentik.EInvalid, "decision %d: edit needs edited_action {name, args}", i)
			}
			if d.EditedAction.Name != "" && d.EditedAction.Name != pend[i].Name {
				return nil, agentik.Errorf(agentik.EInvalid, "decision %d: edited_action.name %q: the call is %q (a call's tool cannot change)", i, d.EditedAction.Name, pend[i].Name)
			}
			if a := strings.TrimSpace(string(d.EditedAction.Args)); a == "" || a[0] != '{' {
				return nil, agentik.Errorf(agentik.EInvalid, "decision %d: edited_action.args must be an object", i)
			}
			out[i] = agentik.Resolution{Approved: true, Arguments: d.EditedAction.Args}
		default:
			return nil, agentik.Errorf(agentik.EInvalid, "decision %d: type must be approve, edit or reject", i)
		}
		if err := out[i].Validate(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
