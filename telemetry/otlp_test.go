package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// receiver is an OTLP/HTTP endpoint that records each request and answers
// with the next of its scripted responses (200 once they run out).
type receiver struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests []recorded
	script   []func(w http.ResponseWriter)
}

type recorded struct {
	path   string
	header http.Header
	body   []byte // as sent (compressed when it was)
}

func newReceiver(t *testing.T, script ...func(w http.ResponseWriter)) *receiver {
	rc := &receiver{script: script}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.requests = append(rc.requests, recorded{path: r.URL.Path, header: r.Header.Clone(), body: body})
	var answer func(http.ResponseWriter)
	if len(rc.script) > 0 {
		answer, rc.script = rc.script[0], rc.script[1:]
	}
	rc.mu.Unlock()
	if answer != nil {
		answer(w)
	}
}

func (rc *receiver) got() []recorded {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]recorded(nil), rc.requests...)
}

// decode returns the request's ExportTraceServiceRequest, decoded with the
// official generated type.
func decode(t *testing.T, r recorded) *coltracepb.ExportTraceServiceRequest {
	t.Helper()
	body := r.body
	if r.header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		t.Fatalf("not an ExportTraceServiceRequest: %v", err)
	}
	return &req
}

// sampleSpans ends spans that use every part of the data model: every
// attribute type, events, links, a remote parent with a trace state, an
// error status, every kind, two scopes and a resource.
func sampleSpans(t *testing.T) []sdktrace.ReadOnlySpan {
	rec := tracetest.NewSpanRecorder()
	res := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.41.0",
		attribute.String("service.name", "agentik"), attribute.Int("pid", 42))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(res))
	defer tp.Shutdown(context.Background())

	ts, err := trace.ParseTraceState("vendor=abc,other=1")
	if err != nil {
		t.Fatal(err)
	}
	remote := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6},
		TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true,
	})
	linked := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{7}, SpanID: trace.SpanID{8}, TraceFlags: trace.FlagsSampled,
	})
	a := tp.Tracer("github.com/agentik/agentik", trace.WithInstrumentationVersion("1.2.3"),
		trace.WithSchemaURL("https://opentelemetry.io/schemas/1.41.0"),
		trace.WithInstrumentationAttributes(attribute.String("scope.attr", "x")))
	b := tp.Tracer("other")

	ctx := trace.ContextWithRemoteSpanContext(context.Background(), remote)
	ctx, root := a.Start(ctx, "invoke_agent", trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithLinks(trace.Link{SpanContext: linked, Attributes: []attribute.KeyValue{attribute.String("agentik.link", "request")}}),
		trace.WithAttributes(
			attribute.Bool("b", true), attribute.Int64("i", -7), attribute.Float64("f", 2.5),
			attribute.String("s", "ünïcode"), attribute.BoolSlice("bs", []bool{true, false}),
			attribute.Int64Slice("is", []int64{1, 2}), attribute.Float64Slice("fs", []float64{0.5}),
			attribute.StringSlice("ss", []string{"a", ""}), attribute.ByteSlice("bytes", []byte{0, 1, 255}),
			attribute.Slice("mixed", attribute.IntValue(1), attribute.StringValue("two")),
			attribute.Map("m", attribute.String("k", "v"), attribute.Bool("ok", false)),
		))
	_, chat := a.Start(ctx, "chat gpt", trace.WithSpanKind(trace.SpanKindClient))
	chat.AddEvent("gen_ai.client.inference.operation.details", trace.WithAttributes(attribute.Int("n", 3)))
	chat.SetStatus(codes.Error, "model said 500")
	chat.End()
	for _, k := range []trace.SpanKind{trace.SpanKindServer, trace.SpanKindProducer, trace.SpanKindConsumer} {
		_, s := b.Start(ctx, k.String(), trace.WithSpanKind(k))
		s.SetStatus(codes.Ok, "")
		s.End()
	}
	root.End()
	spans := rec.Ended()
	if len(spans) != 5 {
		t.Fatalf("%d spans ended, want 5", len(spans))
	}
	return spans
}

// oddSpans are spans the SDK's own tracer would not make: no resource, no
// scope, dropped counts, a link with a trace state, empty values, times
// before 1970, and a second resource.
func oddSpans(t *testing.T) []sdktrace.ReadOnlySpan {
	ts, err := trace.ParseTraceState("k=v")
	if err != nil {
		t.Fatal(err)
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{10}, TraceState: ts})
	other := resource.NewSchemaless(attribute.String("service.name", "other"))
	return tracetest.SpanStubs{
		{
			Name: "bare", SpanContext: sc, StartTime: time.Unix(-5, 0), EndTime: time.Unix(0, 1),
			Attributes:        []attribute.KeyValue{attribute.String("empty", ""), {Key: "zero"}, attribute.StringSlice("none", nil)},
			Events:            []sdktrace.Event{{Name: "e", DroppedAttributeCount: 2}},
			Links:             []sdktrace.Link{{SpanContext: sc, DroppedAttributeCount: 1}},
			DroppedAttributes: 3, DroppedEvents: 4, DroppedLinks: 5,
		},
		{Name: "elsewhere", SpanContext: sc, Resource: other},
		{Name: "elsewhere too", SpanContext: sc, Resource: other},
	}.Snapshots()
}

// byResource orders a request's resource spans, which the official
// exporter emits in map order.
func byResource(req *coltracepb.ExportTraceServiceRequest) {
	key := func(i int) string {
		b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(req.ResourceSpans[i].GetResource())
		return string(b)
	}
	sort.SliceStable(req.ResourceSpans, func(i, j int) bool { return key(i) < key(j) })
}

// TestExporterMatchesOfficial sends the same spans through otlptracehttp
// and through this exporter: the receiver decodes the same message.
func TestExporterMatchesOfficial(t *testing.T) {
	spans := append(sampleSpans(t), oddSpans(t)...)
	for _, compression := range []string{"none", "gzip"} {
		t.Run(compression, func(t *testing.T) {
			rc := newReceiver(t)
			ctx := context.Background()
			opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(rc.srv.URL + "/v1/traces"),
				otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false})}
			if compression == "gzip" {
				opts = append(opts, otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
			}
			official, err := otlptracehttp.New(ctx, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if err := official.ExportSpans(ctx, spans); err != nil {
				t.Fatal(err)
			}
			official.Shutdown(ctx)

			cfg, err := otlpConfigFrom(env(map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT":    rc.srv.URL,
				"OTEL_EXPORTER_OTLP_COMPRESSION": compression,
			}), os.ReadFile)
			if err != nil {
				t.Fatal(err)
			}
			ours := newOTLPExporter(cfg)
			defer ours.Shutdown(ctx)
			if err := ours.ExportSpans(ctx, spans); err != nil {
				t.Fatal(err)
			}

			got := rc.got()
			if len(got) != 2 {
				t.Fatalf("%d requests, want 2", len(got))
			}
			want, have := decode(t, got[0]), decode(t, got[1])
			byResource(want)
			byResource(have)
			if !proto.Equal(want, have) {
				t.Errorf("the requests differ:\nofficial: %v\nours:     %v", want, have)
			}
			if n := len(have.ResourceSpans); n != 3 {
				t.Errorf("resource spans %d, want 3 (the SDK's, none, another)", n)
			}
			for _, h := range []string{"Content-Type", "Content-Encoding"} {
				if w, g := got[0].header.Get(h), got[1].header.Get(h); w != g {
					t.Errorf("%s: official %q, ours %q", h, w, g)
				}
			}
			if got[0].path != got[1].path {
				t.Errorf("path: official %q, ours %q", got[0].path, got[1].path)
			}
		})
	}
}

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestOTLPConfig(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		env     map[string]string
		url     string
		headers http.Header
		timeout time.Duration
		gzip    bool
		err     string // the variable the error names
	}{
		{name: "base URL", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"},
			url: "http://collector:4318/v1/traces"},
		{name: "base URL with a path", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://h/otlp/"},
			url: "https://h/otlp/v1/traces"},
		{name: "per-signal URL as it is", env: map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT":        "http://ignored:1",
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://h:4318/custom/path"},
			url: "https://h:4318/custom/path"},
		{name: "no user, password or query", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://u:s3cret@h:4318/p?key=s3cret#f"},
			url: "https://h:4318/p/v1/traces"},
		{name: "per-signal URL without a path", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://h:4318"},
			url: "http://h:4318/"},
		{name: "headers, timeout, gzip; per-signal wins", env: map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT":           "http://h",
			"OTEL_EXPORTER_OTLP_HEADERS":            "x-ignored=1",
			"OTEL_EXPORTER_OTLP_TRACES_HEADERS":     " Authorization=Bearer%20s3cret , x-tenant=a=b",
			"OTEL_EXPORTER_OTLP_TIMEOUT":            "2500",
			"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "gzip",
			"OTEL_EXPORTER_OTLP_PROTOCOL":           "http/protobuf"},
			url: "http://h/v1/traces", headers: http.Header{"Authorization": {"Bearer s3cret"}, "X-Tenant": {"a=b"}},
			timeout: 2500 * time.Millisecond, gzip: true},
		{name: "no timeout", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_EXPORTER_OTLP_TIMEOUT": "0"},
			url: "http://h/v1/traces", timeout: -1},
		{name: "a client certificate of one prefix, its key of the other", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://h",
			"OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE": garbage, "OTEL_EXPORTER_OTLP_CLIENT_KEY": garbage},
			err: "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE"},
		{name: "no scheme", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"},
			err: "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{name: "grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"},
			err: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
		{name: "a header without =", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_EXPORTER_OTLP_HEADERS": "Authorization: s3cret"},
			err: "OTEL_EXPORTER_OTLP_HEADERS"},
		{name: "a header name that is no token", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_EXPORTER_OTLP_HEADERS": "a b=s3cret"},
			err: "OTEL_EXPORTER_OTLP_HEADERS"},
		{name: "a bad escape", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_EXPORTER_OTLP_HEADERS": "a=s3cret%zz"},
			err: "OTEL_EXPORTER_OTLP_HEADERS"},
		{name: "timeout", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_EXPORTER_OTLP_TIMEOUT": "10s"},
			err: "OTEL_EXPORTER_OTLP_TIMEOUT"},
		{name: "compression", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"},
			err: "OTEL_EXPORTER_OTLP_COMPRESSION"},
		{name: "no certificate file", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://h", "OTEL_EXPORTER_OTLP_CERTIFICATE": filepath.Join(dir, "missing.pem")},
			err: "OTEL_EXPORTER_OTLP_CERTIFICATE"},
		{name: "no certificate in the file", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://h", "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": garbage},
			err: "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE"},
		{name: "a client certificate without its key", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://h", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": garbage},
			err: "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := otlpConfigFrom(env(tc.env), os.ReadFile)
			if tc.err != "" {
				if err == nil {
					t.Fatalf("no error, want one naming %s", tc.err)
				}
				if !strings.HasPrefix(err.Error(), tc.err+":") || strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("error %q: want it to name %s and not the value", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.url != tc.url {
				t.Errorf("url %q, want %q", cfg.url, tc.url)
			}
			if tc.headers == nil {
				tc.headers = http.Header{}
			}
			if len(cfg.headers) != len(tc.headers) {
				t.Errorf("headers %v, want %v", cfg.headers, tc.headers)
			}
			for k := range tc.headers {
				if cfg.headers.Get(k) != tc.headers.Get(k) {
					t.Errorf("header %s = %q, want %q", k, cfg.headers.Get(k), tc.headers.Get(k))
				}
			}
			switch tc.timeout {
			case 0:
				tc.timeout = otlpDefaultTimeout
			case -1:
				tc.timeout = 0 // none
			}
			if cfg.timeout != tc.timeout || cfg.gzip != tc.gzip {
				t.Errorf("timeout %s gzip %v, want %s %v", cfg.timeout, cfg.gzip, tc.timeout, tc.gzip)
			}
		})
	}
}

// exporterFor returns an exporter to rc with retries of a millisecond.
func exporterFor(t *testing.T, url string, extra map[string]string) *otlpExporter {
	t.Helper()
	m := map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": url}
	for k, v := range extra {
		m[k] = v
	}
	cfg, err := otlpConfigFrom(env(m), os.ReadFile)
	if err != nil {
		t.Fatal(err)
	}
	e := newOTLPExporter(cfg)
	e.retry = otlpRetry{initial: time.Millisecond, max: 2 * time.Millisecond, maxElapsed: time.Minute}
	t.Cleanup(func() { e.Shutdown(context.Background()) })
	return e
}

func status(code int, header ...string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
		io.WriteString(w, "collector says no")
	}
}

func TestOTLPRetries(t *testing.T) {
	spans := sampleSpans(t)[:1]
	ctx := context.Background()

	t.Run("429, 502, 503 and 504 are retried; headers go with every attempt", func(t *testing.T) {
		rc := newReceiver(t, status(429, "Retry-After", "0"), status(502), status(503), status(504))
		e := exporterFor(t, rc.srv.URL+"/v1/traces", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=k,User-Agent=probe/1,"})
		if err := e.ExportSpans(ctx, spans); err != nil {
			t.Fatal(err)
		}
		got := rc.got()
		if len(got) != 5 {
			t.Fatalf("%d attempts, want 5", len(got))
		}
		for _, r := range got {
			if !bytes.Equal(r.body, got[0].body) || r.header.Get("X-Api-Key") != "k" || r.path != "/v1/traces" ||
				r.header.Get("User-Agent") != "probe/1" {
				t.Fatalf("an attempt differs: path %s, key %q, user agent %q", r.path, r.header.Get("X-Api-Key"), r.header.Get("User-Agent"))
			}
		}
		if n := len(decode(t, got[4]).ResourceSpans[0].ScopeSpans[0].Spans); n != 1 {
			t.Errorf("%d spans, want 1", n)
		}
	})

	t.Run("400 is final", func(t *testing.T) {
		rc := newReceiver(t, status(400))
		err := exporterFor(t, rc.srv.URL, nil).ExportSpans(ctx, spans)
		if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "collector says no") {
			t.Fatalf("error %v, want the 400 and its body", err)
		}
		if n := len(rc.got()); n != 1 {
			t.Errorf("%d attempts, want 1", n)
		}
	})

	t.Run("retries stop after maxElapsed", func(t *testing.T) {
		var script []func(http.ResponseWriter)
		for range 100 {
			script = append(script, status(503))
		}
		rc := newReceiver(t, script...)
		e := exporterFor(t, rc.srv.URL, nil)
		e.retry = otlpRetry{initial: time.Millisecond, max: time.Millisecond, maxElapsed: 0}
		err := e.ExportSpans(ctx, spans)
		if err == nil || !strings.Contains(err.Error(), "gave up") {
			t.Fatalf("error %v, want it to give up", err)
		}
		if n := len(rc.got()); n != 1 {
			t.Errorf("%d attempts, want 1 (no time left for another)", n)
		}
	})

	t.Run("a Retry-After past the time left ends the retries", func(t *testing.T) {
		for _, after := range []string{"3600", "9223372037", "18446744074"} {
			rc := newReceiver(t, status(503, "Retry-After", after), status(200))
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second) // bounds a wait that should not start
			err := exporterFor(t, rc.srv.URL, nil).ExportSpans(ctx, spans)
			cancel()
			if err == nil || !strings.Contains(err.Error(), "gave up") || len(rc.got()) != 1 {
				t.Errorf("Retry-After %s: %v after %d attempts, want to give up after 1", after, err, len(rc.got()))
			}
		}
	})

	t.Run("a 200 whose body breaks off is not sent again", func(t *testing.T) {
		rc := newReceiver(t, func(w http.ResponseWriter) {
			c, buf, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 100\r\n\r\nabc")
			buf.Flush()
			c.Close()
		})
		err := exporterFor(t, rc.srv.URL, nil).ExportSpans(ctx, spans)
		if err == nil || len(rc.got()) != 1 {
			t.Errorf("%v after %d attempts, want an error after 1", err, len(rc.got()))
		}
	})

	t.Run("an https URL of a plain HTTP server is not retried", func(t *testing.T) {
		var mu sync.Mutex
		conns := 0
		srv := httptest.NewUnstartedServer(http.NotFoundHandler())
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				mu.Lock()
				conns++
				mu.Unlock()
			}
		}
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		srv.Start()
		defer srv.Close()
		e := exporterFor(t, "https://"+srv.Listener.Addr().String(), nil)
		e.retry = otlpRetry{initial: time.Millisecond, max: time.Millisecond, maxElapsed: 100 * time.Millisecond} // room for retries, were there any
		if err := e.ExportSpans(ctx, spans); err == nil {
			t.Fatal("exported over TLS to a plain HTTP server")
		}
		mu.Lock()
		defer mu.Unlock()
		if conns != 1 {
			t.Errorf("%d connections, want 1", conns)
		}
	})

	t.Run("a connection closed without an answer is retried", func(t *testing.T) {
		rc := newReceiver(t, func(w http.ResponseWriter) {
			c, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				c.Close()
			}
		})
		if err := exporterFor(t, rc.srv.URL, nil).ExportSpans(ctx, spans); err != nil {
			t.Fatal(err)
		}
		if n := len(rc.got()); n != 2 {
			t.Errorf("%d attempts, want 2", n)
		}
	})

	t.Run("partial success is reported", func(t *testing.T) {
		resp, err := proto.Marshal(&coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{
			RejectedSpans: 3, ErrorMessage: "too old"}})
		if err != nil {
			t.Fatal(err)
		}
		rc := newReceiver(t, func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/x-protobuf")
			w.Write(resp)
		}, func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/x-protobuf")
			w.Write([]byte{0x0a, 0x05}) // truncated
		})
		e := exporterFor(t, rc.srv.URL, nil)
		if err := e.ExportSpans(ctx, spans); err == nil || !strings.Contains(err.Error(), "3 spans rejected") || !strings.Contains(err.Error(), "too old") {
			t.Errorf("error %v, want the partial success", err)
		}
		if err := e.ExportSpans(ctx, spans); err == nil || !strings.Contains(err.Error(), "not an ExportTraceServiceResponse") {
			t.Errorf("error %v, want the response refused", err)
		}
		if err := e.ExportSpans(ctx, spans); err != nil {
			t.Errorf("an empty 200: %v", err)
		}
	})

	t.Run("an answer over 4 MiB is refused, not retried", func(t *testing.T) {
		rc := newReceiver(t, func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/x-protobuf")
			w.Write(make([]byte, otlpMaxResponseBody+1))
		})
		err := exporterFor(t, rc.srv.URL, nil).ExportSpans(ctx, spans)
		if err == nil || !strings.Contains(err.Error(), "over") || len(rc.got()) != 1 {
			t.Errorf("%v after %d attempts, want the answer refused after 1", err, len(rc.got()))
		}
	})
}

// TestOTLPShutdownCancels: Shutdown ends an export that waits for its
// collector, and later exports fail at once.
func TestOTLPShutdownCancels(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
	}))
	defer srv.Close()
	defer close(release)
	e := exporterFor(t, srv.URL, nil)
	done := make(chan error, 1)
	spans := sampleSpans(t)
	go func() { done <- e.ExportSpans(context.Background(), spans) }()
	<-arrived
	e.Shutdown(context.Background())
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("export under way: %v, want it cancelled", err)
	}
	if err := e.ExportSpans(context.Background(), spans); err == nil {
		t.Error("an export after Shutdown succeeded")
	}
}

// TestOTLPTLS: OTEL_EXPORTER_OTLP_CERTIFICATE verifies the collector, and
// OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE/_KEY identify the exporter; a
// certificate that does not verify is not retried.
func TestOTLPTLS(t *testing.T) {
	dir := t.TempDir()
	var clientCerts []int
	var conns int
	var mu sync.Mutex
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		clientCerts = append(clientCerts, len(r.TLS.PeerCertificates))
		mu.Unlock()
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			conns++
			mu.Unlock()
		}
	}
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert} // asked for, not required
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)         // the failed handshake below
	srv.StartTLS()
	defer srv.Close()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := selfSigned(t, dir)
	spans := sampleSpans(t)[:1]
	ctx := context.Background()

	// Without the collector's CA the handshake fails, once.
	e := exporterFor(t, srv.URL, nil)
	e.retry = otlpRetry{initial: time.Millisecond, max: time.Millisecond, maxElapsed: 100 * time.Millisecond} // room for retries, were there any
	if err := e.ExportSpans(ctx, spans); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("error %v, want a certificate error", err)
	}
	mu.Lock()
	if conns != 1 {
		t.Errorf("%d connections, want 1: a certificate error is final", conns)
	}
	mu.Unlock()

	e = exporterFor(t, srv.URL, map[string]string{
		"OTEL_EXPORTER_OTLP_CERTIFICATE":               ca,
		"OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE": certFile,
		"OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY":         keyFile,
	})
	if err := e.ExportSpans(ctx, spans); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(clientCerts) != 1 || clientCerts[0] != 1 {
		t.Errorf("client certificates per request %v, want [1]", clientCerts)
	}
}

// selfSigned writes a self-signed client certificate and its key.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "agentik"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// FuzzPartialSuccess: the hand-written decoder of the collector's answer
// never panics, and reads what proto.Unmarshal reads whenever that accepts
// the bytes (it also validates UTF-8, which the decoder does not need).
func FuzzPartialSuccess(f *testing.F) {
	for _, m := range []*coltracepb.ExportTraceServiceResponse{
		{},
		{PartialSuccess: &coltracepb.ExportTracePartialSuccess{}},
		{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 3, ErrorMessage: "too old"}},
		{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: -1}},
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0x0a, 0x05})                   // truncated
	f.Add([]byte{0x0a, 0x02, 0x08, 0x01, 0x10}) // unknown field in a message
	f.Fuzz(func(t *testing.T, b []byte) {
		rejected, msg, err := partialSuccess(b)
		var want coltracepb.ExportTraceServiceResponse
		if proto.Unmarshal(b, &want) != nil {
			return
		}
		if err != nil {
			t.Fatalf("refused what proto.Unmarshal accepts: %v", err)
		}
		if rejected != want.GetPartialSuccess().GetRejectedSpans() || msg != want.GetPartialSuccess().GetErrorMessage() {
			t.Fatalf("read %d %q, proto.Unmarshal %d %q", rejected, msg,
				want.GetPartialSuccess().GetRejectedSpans(), want.GetPartialSuccess().GetErrorMessage())
		}
	})
}
