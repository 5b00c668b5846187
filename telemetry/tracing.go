package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/agentik/agentik"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// ProviderOpenAI is gen_ai.provider.name of a model reached over the
// OpenAI-compatible API.
const ProviderOpenAI = "openai"

// scope is the instrumentation scope of Agentik's spans.
const scope = "github.com/agentik/agentik"

// Tracing is the OpenTelemetry tracer provider of one process: spans after
// the GenAI semantic conventions (v1.41.0), exported over OTLP/HTTP in
// batches. A nil *Tracing is tracing off: its methods do nothing, Agent
// returns a nil agentik.Tracer and Transport returns its base. Safe for
// concurrent use.
type Tracing struct {
	tp      *sdktrace.TracerProvider
	tracer  trace.Tracer
	prop    propagation.TextMapPropagator
	capture bool // OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true
}

// TracingEnabled reports whether the environment asks for traces: an OTLP
// endpoint is set (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
// OTEL_EXPORTER_OTLP_ENDPOINT), OTEL_SDK_DISABLED is not true and
// OTEL_TRACES_EXPORTER is not none.
func TracingEnabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")), "none") {
		return false
	}
	return strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) != "" ||
		strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")) != ""
}

// NewTracing sets up tracing when the environment asks for it
// (TracingEnabled), else returns nil. The OpenTelemetry SDK reads the
// standard variables of the process's environment itself: the exporter
// OTEL_EXPORTER_OTLP_[TRACES_]{ENDPOINT,HEADERS,TIMEOUT,COMPRESSION,…},
// the sampler OTEL_TRACES_SAMPLER(_ARG), the batch processor OTEL_BSP_*,
// the resource OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (service.name
// defaults to agentik, service.version to version). Shutdown flushes.
func NewTracing(ctx context.Context, getenv func(string) string, version string) (*Tracing, error) {
	if !TracingEnabled(getenv) {
		return nil, nil
	}
	cfg, err := otlpConfigFrom(getenv, os.ReadFile)
	if err != nil {
		return nil, fmt.Errorf("otlp trace exporter: %w", err)
	}
	exp := newOTLPExporter(cfg)
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName("agentik"), semconv.ServiceVersion(version)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(), // OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME: last, so they win
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracing{
		tp:      tp,
		tracer:  tp.Tracer(scope, trace.WithInstrumentationVersion(version)),
		prop:    propagation.TraceContext{},
		capture: strings.EqualFold(strings.TrimSpace(getenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")), "true"),
	}, nil
}

// Shutdown exports the spans still buffered and stops the exporter.
// Idempotent.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// Extract returns ctx with the trace context of an incoming request's W3C
// traceparent (and tracestate) header, when it has a valid one: the HTTP
// edge calls it for every request.
func (t *Tracing) Extract(ctx context.Context, h http.Header) context.Context {
	if t == nil || h.Get("traceparent") == "" {
		return ctx
	}
	return t.prop.Extract(ctx, propagation.HeaderCarrier(h))
}

// Transport returns base (http.DefaultTransport when nil) with the trace
// context of each request's context added as a W3C traceparent header:
// for outgoing MCP HTTP, A2A and model calls.
func (t *Tracing) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if t == nil {
		return base
	}
	return propagating{base: base, prop: t.prop}
}

type propagating struct {
	base http.RoundTripper
	prop propagation.TextMapPropagator
}

func (p propagating) RoundTrip(r *http.Request) (*http.Response, error) {
	if !trace.SpanContextFromContext(r.Context()).IsValid() {
		return p.base.RoundTrip(r)
	}
	r = r.Clone(r.Context()) // a RoundTripper must not change the caller's request
	p.prop.Inject(r.Context(), propagation.HeaderCarrier(r.Header))
	return p.base.RoundTrip(r)
}

// Agent returns the tracer of one agent's engine; provider is its model's
// gen_ai.provider.name (ProviderOpenAI). Nil when t is nil: no tracing.
func (t *Tracing) Agent(info agentik.AgentInfo, provider string) agentik.Tracer {
	if t == nil {
		return nil
	}
	return &agentTracer{t: t, info: info, provider: provider}
}

// agentTracer implements agentik.Tracer for one agent.
type agentTracer struct {
	t        *Tracing
	info     agentik.AgentInfo
	provider string
}

var _ agentik.Tracer = (*agentTracer)(nil)

func (a *agentTracer) TraceParent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}

// parent parses a stored traceparent.
func (a *agentTracer) parent(tp string) trace.SpanContext {
	if tp == "" {
		return trace.SpanContext{}
	}
	ctx := a.t.prop.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp})
	return trace.SpanContextFromContext(ctx)
}

func (a *agentTracer) StartTurn(ctx context.Context, tt agentik.TurnTrace) (context.Context, agentik.Span) {
	name := a.info.Name
	if name == "" {
		name = a.info.ID
	}
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIProviderNameKey.String(a.provider),
		semconv.GenAIAgentID(a.info.ID),
		semconv.GenAIAgentName(name),
		semconv.GenAIConversationID(tt.ConversationID),
		attribute.String("agentik.reply_to", tt.ReplyTo),
	}
	if a.info.Version != "" {
		attrs = append(attrs, semconv.GenAIAgentVersion(a.info.Version))
	}
	if a.info.Description != "" {
		attrs = append(attrs, semconv.GenAIAgentDescription(a.info.Description))
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...)}
	if sc := a.parent(tt.TraceParent); sc.IsValid() {
		if tt.Linked {
			opts = append(opts, trace.WithNewRoot(), trace.WithLinks(trace.Link{SpanContext: sc,
				Attributes: []attribute.KeyValue{attribute.String("agentik.link", "request")}}))
		} else {
			ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
		}
	} else {
		opts = append(opts, trace.WithNewRoot())
	}
	ctx, span := a.t.tracer.Start(ctx, "invoke_agent "+name, opts...)
	return ctx, turnSpan{span}
}

type turnSpan struct{ s trace.Span }

func (s turnSpan) End(e agentik.SpanEnd) {
	s.s.SetAttributes(attribute.String("agentik.turn.outcome", e.Outcome))
	if e.Tokens.Input > 0 || e.Tokens.Output > 0 {
		s.s.SetAttributes(semconv.GenAIUsageInputTokens(int(e.Tokens.Input)), semconv.GenAIUsageOutputTokens(int(e.Tokens.Output)))
	}
	setError(s.s, e)
	s.s.End()
}

func setError(s trace.Span, e agentik.SpanEnd) {
	if e.ErrorType == "" {
		return
	}
	s.SetAttributes(semconv.ErrorTypeKey.String(e.ErrorType))
	s.SetStatus(codes.Error, e.Detail)
}

func (a *agentTracer) StartModelCall(ctx context.Context, m agentik.ModelTrace) (context.Context, agentik.Span) {
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameChat,
		semconv.GenAIProviderNameKey.String(a.provider),
		semconv.GenAIRequestModel(m.Model),
		semconv.GenAIConversationID(m.ConversationID),
		semconv.GenAIOutputTypeText,
		attribute.Bool("gen_ai.request.stream", true),
	}
	if a.t.capture && m.Request != nil {
		if m.Request.System != "" {
			attrs = append(attrs, semconv.GenAISystemInstructionsKey.String(jsonString([]part{{Type: "text", Content: m.Request.System}})))
		}
		attrs = append(attrs, semconv.GenAIInputMessagesKey.String(jsonString(inputMessages(m.Request.Messages))))
	}
	ctx, span := a.t.tracer.Start(ctx, "chat "+m.Model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return ctx, modelSpan{s: span, capture: a.t.capture}
}

type modelSpan struct {
	s       trace.Span
	capture bool
}

func (s modelSpan) End(e agentik.SpanEnd) {
	if r := e.Response; r != nil {
		attrs := []attribute.KeyValue{
			semconv.GenAIUsageInputTokens(int(r.Tokens.Input)),
			semconv.GenAIUsageOutputTokens(int(r.Tokens.Output)),
		}
		if r.Model != "" {
			attrs = append(attrs, semconv.GenAIResponseModel(r.Model))
		}
		if r.ID != "" {
			attrs = append(attrs, semconv.GenAIResponseID(r.ID))
		}
		if r.FinishReason != "" {
			attrs = append(attrs, semconv.GenAIResponseFinishReasons(r.FinishReason))
		}
		if s.capture {
			attrs = append(attrs, semconv.GenAIOutputMessagesKey.String(jsonString([]message{outputMessage(r)})))
		}
		s.s.SetAttributes(attrs...)
	}
	if e.Outcome == "interrupted" {
		s.s.SetAttributes(attribute.Bool("agentik.interrupted", true))
	}
	setError(s.s, e)
	s.s.End()
}

func (a *agentTracer) StartToolCall(ctx context.Context, t agentik.ToolTrace) (context.Context, agentik.Span) {
	kind := "function"
	if strings.HasPrefix(t.Source, "mcp") || strings.HasPrefix(t.Source, "a2a") {
		kind = "extension" // run by another server
	}
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIProviderNameKey.String(a.provider),
		semconv.GenAIToolName(t.Call.Name),
		semconv.GenAIToolCallID(t.Call.ID),
		semconv.GenAIToolTypeKey.String(kind),
		semconv.GenAIConversationID(t.ConversationID),
	}
	if t.Description != "" {
		attrs = append(attrs, semconv.GenAIToolDescription(t.Description))
	}
	if a.t.capture {
		attrs = append(attrs, semconv.GenAIToolCallArgumentsKey.String(string(t.Call.Arguments)))
	}
	ctx, span := a.t.tracer.Start(ctx, "execute_tool "+t.Call.Name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return ctx, toolSpan{s: span, capture: a.t.capture}
}

type toolSpan struct {
	s       trace.Span
	capture bool
}

func (s toolSpan) End(e agentik.SpanEnd) {
	if s.capture && e.Result != nil {
		s.s.SetAttributes(semconv.GenAIToolCallResultKey.String(jsonString(parts(e.Result.Content))))
	}
	setError(s.s, e)
	s.s.End()
}

// The JSON forms of captured content (gen-ai-input-messages.json and
// gen-ai-output-messages.json of the conventions). Images are named by
// their media type, never copied.
type message struct {
	Role         string `json:"role"`
	Parts        []part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

type part struct {
	Type      string          `json:"type"`
	Content   string          `json:"content,omitempty"`
	MIMEType  string          `json:"mime_type,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Response  []part          `json:"response,omitempty"`
}

func parts(cs []agentik.Content) []part {
	out := make([]part, 0, len(cs))
	for _, c := range cs {
		if c.Type == agentik.ContentText {
			out = append(out, part{Type: "text", Content: c.Text})
		} else {
			out = append(out, part{Type: c.Type, MIMEType: c.MIME})
		}
	}
	return out
}

func inputMessages(ms []agentik.ModelMessage) []message {
	out := make([]message, 0, len(ms))
	for _, m := range ms {
		msg := message{Role: m.Role, Parts: parts(m.Content)}
		if m.Role == agentik.RoleTool {
			msg.Parts = []part{{Type: "tool_call_response", ID: m.CallID, Response: parts(m.Content)}}
		}
		for _, tc := range m.ToolCalls {
			msg.Parts = append(msg.Parts, part{Type: "tool_call", ID: tc.ID, Name: tc.Name, Arguments: json.RawMessage(tc.Arguments)})
		}
		out = append(out, msg)
	}
	return out
}

func outputMessage(r *agentik.ModelResponse) message {
	m := message{Role: agentik.RoleAssistant, Parts: []part{}, FinishReason: r.FinishReason}
	if r.Text != "" {
		m.Parts = append(m.Parts, part{Type: "text", Content: r.Text})
	}
	for _, tc := range r.ToolCalls {
		m.Parts = append(m.Parts, part{Type: "tool_call", ID: tc.ID, Name: tc.Name, Arguments: json.RawMessage(tc.Arguments)})
	}
	return m
}

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}
