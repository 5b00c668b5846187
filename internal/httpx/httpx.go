// Package httpx holds what agentik's outgoing HTTP clients share: the model
// client, remote A2A agents and MCP servers over HTTP.
package httpx

import "net/http"

// IdleConns bounds the idle connections a PooledTransport keeps, per host
// and in all.
const IdleConns = 256

// PooledTransport is net/http's default transport with an idle pool sized
// for concurrent turns. The default keeps two idle connections per host, so
// past two concurrent calls to one endpoint nearly every call dials (and,
// over TLS, handshakes) anew.
func PooledTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = IdleConns
	t.MaxIdleConnsPerHost = IdleConns
	return t
}
