package edge

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/agentik/agentik"
)

// OpenAIErrorBody is the error body of OpenAI's API, as the OpenAI-compatible
// front door (package openaiapi) answers it and the official SDKs read it:
// {"error":{"message","type","param","code"}}.
type OpenAIErrorBody struct {
	Error OpenAIErrorDetail `json:"error"`
}

// OpenAIErrorDetail is the error of an OpenAIErrorBody. Param and Code are
// null when they say nothing.
type OpenAIErrorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// OpenAI error types.
const (
	OpenAIInvalidRequest = "invalid_request_error"
	OpenAIAuthentication = "authentication_error"
	OpenAIRateLimit      = "rate_limit_error"
	OpenAIServer         = "server_error"
)

// openAIParam marks an error as about one request parameter, with an
// OpenAI code of its own.
type openAIParam struct {
	err   error
	param string
	code  string
}

func (e *openAIParam) Error() string { return e.err.Error() }
func (e *openAIParam) Unwrap() error { return e.err }

// OpenAIParam returns err marked as about request parameter param ("" for
// none) with the OpenAI code code ("" keeps the one OpenAIError maps
// err's core code to): an unknown model is ENotFound with code
// model_not_found, say.
func OpenAIParam(err error, param, code string) error {
	return &openAIParam{err: err, param: param, code: code}
}

// OpenAIError is the one place that maps the core's error codes to OpenAI's
// error types and codes; the status is Status's. An internal error gets a
// generic message.
func OpenAIError(err error) (int, OpenAIErrorBody) {
	code := agentik.ErrorCode(err)
	status := Status(code)
	msg := agentik.ErrorMessage(err)
	typ, oc := OpenAIInvalidRequest, code
	switch code {
	case agentik.EUnauthorized:
		typ, oc = OpenAIAuthentication, "invalid_api_key"
	case agentik.EMalformed, agentik.EInvalid:
		oc = "invalid_request_error"
	case agentik.ETooLarge:
		oc = "request_too_large"
	case agentik.EUnsupportedMed:
		oc = "unsupported_media_type"
	case agentik.EBusy:
		oc = "conversation_busy"
	case agentik.ERateLimited:
		typ, oc = OpenAIRateLimit, "rate_limit_exceeded"
	case agentik.EUnavailable:
		typ, oc = OpenAIServer, "service_unavailable"
	}
	if status == http.StatusInternalServerError {
		typ, oc, msg = OpenAIServer, "server_error", "internal error"
	}
	d := OpenAIErrorDetail{Message: msg, Type: typ, Code: &oc}
	var p *openAIParam
	if errors.As(err, &p) && status != http.StatusInternalServerError {
		if p.param != "" {
			d.Param = &p.param
		}
		if p.code != "" {
			d.Code = &p.code
		}
	}
	return status, OpenAIErrorBody{Error: d}
}

// WriteOpenAIError answers err in OpenAI's shape, with the headers every
// error carries (PrepareError: WWW-Authenticate, Retry-After). Internal
// errors are logged (nil log: slog.Default()) and shown generically.
func WriteOpenAIError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	if log == nil {
		log = slog.Default()
	}
	status, body := OpenAIError(err)
	if status == http.StatusInternalServerError {
		log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	} else {
		log.DebugContext(r.Context(), "request refused", "method", r.Method, "path", r.URL.Path, "code", agentik.ErrorCode(err), "err", err)
	}
	PrepareError(w, r, err)
	WriteJSON(w, status, body)
}
