package agentik

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"
)

// Approval actions of a policy rule (SPEC §10).
const (
	ApprovalAsk   = "ask"   // the call waits for a person's yes
	ApprovalAllow = "allow" // the call runs (the default)
	ApprovalDeny  = "deny"  // the tool is hidden from the model and never runs
)

// ApprovalRule maps tool names matching Pattern (a path.Match glob: *, ?,
// [...]) to Action.
type ApprovalRule struct {
	Pattern string
	Action  string
}

// ApprovalPolicy is an agent's tool approval policy: its rules in order;
// the first whose pattern matches a tool name decides, and a name no rule
// matches is ApprovalAllow. The zero policy allows everything.
type ApprovalPolicy []ApprovalRule

// Action returns what the policy says about the tool name.
func (p ApprovalPolicy) Action(name string) string {
	for _, r := range p {
		if ok, _ := path.Match(r.Pattern, name); ok {
			return r.Action
		}
	}
	return ApprovalAllow
}

// Validate refuses rules with an empty or malformed pattern or an unknown
// action (EInvalid).
func (p ApprovalPolicy) Validate() error {
	for _, r := range p {
		if r.Pattern == "" {
			return Errorf(EInvalid, "approval: empty tool pattern")
		}
		if _, err := path.Match(r.Pattern, ""); err != nil {
			return Errorf(EInvalid, "approval: bad tool pattern %q", r.Pattern)
		}
		switch r.Action {
		case ApprovalAsk, ApprovalAllow, ApprovalDeny:
		default:
			return Errorf(EInvalid, "approval: %s: want ask, allow or deny, got %q", r.Pattern, r.Action)
		}
	}
	return nil
}

// ParseApprovalPolicy parses AGENTIK_TOOL_APPROVAL: comma-separated
// pattern=action pairs, first match wins, e.g. "send_*=ask,delete_*=deny".
// Blank entries are ignored; "" is the empty policy.
func ParseApprovalPolicy(s string) (ApprovalPolicy, error) {
	var p ApprovalPolicy
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		pat, act, ok := strings.Cut(part, "=")
		if !ok {
			return nil, Errorf(EInvalid, "approval: %q: want pattern=ask|allow|deny", part)
		}
		p = append(p, ApprovalRule{Pattern: strings.TrimSpace(pat), Action: strings.TrimSpace(act)})
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// String is the policy in ParseApprovalPolicy's syntax.
func (p ApprovalPolicy) String() string {
	parts := make([]string, len(p))
	for i, r := range p {
		parts[i] = r.Pattern + "=" + r.Action
	}
	return strings.Join(parts, ",")
}

// Reasons of approval_resolved events the engine writes itself.
const (
	ApprovalExpired     = "expired"     // approval_timeout passed
	ApprovalInterrupted = "interrupted" // the turn was interrupted while waiting
)

// DeniedText is the tool error result the model gets for a denied call.
func DeniedText(reason string) string {
	if reason == "" {
		return "denied by the user"
	}
	return "denied by the user: " + reason
}

// PendingApproval is a tool call waiting for a person's answer (SPEC §10):
// what its approval_requested event says.
type PendingApproval struct {
	ConversationID string  `json:"conversation_id"`
	CallID         string  `json:"call_id"`
	Name           string  `json:"name"`
	Arguments      RawJSON `json:"arguments"`
	ReplyTo        string  `json:"reply_to"`
	RequestedAt    Time    `json:"requested_at"`
	ExpiresAt      Time    `json:"expires_at,omitzero"`
	// Cursor is the approval_requested event's cursor.
	Cursor int64 `json:"cursor,omitempty"`
	// Schema is the JSON Schema the tool's arguments must satisfy (the
	// tool's parameters; empty when the tool is gone).
	Schema RawJSON `json:"schema,omitempty"`
	Owner  string  `json:"-"`
}

// Prompt is a one-line statement of the call for people: name(arguments).
func (p PendingApproval) Prompt() string {
	args := string(p.Arguments)
	if len(args) > 400 {
		args = args[:400] + "…"
	}
	return fmt.Sprintf("The agent wants to call %s(%s)", p.Name, args)
}

// Resolution answers a pending approval. Arguments, when set on an
// approval, replace the call's arguments: they must be a JSON object that
// satisfies the tool's schema.
type Resolution struct {
	Approved  bool    `json:"approved"`
	Reason    string  `json:"reason,omitempty"`
	Arguments RawJSON `json:"arguments,omitempty"`
}

// MaxApprovalReason bounds the reason of a resolution, in bytes.
const MaxApprovalReason = 4096

// DecodeResolution decodes a resolution from outside JSON
// ({"approved":bool,"reason?":string,"arguments?":object}). approved is
// required; errors are EInvalid.
func DecodeResolution(b []byte) (Resolution, error) {
	if err := CheckJSON(b); err != nil {
		return Resolution{}, err
	}
	var raw struct {
		Approved  *bool           `json:"approved"`
		Reason    string          `json:"reason"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if !json.Valid(b) {
		return Resolution{}, Errorf(EMalformed, "approval: the body is not JSON")
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return Resolution{}, Errorf(EInvalid, "approval: want {\"approved\": bool, \"reason\"?: string, \"arguments\"?: object}")
	}
	if raw.Approved == nil {
		return Resolution{}, Errorf(EInvalid, "approval: approved is required")
	}
	r := Resolution{Approved: *raw.Approved, Reason: raw.Reason}
	if a := strings.TrimSpace(string(raw.Arguments)); a != "" && a != "null" {
		r.Arguments = RawJSON(a)
	}
	if err := r.Validate(); err != nil {
		return Resolution{}, err
	}
	return r, nil
}

// Validate checks the shape of a resolution (not the tool's schema).
func (r Resolution) Validate() error {
	if len(r.Reason) > MaxApprovalReason {
		return Errorf(EInvalid, "approval: reason longer than %d bytes", MaxApprovalReason)
	}
	if len(r.Arguments) > 0 {
		if !r.Approved {
			return Errorf(EInvalid, "approval: arguments only go with an approval")
		}
		if !json.Valid(r.Arguments) || strings.TrimSpace(string(r.Arguments))[0] != '{' {
			return Errorf(EInvalid, "approval: arguments must be a JSON object")
		}
	}
	return nil
}

// Approver is the part of Conversation that answers tool calls waiting
// for approval: Approvals lists the pending ones (none when the agent asks
// for no approval), Resolve answers one for the principal in ctx, who is
// recorded as by. Resolve errors: ENotFound for a call id that never
// waited in this conversation, EConflict for one already answered (nothing
// changes then), EInvalid for arguments that are not an object satisfying
// the tool's schema.
type Approver interface {
	Approvals(ctx context.Context) ([]PendingApproval, error)
	Resolve(ctx context.Context, callID string, r Resolution) error
}

// ApprovalLister is implemented by agents that can list the approvals
// pending in the conversations this process knows (the engine): for
// administration and metrics. It acts for every principal.
type ApprovalLister interface {
	PendingApprovals() []PendingApproval
}

// approvalExpiry returns when a call requested at t expires (zero: never).
func ApprovalExpiry(t Time, timeout time.Duration) Time {
	if timeout <= 0 {
		return Time{}
	}
	return TimeOf(t.Add(timeout))
}

// Tool results the engine records for a turn interrupted in a tool round.
const (
	// ToolInterruptedText: the call was running when the turn was
	// interrupted and stopped with an error (a tool that finished anyway
	// has its own result recorded).
	ToolInterruptedText = "interrupted while the tool ran; it may have done part of its work"
	// ToolNotRunText: the call never ran (working memory only).
	ToolNotRunText = "not run: the turn was interrupted first"
)
