package telemetry

// The OTLP/HTTP (protobuf) trace exporter. The official otlptracehttp
// exporter links google.golang.org/grpc (its configuration package is
// shared with the gRPC exporter; open-telemetry/opentelemetry-go#2579),
// and grpc links golang.org/x/net/trace, whose html/template makes the Go
// linker keep every exported method of every type in the binary. That
// made the binary 91 MiB instead of 62 and its idle RSS 39 MB instead of
// 29 (docs/benchmarks.md, "Idle memory and the gRPC import"). This exporter
// speaks the same protocol with the generated OTLP message types (which
// need no gRPC), reads the same OTEL_EXPORTER_OTLP_* variables, and is
// checked against the official one in its tests (the receiver decodes equal
// messages).

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// otlpConfig is the exporter's configuration, from the variables of the
// OTLP exporter specification; each OTEL_EXPORTER_OTLP_TRACES_X wins over
// its OTEL_EXPORTER_OTLP_X.
type otlpConfig struct {
	url     string      // where spans are POSTed
	headers http.Header // sent with each export
	timeout time.Duration
	gzip    bool
	tls     *tls.Config // nil: the system's roots, no client certificate
}

const (
	otlpDefaultTimeout  = 10 * time.Second
	otlpMaxResponseBody = 4 << 20
	otlpMaxErrorBody    = 512 // of an error response, in the returned error
)

// otlpConfigFrom reads the configuration. A value that cannot be used is an
// error naming its variable (never its value: headers hold API keys), so a
// mistake stops start-up instead of losing every span.
func otlpConfigFrom(getenv func(string) string, readFile func(string) ([]byte, error)) (otlpConfig, error) {
	e := otlpEnv{getenv: getenv, readFile: readFile}
	cfg := otlpConfig{headers: http.Header{}, timeout: otlpDefaultTimeout}
	var err error
	if cfg.url, err = e.endpoint(); err != nil {
		return otlpConfig{}, err
	}
	if v, s := e.get("PROTOCOL"); s != "" && s != "http/protobuf" {
		return otlpConfig{}, badVar(v, `only "http/protobuf" is supported`)
	}
	if err := e.headers(cfg.headers); err != nil {
		return otlpConfig{}, err
	}
	if v, s := e.get("TIMEOUT"); s != "" {
		ms, err := strconv.Atoi(s)
		if err != nil || ms < 0 {
			return otlpConfig{}, badVar(v, "not a number of milliseconds")
		}
		cfg.timeout = time.Duration(ms) * time.Millisecond
	}
	if v, s := e.get("COMPRESSION"); s != "" {
		switch s {
		case "gzip":
			cfg.gzip = true
		case "none":
		default:
			return otlpConfig{}, badVar(v, `not "gzip" or "none"`)
		}
	}
	if cfg.tls, err = e.tls(); err != nil {
		return otlpConfig{}, err
	}
	return cfg, nil
}

// otlpEnv reads the exporter's variables.
type otlpEnv struct {
	getenv   func(string) string
	readFile func(string) ([]byte, error)
}

// get returns the variable that sets name, OTEL_EXPORTER_OTLP_TRACES_name
// or else OTEL_EXPORTER_OTLP_name, and its value ("" when neither is set).
func (e otlpEnv) get(name string) (string, string) {
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_" + name, "OTEL_EXPORTER_OTLP_" + name} {
		if s := strings.TrimSpace(e.getenv(v)); s != "" {
			return v, s
		}
	}
	return "", ""
}

// badVar is the error for variable v's value, which is never quoted.
func badVar(v, why string) error {
	return fmt.Errorf("%s: %s", v, why)
}

// endpoint is the URL spans are posted to. The per-signal URL is used as it
// is (an empty path is /); the base URL gets /v1/traces appended to its
// path.
func (e otlpEnv) endpoint() (string, error) {
	v, s := "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", strings.TrimSpace(e.getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
	perSignal := s != ""
	if !perSignal {
		v, s = "OTEL_EXPORTER_OTLP_ENDPOINT", strings.TrimSpace(e.getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", badVar(v, "not an http:// or https:// URL")
	}
	// As the official exporter: scheme, host and path only. A user:password
	// or a query would also end up in every export error logged.
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	switch {
	case perSignal && u.Path == "":
		u.Path = "/"
	case !perSignal:
		u.Path = path.Join("/", u.Path, "v1/traces")
		u.RawPath = ""
	}
	return u.String(), nil
}

// headers adds the headers to send with each export to h.
func (e otlpEnv) headers(h http.Header) error {
	v, s := e.get("HEADERS")
	if s == "" {
		return nil
	}
	for _, pair := range strings.Split(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue // "a=b," and the like
		}
		k, val, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || !validHeaderName(k) {
			return badVar(v, "not a list of name=value")
		}
		val, err := url.PathUnescape(val)
		if err != nil {
			return badVar(v, "a value is not percent-encoded properly")
		}
		h.Set(k, strings.TrimSpace(val))
	}
	return nil
}

// tls is the TLS configuration the variables ask for: nil for the system's
// roots and no client certificate.
func (e otlpEnv) tls() (*tls.Config, error) {
	var tc tls.Config
	if v, s := e.get("CERTIFICATE"); s != "" {
		pem, err := e.readFile(s)
		if err != nil {
			return nil, badVar(v, "cannot read the file: "+err.Error())
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, badVar(v, "no PEM certificate in the file")
		}
	}
	// A client certificate and its key come as a pair of one prefix.
	for _, prefix := range []string{"OTEL_EXPORTER_OTLP_TRACES_", "OTEL_EXPORTER_OTLP_"} {
		pair, ok, err := e.clientCert(prefix+"CLIENT_CERTIFICATE", prefix+"CLIENT_KEY")
		if err != nil {
			return nil, err
		}
		if ok {
			tc.Certificates = []tls.Certificate{pair}
			break
		}
	}
	if tc.RootCAs == nil && tc.Certificates == nil {
		return nil, nil
	}
	return &tc, nil
}

// clientCert reads the client certificate and key the variables cv and kv
// name; ok is false when neither is set.
func (e otlpEnv) clientCert(cv, kv string) (pair tls.Certificate, ok bool, err error) {
	cert, key := strings.TrimSpace(e.getenv(cv)), strings.TrimSpace(e.getenv(kv))
	if cert == "" && key == "" {
		return tls.Certificate{}, false, nil
	}
	if cert == "" || key == "" {
		return tls.Certificate{}, false, badVar(cv, "a client certificate needs both "+cv+" and "+kv)
	}
	c, err := e.readFile(cert)
	if err != nil {
		return tls.Certificate{}, false, badVar(cv, "cannot read the file: "+err.Error())
	}
	k, err := e.readFile(key)
	if err != nil {
		return tls.Certificate{}, false, badVar(kv, "cannot read the file: "+err.Error())
	}
	pair, err = tls.X509KeyPair(c, k)
	if err != nil {
		return tls.Certificate{}, false, badVar(cv, "not a certificate and key pair: "+err.Error())
	}
	return pair, true, nil
}

// validHeaderName reports whether s is an HTTP token (RFC 9110).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// otlpExporter is an sdktrace.SpanExporter over OTLP/HTTP. An export
// answered 429, 502, 503 or 504, or whose connection was refused, reset or
// cut before the answer, or timed out, is retried with exponential backoff
// (honouring Retry-After) for at most otlpRetry.maxElapsed; other failures
// are returned (the batch processor reports them through otel.Handle). Safe
// for concurrent use; Shutdown is idempotent and cancels exports under way.
type otlpExporter struct {
	cfg    otlpConfig
	client *http.Client
	retry  otlpRetry

	stopped context.Context // done once Shutdown was called
	stop    context.CancelFunc
}

// otlpRetry is the backoff: the first wait, its ceiling, and the time after
// the first attempt past which no attempt is started.
type otlpRetry struct {
	initial, max, maxElapsed time.Duration
}

// The official exporter's defaults.
var otlpDefaultRetry = otlpRetry{initial: 5 * time.Second, max: 30 * time.Second, maxElapsed: time.Minute}

var _ sdktrace.SpanExporter = (*otlpExporter)(nil)

func newOTLPExporter(cfg otlpConfig) *otlpExporter {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.tls != nil {
		tr.TLSClientConfig = cfg.tls
	}
	stopped, stop := context.WithCancel(context.Background())
	return &otlpExporter{
		cfg:     cfg,
		client:  &http.Client{Transport: tr, Timeout: cfg.timeout},
		retry:   otlpDefaultRetry,
		stopped: stopped,
		stop:    stop,
	}
}

// ExportSpans sends spans in one request (with its retries).
func (e *otlpExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	if e.stopped.Err() != nil {
		return errors.New("otlp: the exporter is shut down")
	}
	body, err := marshalTraces(spans)
	if err != nil {
		return fmt.Errorf("otlp: encode spans: %w", err)
	}
	if e.cfg.gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		if _, err := zw.Write(body); err != nil {
			return fmt.Errorf("otlp: compress: %w", err)
		}
		if err := zw.Close(); err != nil {
			return fmt.Errorf("otlp: compress: %w", err)
		}
		body = b.Bytes()
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(e.stopped, cancel)()

	start := time.Now()
	wait := e.retry.initial
	for {
		retryAfter, err := e.send(ctx, body)
		if retryAfter < 0 || ctx.Err() != nil {
			return err
		}
		// As the official exporter's backoff: ±50 % jitter, ×1.5 per
		// attempt; no attempt once maxElapsed has passed or the server's
		// Retry-After would take it past.
		elapsed := time.Since(start)
		if elapsed+retryAfter > e.retry.maxElapsed {
			return fmt.Errorf("%w (gave up retrying after %s)", err, elapsed.Round(time.Millisecond))
		}
		t := time.NewTimer(max(wait/2+rand.N(wait+1), retryAfter))
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
		wait = min(wait+wait/2, e.retry.max)
	}
}

// send makes one attempt. retryAfter is negative when the outcome is final
// (success or an error not worth retrying), else the server's Retry-After
// (0 when it gave none).
func (e *otlpExporter) send(ctx context.Context, body []byte) (retryAfter time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.url, bytes.NewReader(body))
	if err != nil {
		return -1, fmt.Errorf("otlp: %w", err)
	}
	req.Header.Set("User-Agent", "agentik OTLP exporter")
	for k, v := range e.cfg.headers {
		req.Header[k] = v // the operator's User-Agent wins
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if e.cfg.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		err = fmt.Errorf("otlp: send to %s: %w", e.cfg.url, err)
		if ctx.Err() == nil && transient(err) {
			return 0, err
		}
		return -1, err
	}
	defer resp.Body.Close()
	var retry time.Duration = -1
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		retry = parseRetryAfter(resp.Header.Get("Retry-After"))
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, otlpMaxResponseBody+1))
	if err != nil {
		// The status is in: whether to retry was decided by it. A 2xx whose
		// body broke off is not sent again (its spans may be stored).
		return retry, fmt.Errorf("otlp: read the response of %s: %w", e.cfg.url, err)
	}
	if len(data) > otlpMaxResponseBody {
		return retry, fmt.Errorf("otlp: the response of %s is over %d bytes", e.cfg.url, otlpMaxResponseBody)
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		if resp.Header.Get("Content-Type") != "application/x-protobuf" {
			return -1, nil
		}
		rejected, msg, err := partialSuccess(data)
		if err != nil {
			return -1, fmt.Errorf("otlp: response of %s: %w", e.cfg.url, err)
		}
		if rejected != 0 || msg != "" {
			return -1, fmt.Errorf("otlp: %d spans rejected by %s: %s", rejected, e.cfg.url, msg)
		}
		return -1, nil
	}
	text := strings.TrimSpace(string(data[:min(len(data), otlpMaxErrorBody)]))
	return retry, fmt.Errorf("otlp: %s answered %s: %q", e.cfg.url, resp.Status, text)
}

// transient reports whether a failed attempt may succeed if made again: a
// connection refused, reset or closed early (a collector restarting), or a
// timeout. A certificate that does not verify, an https:// URL of a plain
// HTTP server and the like would fail again the same way.
func transient(err error) bool {
	var ne net.Error
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		(errors.As(err, &ne) && ne.Timeout())
}

// parseRetryAfter reads Retry-After as seconds or as an HTTP date; 0 when
// absent or unreadable.
func parseRetryAfter(s string) time.Duration {
	if s == "" {
		return 0
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 {
		return time.Duration(min(n, int64(24*time.Hour/time.Second))) * time.Second // past any retry budget
	}
	if t, err := http.ParseTime(s); err == nil {
		return max(0, time.Until(t))
	}
	return 0
}

// partialSuccess decodes ExportTraceServiceResponse.partial_success
// (field 1: rejected_spans = 1, error_message = 2).
func partialSuccess(b []byte) (rejected int64, msg string, err error) {
	errBad := errors.New("not an ExportTraceServiceResponse")
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || !num.IsValid() {
			return 0, "", errBad
		}
		b = b[n:]
		if num != 1 || typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return 0, "", errBad
			}
			b = b[n:]
			continue
		}
		ps, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return 0, "", errBad
		}
		b = b[n:]
		for len(ps) > 0 {
			num, typ, n := protowire.ConsumeTag(ps)
			if n < 0 || !num.IsValid() {
				return 0, "", errBad
			}
			ps = ps[n:]
			switch {
			case num == 1 && typ == protowire.VarintType:
				v, n := protowire.ConsumeVarint(ps)
				if n < 0 {
					return 0, "", errBad
				}
				rejected, ps = int64(v), ps[n:]
			case num == 2 && typ == protowire.BytesType:
				v, n := protowire.ConsumeBytes(ps)
				if n < 0 {
					return 0, "", errBad
				}
				msg, ps = string(v), ps[n:]
			default:
				if n = protowire.ConsumeFieldValue(num, typ, ps); n < 0 {
					return 0, "", errBad
				}
				ps = ps[n:]
			}
		}
	}
	return rejected, msg, nil
}

// Shutdown cancels the exports under way; later exports fail.
func (e *otlpExporter) Shutdown(context.Context) error {
	e.stop()
	e.client.CloseIdleConnections()
	return nil
}

// marshalTraces encodes an ExportTraceServiceRequest: its one field,
// resource_spans (1), repeated. The message type itself lives in the OTLP
// collector package, which imports gRPC.
func marshalTraces(spans []sdktrace.ReadOnlySpan) ([]byte, error) {
	var out []byte
	for _, rs := range resourceSpans(spans) {
		b, err := proto.Marshal(rs)
		if err != nil {
			return nil, err
		}
		out = protowire.AppendTag(out, 1, protowire.BytesType)
		out = protowire.AppendBytes(out, b)
	}
	return out, nil
}

// resourceSpans groups spans by resource, then by instrumentation scope, in
// the order they first appear.
func resourceSpans(spans []sdktrace.ReadOnlySpan) []*tracepb.ResourceSpans {
	type scopeKey struct {
		r attribute.Distinct
		s instrumentation.Scope
	}
	var out []*tracepb.ResourceSpans
	byResource := map[attribute.Distinct]*tracepb.ResourceSpans{}
	byScope := map[scopeKey]*tracepb.ScopeSpans{}
	for _, sd := range spans {
		if sd == nil {
			continue
		}
		rk := sd.Resource().Equivalent()
		rs := byResource[rk]
		if rs == nil {
			rs = &tracepb.ResourceSpans{SchemaUrl: sd.Resource().SchemaURL()}
			if sd.Resource() != nil {
				rs.Resource = &resourcepb.Resource{Attributes: keyValues(sd.Resource().Attributes())}
			}
			byResource[rk] = rs
			out = append(out, rs)
		}
		sk := scopeKey{rk, sd.InstrumentationScope()}
		ss := byScope[sk]
		if ss == nil {
			ss = &tracepb.ScopeSpans{Scope: scopeOf(sk.s), SchemaUrl: sk.s.SchemaURL, Spans: []*tracepb.Span{}}
			byScope[sk] = ss
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, spanOf(sd))
	}
	return out
}

func scopeOf(s instrumentation.Scope) *commonpb.InstrumentationScope {
	if s == (instrumentation.Scope{}) {
		return nil
	}
	return &commonpb.InstrumentationScope{Name: s.Name, Version: s.Version, Attributes: keyValues(s.Attributes.ToSlice())}
}

func spanOf(sd sdktrace.ReadOnlySpan) *tracepb.Span {
	sc := sd.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	st := sd.Status()
	s := &tracepb.Span{
		TraceId:                tid[:],
		SpanId:                 sid[:],
		TraceState:             sc.TraceState().String(),
		Name:                   sd.Name(),
		Kind:                   spanKind(sd.SpanKind()),
		StartTimeUnixNano:      unixNano(sd.StartTime()),
		EndTimeUnixNano:        unixNano(sd.EndTime()),
		Attributes:             keyValues(sd.Attributes()),
		DroppedAttributesCount: clamp32(sd.DroppedAttributes()),
		DroppedEventsCount:     clamp32(sd.DroppedEvents()),
		DroppedLinksCount:      clamp32(sd.DroppedLinks()),
		Status:                 &tracepb.Status{Code: statusCode(st.Code), Message: st.Description},
		Flags:                  spanFlags(sc.TraceFlags(), sd.Parent()),
	}
	if p := sd.Parent().SpanID(); p.IsValid() {
		s.ParentSpanId = p[:]
	}
	for _, ev := range sd.Events() {
		s.Events = append(s.Events, &tracepb.Span_Event{
			Name:                   ev.Name,
			TimeUnixNano:           unixNano(ev.Time),
			Attributes:             keyValues(ev.Attributes),
			DroppedAttributesCount: clamp32(ev.DroppedAttributeCount),
		})
	}
	for _, l := range sd.Links() {
		tid, sid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		s.Links = append(s.Links, &tracepb.Span_Link{
			TraceId:                tid[:],
			SpanId:                 sid[:],
			Attributes:             keyValues(l.Attributes),
			DroppedAttributesCount: clamp32(l.DroppedAttributeCount),
			Flags:                  spanFlags(l.SpanContext.TraceFlags(), l.SpanContext),
		})
	}
	return s
}

// spanFlags: the W3C trace flags, and whether the parent (or the linked
// span) is remote, with the bit saying that this is known.
func spanFlags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	f := uint32(tf) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
	if parent.IsRemote() {
		f |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
	}
	return f
}

// spanKind: trace.SpanKind's values are the protocol's (as its
// documentation says); any other value is unspecified.
func spanKind(k trace.SpanKind) tracepb.Span_SpanKind {
	if k < trace.SpanKindInternal || k > trace.SpanKindConsumer {
		return tracepb.Span_SPAN_KIND_UNSPECIFIED
	}
	return tracepb.Span_SpanKind(k)
}

func statusCode(c codes.Code) tracepb.Status_StatusCode {
	switch c {
	case codes.Ok:
		return tracepb.Status_STATUS_CODE_OK
	case codes.Error:
		return tracepb.Status_STATUS_CODE_ERROR
	}
	return tracepb.Status_STATUS_CODE_UNSET
}

func unixNano(t time.Time) uint64 { return uint64(max(0, t.UnixNano())) }

func clamp32(n int) uint32 { return uint32(min(max(n, 0), math.MaxUint32)) }

func keyValues(kvs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, len(kvs))
	for i, kv := range kvs {
		out[i] = &commonpb.KeyValue{Key: string(kv.Key), Value: anyValue(kv.Value)}
	}
	return out
}

func anyValue(v attribute.Value) *commonpb.AnyValue {
	av := &commonpb.AnyValue{}
	switch v.Type() {
	case attribute.BOOL:
		av.Value = &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}
	case attribute.INT64:
		av.Value = &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}
	case attribute.FLOAT64:
		av.Value = &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}
	case attribute.STRING:
		av.Value = &commonpb.AnyValue_StringValue{StringValue: v.AsString()}
	case attribute.BYTESLICE:
		av.Value = &commonpb.AnyValue_BytesValue{BytesValue: v.AsByteSlice()}
	case attribute.BOOLSLICE:
		av.Value = array(v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		av.Value = array(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		av.Value = array(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		av.Value = array(v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		av.Value = array(v.AsSlice(), func(v attribute.Value) attribute.Value { return v })
	case attribute.MAP:
		av.Value = &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: keyValues(v.AsMap())}}
	case attribute.EMPTY:
	default:
		av.Value = &commonpb.AnyValue_StringValue{StringValue: "INVALID"}
	}
	return av
}

func array[T any](vs []T, conv func(T) attribute.Value) *commonpb.AnyValue_ArrayValue {
	out := make([]*commonpb.AnyValue, len(vs))
	for i, v := range vs {
		out[i] = anyValue(conv(v))
	}
	return &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: out}}
}
