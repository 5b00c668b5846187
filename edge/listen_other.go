//go:build !unix

package edge

import (
	"net"
	"time"
)

// waitReadable hands every connection over at once where sockets cannot be
// peeked at.
func waitReadable(net.Conn, time.Duration) bool { return true }
