package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/agentik/agentik/irc"
)

// buildIRC is the IRC door of every agent, on AGENTIK_IRC_ADDR: it listens
// now (a clash fails start-up) and serves once the engines have started. On
// shutdown it stops accepting and refuses new messages while running turns
// drain (their answers still reach the clients); at close every client gets
// "ERROR :Closing link".
func buildIRC(a *app) (*door, error) {
	cfg := a.cfg.IRC
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("AGENTIK_IRC_ADDR: %w", err)
	}
	if cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("AGENTIK_IRC_TLS_CERT/AGENTIK_IRC_TLS_KEY: %w", err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	}
	opts := irc.Options{
		// Every agent of the process is a nick; a principal limited to some
		// agents sees only those.
		Agents:         ircAgents(a.agents),
		MayUse:         a.edge.Allows,
		ServerName:     cfg.ServerName,
		Version:        versionString(),
		HistoryLines:   cfg.HistoryLines,
		ChathistoryMax: cfg.ChathistoryMax,
		FloodBurst:     cfg.FloodBurst,
		FloodRate:      float64(cfg.FloodRate),
		SendQBytes:     cfg.SendQBytes,
		PingInterval:   cfg.PingInterval,
		PingTimeout:    cfg.PingTimeout,
		IdleTimeout:    cfg.IdleTimeout,
		WriteTimeout:   cfg.WriteTimeout,
		MaxClients:     cfg.MaxClients,
		IfBusy:         cfg.IfBusy,
		ImageURL:       a.imageURL,
		Logger:         a.log,
	}
	if cfg.FloodRate == 0 {
		opts.FloodRate = -1
	}
	opts.MaxUnregistered, opts.MaxUnregisteredPerAddr = cfg.MaxUnregistered, cfg.MaxUnregisteredPerAddr
	opts.RegistrationTimeout = cfg.RegistrationTimeout
	if a.tokens != nil {
		tokens := a.tokens
		opts.Authenticate = func(user, token string) (string, bool) { return tokens.Lookup(token) }
		// A reload that takes the token away closes the connections
		// logged in with it; so does one that takes away an agent the
		// principal could use at login (its channels of that agent would
		// go on following): the client comes back to what it may use now.
		opts.Watch = func(token, principal string, revoked func()) func() bool {
			var once sync.Once
			fire := func() { once.Do(revoked) }
			stops := []func() bool{tokens.Watch(token, principal, "", fire)}
			for _, ag := range a.agents {
				if tokens.Allows(principal, ag.ID) {
					stops = append(stops, tokens.Watch(token, principal, ag.ID, fire))
				}
			}
			return func() bool {
				held := true
				for _, stop := range stops {
					held = stop() && held
				}
				return held
			}
		}
	}
	srv, err := irc.NewServer(opts)
	if err != nil {
		ln.Close()
		return nil, err
	}
	tlsOn := cfg.TLSCert != ""
	return &door{
		start: func() {
			a.log.Info("irc listening", "addr", ln.Addr().String(), "tls", tlsOn)
			go func() {
				if err := srv.Serve(ln); err != nil {
					a.log.Error("irc server stopped", "err", err)
				}
			}()
		},
		begin: srv.BeginShutdown,
		end: func(ctx context.Context) {
			srv.BeginShutdown()
			ln.Close()
			srv.Close(ctx)
		},
	}, nil
}

// imageURL is the authenticated HTTP URL of an image in a journal message
// (GET {API}/conversations/{id}/messages/{seq}/images/{n}), on
// AGENTIK_IRC_HTTP_URL or else this server's own address: the default
// agent's at /agentik, another agent's under /agents/{agentID} (SPEC §9).
func (a *app) imageURL(agentID, conversationID string, seq int64, n int) string {
	base := strings.TrimRight(a.cfg.IRC.HTTPURL, "/")
	if base == "" {
		host := a.cfg.Host
		if host == "" {
			host = "localhost"
		}
		port := strconv.Itoa(a.cfg.Port)
		if _, p, err := net.SplitHostPort(a.httpAddr); err == nil {
			port = p
		}
		base = "http://" + net.JoinHostPort(host, port)
	}
	api := apiHome // the native API's path (doors.go)
	if ag := a.agentByID(agentID); ag != nil && !ag.Default {
		api = agentPrefix(agentID)
	}
	return fmt.Sprintf("%s%s/conversations/%s/messages/%d/images/%d", base, api, conversationID, seq, n)
}

func ircAgents(agents []*agent) []irc.Agent {
	out := make([]irc.Agent, len(agents))
	for i, ag := range agents {
		out[i] = irc.Agent{ID: ag.ID, Agent: ag.Agent}
	}
	return out
}
