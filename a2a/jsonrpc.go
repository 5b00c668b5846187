package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
)

// JSON-RPC and A2A error codes (the same numbers in 0.3 and 1.0). Those the
// core's errors map to are edge's (edge.RPCCode is the mapping).
const (
	CodeParseError               = edge.RPCParseError
	CodeInvalidRequest           = edge.RPCInvalidRequest
	CodeMethodNotFound           = edge.RPCMethodNotFound
	CodeInvalidParams            = edge.RPCInvalidParams
	CodeInternalError            = edge.RPCInternalError
	CodeTaskNotFound             = edge.RPCNotFound
	CodeTaskNotCancelable        = -32002
	CodePushNotSupported         = -32003
	CodeUnsupportedOperation     = edge.RPCUnsupportedOperation
	CodeContentTypeNotSupported  = edge.RPCContentTypeNotSupported
	CodeInvalidAgentResponse     = -32006
	CodeExtendedCardNotAvailable = -32007
	CodeUnauthenticated          = edge.RPCUnauthenticated // 1.0; 0.3 clients only see the HTTP 401
)

// Error is a JSON-RPC error object, sent by the server and returned by the
// client for an error response.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("a2a error %d: %s", e.Code, e.Message) }

func rpcErr(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Method names of both versions, mapped to one operation.
const (
	opSend      = "send"
	opStream    = "stream"
	opGet       = "get"
	opCancel    = "cancel"
	opSubscribe = "subscribe"
	opPush      = "push"
	opCard      = "card"
	opList      = "list"
)

var methods = map[string]struct {
	op string
	v  Version
}{
	"SendMessage":                      {opSend, V1},
	"SendStreamingMessage":             {opStream, V1},
	"GetTask":                          {opGet, V1},
	"CancelTask":                       {opCancel, V1},
	"SubscribeToTask":                  {opSubscribe, V1},
	"ListTasks":                        {opList, V1},
	"CreateTaskPushNotificationConfig": {opPush, V1},
	"GetTaskPushNotificationConfig":    {opPush, V1},
	"ListTaskPushNotificationConfigs":  {opPush, V1},
	"DeleteTaskPushNotificationConfig": {opPush, V1},
	"GetExtendedAgentCard":             {opCard, V1},

	"message/send":                        {opSend, V03},
	"message/stream":                      {opStream, V03},
	"tasks/get":                           {opGet, V03},
	"tasks/cancel":                        {opCancel, V03},
	"tasks/resubscribe":                   {opSubscribe, V03},
	"tasks/pushNotificationConfig/set":    {opPush, V03},
	"tasks/pushNotificationConfig/get":    {opPush, V03},
	"tasks/pushNotificationConfig/list":   {opPush, V03},
	"tasks/pushNotificationConfig/delete": {opPush, V03},
	"agent/getAuthenticatedExtendedCard":  {opCard, V03},
}

// Method names the client uses, per version.
var clientMethods = map[Version]map[string]string{
	V1:  {opSend: "SendMessage", opStream: "SendStreamingMessage", opGet: "GetTask", opCancel: "CancelTask", opSubscribe: "SubscribeToTask"},
	V03: {opSend: "message/send", opStream: "message/stream", opGet: "tasks/get", opCancel: "tasks/cancel", opSubscribe: "tasks/resubscribe"},
}

// request is a decoded JSON-RPC call. ID is kept verbatim so the response
// echoes it with its type (clients compare it strictly).
type request struct {
	ID     json.RawMessage
	Method string
	Params json.RawMessage
	op     string
	v      Version
}

// nullID is the id of an error response to a request whose id is unknown.
var nullID = json.RawMessage("null")

// decodeRequest parses one JSON-RPC request body. On error the returned id is
// the request's id when it could be read, else null.
func decodeRequest(body []byte) (*request, json.RawMessage, *Error) {
	if err := agentik.CheckJSON(body); err != nil {
		return nil, nullID, rpcErr(CodeParseError, "%s", agentik.ErrorMessage(err))
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) || !json.Valid(body) {
			return nil, nullID, rpcErr(CodeParseError, "the body is not valid JSON")
		}
		return nil, nullID, rpcErr(CodeInvalidRequest, "the body must be a JSON-RPC request object")
	}
	id := raw["id"]
	if !validID(id) {
		return nil, nullID, rpcErr(CodeInvalidRequest, "id must be a string or a number")
	}
	if v := raw["jsonrpc"]; string(v) != `"2.0"` {
		return nil, id, rpcErr(CodeInvalidRequest, `jsonrpc must be "2.0"`)
	}
	var method string
	if err := json.Unmarshal(raw["method"], &method); err != nil || method == "" {
		return nil, id, rpcErr(CodeInvalidRequest, "method must be a non-empty string")
	}
	m, ok := methods[method]
	if !ok {
		return nil, id, rpcErr(CodeMethodNotFound, "method %q not found", truncate(method, 64))
	}
	params := raw["params"]
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage("{}")
	}
	if params[0] != '{' {
		return nil, id, rpcErr(CodeInvalidParams, "params must be an object")
	}
	return &request{ID: id, Method: method, Params: params, op: m.op, v: m.v}, id, nil
}

// validID accepts a JSON string or number. A missing id (a notification) is
// refused: every A2A method has a result the caller waits for.
func validID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	if len(id) == 0 {
		return false
	}
	if id[0] == '"' {
		var s string
		return json.Unmarshal(id, &s) == nil
	}
	var n json.Number
	return json.Unmarshal(id, &n) == nil
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ---- params ----

type sendParams struct {
	msg      *Message
	blocking bool
	history  *int
}

// The configuration of a send in each version's wire form (what is used
// of it).
type (
	v1SendConfig struct {
		ReturnImmediately bool `json:"returnImmediately"`
		HistoryLength     *int `json:"historyLength"`
	}
	v03SendConfig struct {
		Blocking      *bool `json:"blocking"`
		HistoryLength *int  `json:"historyLength"`
	}
)

// decodeSendParams reads SendMessage / message/send params of either version.
func decodeSendParams(v Version, raw json.RawMessage) (*sendParams, *Error) {
	p := sendParams{blocking: true}
	if v == V1 {
		m, c, rerr := decodeSendWire[v1Message, v1SendConfig](raw, decV1Message)
		if rerr != nil {
			return nil, rerr
		}
		p.msg = m
		if c != nil {
			p.blocking = !c.ReturnImmediately
			p.history = c.HistoryLength
		}
	} else {
		m, c, rerr := decodeSendWire[v03Message, v03SendConfig](raw, decV03Message)
		if rerr != nil {
			return nil, rerr
		}
		p.msg = m
		if c != nil {
			if c.Blocking != nil {
				p.blocking = *c.Blocking
			}
			p.history = c.HistoryLength
		}
	}
	if p.msg.ID == "" {
		return nil, rpcErr(CodeInvalidParams, "params.message.messageId is required")
	}
	if p.msg.Role != RoleUser {
		return nil, rpcErr(CodeInvalidParams, "params.message.role must be user")
	}
	if len(p.msg.Parts) == 0 {
		return nil, rpcErr(CodeInvalidParams, "params.message.parts must not be empty")
	}
	if p.history != nil && *p.history < 0 {
		return nil, rpcErr(CodeInvalidParams, "historyLength must not be negative")
	}
	return &p, nil
}

// decodeSendWire reads the params of a send in one version's wire form:
// its message M, required and decoded with dec, and its configuration C
// (nil when absent).
func decodeSendWire[M, C any](raw json.RawMessage, dec func(*M) (*Message, error)) (*Message, *C, *Error) {
	var w struct {
		Message       *M `json:"message"`
		Configuration *C `json:"configuration"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, nil, rpcErr(CodeInvalidParams, "invalid params: %s", jsonProblem(err))
	}
	if w.Message == nil {
		return nil, nil, rpcErr(CodeInvalidParams, "params.message is required")
	}
	m, err := dec(w.Message)
	if err != nil {
		return nil, nil, rpcErr(CodeInvalidParams, "params.message: %v", err)
	}
	return m, w.Configuration, nil
}

type idParams struct {
	ID            string `json:"id"`
	HistoryLength *int   `json:"historyLength"`
}

func decodeIDParams(raw json.RawMessage) (*idParams, *Error) {
	var p idParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, rpcErr(CodeInvalidParams, "invalid params: %s", jsonProblem(err))
	}
	if p.ID == "" {
		return nil, rpcErr(CodeInvalidParams, "params.id is required")
	}
	if p.HistoryLength != nil && *p.HistoryLength < 0 {
		return nil, rpcErr(CodeInvalidParams, "historyLength must not be negative")
	}
	return &p, nil
}

// jsonProblem describes a decoding error without echoing input back.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Sprintf("%s must be %s", te.Field, te.Type.String())
		}
		return "wrong JSON type"
	}
	return "malformed JSON"
}
