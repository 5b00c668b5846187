// Package telemetry is the one place that knows Prometheus (and, later,
// OpenTelemetry). The engine reports through agentik.Observer; the HTTP
// edge through an observe function; this package turns both into series.
package telemetry

import (
	"net/http"
	"strconv"
	"time"

	"github.com/agentik/agentik"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// LatencyBuckets are the histogram buckets of model and turn latencies,
// in seconds: 10 ms to 2 min.
var LatencyBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120}

// toolBuckets are the buckets of tool calls (1 ms to the 60 s default timeout and beyond).
var toolBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}

// commitBuckets are the buckets of store commits, in seconds: 100 µs (a
// SQLite commit on a quiet disk) to 5 s (a PostgreSQL that stalls).
var commitBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}

// Metrics is the Prometheus registry of one process and the series on it.
// It implements agentik.Observer. Safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	turns        *prometheus.CounterVec
	turnDuration *prometheus.HistogramVec
	firstToken   *prometheus.HistogramVec
	running      *prometheus.GaugeVec
	modelCalls   *prometheus.CounterVec
	modelDur     *prometheus.HistogramVec
	tokens       *prometheus.CounterVec
	toolCalls    *prometheus.CounterVec
	toolDur      *prometheus.HistogramVec
	httpReqs     *prometheus.CounterVec
	httpDur      *prometheus.HistogramVec
	subscribers  *prometheus.GaugeVec
	commitDur    *prometheus.HistogramVec
}

var _ agentik.Observer = (*Metrics)(nil)

// NewMetrics returns the series on a fresh registry, with the Go runtime
// and process collectors.
func NewMetrics() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg: reg,
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentik_turns_total",
			Help: "Turns ended, by agent and outcome (completed, interrupted, error, client_tools, lease_lost)."}, []string{"agent", "outcome"}),
		turnDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentik_turn_duration_seconds",
			Help: "Duration of a turn, from its start to its end.", Buckets: LatencyBuckets}, []string{"agent"}),
		firstToken: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentik_time_to_first_token_seconds",
			Help: "Time from the start of a turn to the first streamed piece of the answer.", Buckets: LatencyBuckets}, []string{"agent"}),
		running: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "agentik_turns_running",
			Help: "Turns running in this process."}, []string{"agent"}),
		modelCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentik_model_calls_total",
			Help: "Model calls, by agent, model and outcome (ok, error, timeout, context_overflow, interrupted)."}, []string{"agent", "model", "outcome"}),
		modelDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentik_model_call_duration_seconds",
			Help: "Duration of a model call.", Buckets: LatencyBuckets}, []string{"agent", "model"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentik_model_tokens_total",
			Help: "Tokens used by model calls, by type (input, output)."}, []string{"agent", "model", "type"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentik_tool_calls_total",
			Help: "Server-side tool calls, by agent, tool and outcome (ok, error)."}, []string{"agent", "tool", "outcome"}),
		toolDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentik_tool_call_duration_seconds",
			Help: "Duration of a tool call.", Buckets: toolBuckets}, []string{"agent", "tool"}),
		httpReqs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentik_http_requests_total",
			Help: "HTTP requests, by method, route pattern and status."}, []string{"method", "route", "status"}),
		httpDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentik_http_request_duration_seconds",
			Help: "Duration of an HTTP request (for streams: until the stream ends).", Buckets: LatencyBuckets}, []string{"route"}),
		subscribers: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "agentik_subscribers",
			Help: "Event streams this process serves, by agent and facade (sse, agui, a2a, ws, mcp, irc, other)."}, []string{"agent", "facade"}),
		commitDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentik_store_commit_duration_seconds",
			Help: "Duration of a store commit (a turn's journal, events and memory), waiting for the writer included.", Buckets: commitBuckets}, []string{"agent"}),
	}
	reg.MustRegister(m.turns, m.turnDuration, m.firstToken, m.running, m.modelCalls, m.modelDur, m.tokens,
		m.toolCalls, m.toolDur, m.httpReqs, m.httpDur, m.subscribers, m.commitDur,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry returns the registry, for collectors of other parts (GaugeFunc).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// GaugeFunc registers a gauge whose value f gives at each scrape.
func (m *Metrics) GaugeFunc(name, help string, f func() float64) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
}

// Sample is one series of a collected family: its label values, in the
// family's label order, and its value.
type Sample struct {
	Labels []string
	Value  float64
}

// GaugeVecFunc registers a gauge family with labels whose series f gives
// at each scrape (f must be safe for concurrent use, and its label values
// bounded).
func (m *Metrics) GaugeVecFunc(name, help string, labels []string, f func() []Sample) {
	m.reg.MustRegister(&funcCollector{desc: prometheus.NewDesc(name, help, labels, nil), kind: prometheus.GaugeValue, f: f})
}

// CounterVecFunc is GaugeVecFunc for a counter family (f's values only grow).
func (m *Metrics) CounterVecFunc(name, help string, labels []string, f func() []Sample) {
	m.reg.MustRegister(&funcCollector{desc: prometheus.NewDesc(name, help, labels, nil), kind: prometheus.CounterValue, f: f})
}

type funcCollector struct {
	desc *prometheus.Desc
	kind prometheus.ValueType
	f    func() []Sample
}

func (c *funcCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *funcCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.f() {
		ch <- prometheus.MustNewConstMetric(c.desc, c.kind, s.Value, s.Labels...)
	}
}

// CommitObserver returns what times the store commits of agent: one
// histogram child, resolved once, so that a commit costs one Observe.
func (m *Metrics) CommitObserver(agent string) func(time.Duration) {
	h := m.commitDur.WithLabelValues(agent)
	return func(d time.Duration) { h.Observe(d.Seconds()) }
}

func (m *Metrics) Subscribers(agent, facade string, delta int) {
	m.subscribers.WithLabelValues(agent, facade).Add(float64(delta))
}

func (m *Metrics) TurnStarted(agent string) { m.running.WithLabelValues(agent).Inc() }

func (m *Metrics) TurnEnded(agent, outcome string, d time.Duration) {
	m.running.WithLabelValues(agent).Dec()
	m.turns.WithLabelValues(agent, outcome).Inc()
	m.turnDuration.WithLabelValues(agent).Observe(d.Seconds())
}

func (m *Metrics) FirstToken(agent string, d time.Duration) {
	m.firstToken.WithLabelValues(agent).Observe(d.Seconds())
}

func (m *Metrics) ModelCall(agent, model, outcome string, d time.Duration, tok agentik.TurnTokens) {
	m.modelCalls.WithLabelValues(agent, model, outcome).Inc()
	m.modelDur.WithLabelValues(agent, model).Observe(d.Seconds())
	if tok.Input > 0 {
		m.tokens.WithLabelValues(agent, model, "input").Add(float64(tok.Input))
	}
	if tok.Output > 0 {
		m.tokens.WithLabelValues(agent, model, "output").Add(float64(tok.Output))
	}
}

func (m *Metrics) ToolCall(agent, tool, outcome string, d time.Duration) {
	m.toolCalls.WithLabelValues(agent, tool, outcome).Inc()
	m.toolDur.WithLabelValues(agent, tool).Observe(d.Seconds())
}

// HTTPRequest counts one request. route is the ServeMux pattern that
// matched ("" for none: counted as "unmatched", so a scan of random paths
// adds no series).
func (m *Metrics) HTTPRequest(method, route string, status int, d time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
	default:
		method = "other"
	}
	m.httpReqs.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	m.httpDur.WithLabelValues(route).Observe(d.Seconds())
}
