package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// WSConfig configures the WebSocket chat facade (GET /agentik/ws).
type WSConfig struct {
	// IdleTimeout: a connection with no client message and no running turn
	// for this long gets GRACEFUL_DISCONNECT and a normal close.
	IdleTimeout time.Duration // AGENTIK_WS_IDLE_TIMEOUT
	// MaxMessageBytes: a client message larger than this is answered with
	// ERROR too_large and dropped; the connection stays open.
	MaxMessageBytes int64 // AGENTIK_WS_MAX_MESSAGE_BYTES
	// PingInterval: how often the server pings; PingTimeout: how long it
	// waits for the pong before it takes the peer for dead and drops it.
	PingInterval time.Duration // AGENTIK_WS_PING_INTERVAL
	PingTimeout  time.Duration // AGENTIK_WS_PING_TIMEOUT
	// WriteTimeout bounds each frame written to a client.
	WriteTimeout time.Duration // AGENTIK_WS_WRITE_TIMEOUT
	// IfBusy is the busy policy of messages that do not name one.
	IfBusy string // AGENTIK_WS_IF_BUSY: enqueue, interrupt, reject
	// Origins are host patterns ("app.example.com", "*.example.com") allowed
	// to connect cross-origin from a browser; same-origin always is.
	Origins []string // AGENTIK_WS_ORIGINS
	// MaxConnections bounds the open connections of one principal; 0 =
	// unlimited.
	MaxConnections int // AGENTIK_WS_MAX_CONNECTIONS
}

// Defaults of WSConfig.
const (
	DefaultWSIdleTimeout     = 10 * time.Minute
	DefaultWSMaxMessageBytes = 1 << 20
	DefaultWSPingInterval    = 30 * time.Second
	DefaultWSPingTimeout     = 15 * time.Second
	DefaultWSWriteTimeout    = 10 * time.Second
	DefaultWSMaxConnections  = 16
)

func (c *WSConfig) read(r *reader) {
	*c = WSConfig{
		IdleTimeout:     DefaultWSIdleTimeout,
		MaxMessageBytes: DefaultWSMaxMessageBytes,
		PingInterval:    DefaultWSPingInterval,
		PingTimeout:     DefaultWSPingTimeout,
		WriteTimeout:    DefaultWSWriteTimeout,
		IfBusy:          "enqueue",
		MaxConnections:  DefaultWSMaxConnections,
	}
	r.integer("AGENTIK_WS_MAX_CONNECTIONS", &c.MaxConnections, 0, 1_000_000)
	r.duration("AGENTIK_WS_IDLE_TIMEOUT", &c.IdleTimeout)
	r.duration("AGENTIK_WS_PING_INTERVAL", &c.PingInterval)
	r.duration("AGENTIK_WS_PING_TIMEOUT", &c.PingTimeout)
	r.duration("AGENTIK_WS_WRITE_TIMEOUT", &c.WriteTimeout)
	if s := r.getenv("AGENTIK_WS_MAX_MESSAGE_BYTES"); s != "" {
		const lo, hi = 256, 64 << 20
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || n < lo || n > hi {
			r.bad("AGENTIK_WS_MAX_MESSAGE_BYTES", s, fmt.Sprintf("want an integer from %d to %d", lo, hi))
		} else {
			c.MaxMessageBytes = n
		}
	}
	r.busy("AGENTIK_WS_IF_BUSY", &c.IfBusy)
	r.list("AGENTIK_WS_ORIGINS", &c.Origins)
}
