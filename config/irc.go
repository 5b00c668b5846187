package config

import (
	"net"
	"strconv"
	"strings"
	"time"
)

// IRCConfig configures the IRC facade (AGENTIK_IRC_ADDR turns it on).
type IRCConfig struct {
	// Addr is the TCP address the IRC server listens on (":6667"); empty:
	// no IRC server.
	Addr string // AGENTIK_IRC_ADDR
	// TLSCert and TLSKey (PEM files, both or neither) make the listener TLS.
	TLSCert string // AGENTIK_IRC_TLS_CERT
	TLSKey  string // AGENTIK_IRC_TLS_KEY
	// ServerName is the server's name in prefixes and numerics.
	ServerName string // AGENTIK_IRC_SERVER_NAME
	// HistoryLines: lines of history a client without draft/chathistory
	// gets on JOIN (0: none).
	HistoryLines int // AGENTIK_IRC_HISTORY_LINES
	// ChathistoryMax: the most messages one CHATHISTORY request returns.
	ChathistoryMax int // AGENTIK_IRC_CHATHISTORY_MAX
	// FloodBurst lines at once, then FloodRate per second (0: flood
	// control off).
	FloodBurst int // AGENTIK_IRC_FLOOD_BURST
	FloodRate  int // AGENTIK_IRC_FLOOD_RATE
	// SendQBytes bounds what is queued for one client; past it the client
	// is disconnected.
	SendQBytes int // AGENTIK_IRC_SENDQ_BYTES
	// Timing: PING after PingInterval of silence, disconnect PingTimeout
	// later; IdleTimeout (0: never) disconnects a client that sends nothing
	// but PING/PONG; WriteTimeout bounds each write to a client.
	PingInterval time.Duration // AGENTIK_IRC_PING_INTERVAL
	PingTimeout  time.Duration // AGENTIK_IRC_PING_TIMEOUT
	IdleTimeout  time.Duration // AGENTIK_IRC_IDLE_TIMEOUT
	WriteTimeout time.Duration // AGENTIK_IRC_WRITE_TIMEOUT
	MaxClients   int           // AGENTIK_IRC_MAX_CLIENTS
	// MaxUnregistered and MaxUnregisteredPerAddr bound the connections
	// that have not registered and logged in yet, in all and per remote
	// address (IPv4 address, IPv6 /64); one past either is refused.
	// RegistrationTimeout closes such a connection.
	MaxUnregistered        int           // AGENTIK_IRC_MAX_UNREGISTERED
	MaxUnregisteredPerAddr int           // AGENTIK_IRC_MAX_UNREGISTERED_PER_ADDR
	RegistrationTimeout    time.Duration // AGENTIK_IRC_REGISTRATION_TIMEOUT
	// IfBusy is the busy policy of messages sent while a turn runs.
	IfBusy string // AGENTIK_IRC_IF_BUSY
	// HTTPURL is the base URL IRC users reach this server's HTTP side at,
	// for image links ("https://agentik.example.com"); default
	// http://<host>:<port> of the HTTP listener.
	HTTPURL string // AGENTIK_IRC_HTTP_URL
}

// Defaults of IRCConfig.
const (
	DefaultIRCServerName     = "agentik"
	DefaultIRCHistoryLines   = 20
	DefaultIRCChathistoryMax = 100
	DefaultIRCFloodBurst     = 5
	DefaultIRCFloodRate      = 2
	DefaultIRCSendQBytes     = 128 << 10
	DefaultIRCPingInterval   = 90 * time.Second
	DefaultIRCPingTimeout    = 60 * time.Second
	DefaultIRCWriteTimeout   = 15 * time.Second
	DefaultIRCMaxClients     = 1000

	DefaultIRCMaxUnregistered        = 256
	DefaultIRCMaxUnregisteredPerAddr = 16
	DefaultIRCRegistrationTimeout    = 60 * time.Second
)

func (c *IRCConfig) read(r *reader) {
	*c = IRCConfig{
		ServerName:     DefaultIRCServerName,
		HistoryLines:   DefaultIRCHistoryLines,
		ChathistoryMax: DefaultIRCChathistoryMax,
		FloodBurst:     DefaultIRCFloodBurst,
		FloodRate:      DefaultIRCFloodRate,
		SendQBytes:     DefaultIRCSendQBytes,
		PingInterval:   DefaultIRCPingInterval,
		PingTimeout:    DefaultIRCPingTimeout,
		WriteTimeout:   DefaultIRCWriteTimeout,
		MaxClients:     DefaultIRCMaxClients,
		IfBusy:         "enqueue",

		MaxUnregistered:        DefaultIRCMaxUnregistered,
		MaxUnregisteredPerAddr: DefaultIRCMaxUnregisteredPerAddr,
		RegistrationTimeout:    DefaultIRCRegistrationTimeout,
	}
	r.str("AGENTIK_IRC_ADDR", &c.Addr)
	if c.Addr != "" {
		_, port, err := net.SplitHostPort(c.Addr)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 0 || n > 65535 {
			r.bad("AGENTIK_IRC_ADDR", c.Addr, "want host:port or :port, such as :6667")
		}
	}
	r.str("AGENTIK_IRC_TLS_CERT", &c.TLSCert)
	r.str("AGENTIK_IRC_TLS_KEY", &c.TLSKey)
	if (c.TLSCert == "") != (c.TLSKey == "") {
		r.bad("AGENTIK_IRC_TLS_CERT", "", "AGENTIK_IRC_TLS_CERT and AGENTIK_IRC_TLS_KEY go together")
	}
	r.str("AGENTIK_IRC_SERVER_NAME", &c.ServerName)
	if !validServerName(c.ServerName) {
		r.bad("AGENTIK_IRC_SERVER_NAME", c.ServerName, "want a host name: letters, digits, '-' and '.', at most 63 characters")
	}
	r.integer("AGENTIK_IRC_HISTORY_LINES", &c.HistoryLines, 0, 500)
	r.integer("AGENTIK_IRC_CHATHISTORY_MAX", &c.ChathistoryMax, 1, 500)
	r.integer("AGENTIK_IRC_FLOOD_BURST", &c.FloodBurst, 1, 1000)
	r.integer("AGENTIK_IRC_FLOOD_RATE", &c.FloodRate, 0, 1000)
	r.integer("AGENTIK_IRC_SENDQ_BYTES", &c.SendQBytes, 8192, 64<<20)
	r.duration("AGENTIK_IRC_PING_INTERVAL", &c.PingInterval)
	r.duration("AGENTIK_IRC_PING_TIMEOUT", &c.PingTimeout)
	r.duration("AGENTIK_IRC_WRITE_TIMEOUT", &c.WriteTimeout)
	if s := strings.TrimSpace(r.getenv("AGENTIK_IRC_IDLE_TIMEOUT")); s != "" && s != "0" {
		r.duration("AGENTIK_IRC_IDLE_TIMEOUT", &c.IdleTimeout)
	}
	r.integer("AGENTIK_IRC_MAX_CLIENTS", &c.MaxClients, 1, 1_000_000)
	r.integer("AGENTIK_IRC_MAX_UNREGISTERED", &c.MaxUnregistered, 1, 1_000_000)
	r.integer("AGENTIK_IRC_MAX_UNREGISTERED_PER_ADDR", &c.MaxUnregisteredPerAddr, 1, 1_000_000)
	r.duration("AGENTIK_IRC_REGISTRATION_TIMEOUT", &c.RegistrationTimeout)
	r.busy("AGENTIK_IRC_IF_BUSY", &c.IfBusy)
	r.str("AGENTIK_IRC_HTTP_URL", &c.HTTPURL)
	if c.HTTPURL != "" && !httpURL(c.HTTPURL) {
		r.bad("AGENTIK_IRC_HTTP_URL", c.HTTPURL, "want an absolute http:// or https:// URL")
	}
}

func validServerName(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
