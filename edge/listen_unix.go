//go:build unix

package edge

import (
	"errors"
	"net"
	"syscall"
	"time"
)

// waitReadable waits until c has something to read, at most idle; false
// when the wait ended otherwise (the deadline, c closed). Nothing is read:
// each look peeks without waiting, so bytes that came before the wait
// began are seen (the runtime's poller forgets a readiness it noted before
// a raw read starts), and only an empty socket waits for the poller.
func waitReadable(c net.Conn, idle time.Duration) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	if idle > 0 {
		if c.SetReadDeadline(time.Now().Add(idle)) != nil {
			return false
		}
	}
	err = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		for {
			_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			switch {
			case errors.Is(err, syscall.EINTR):
				continue
			case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EWOULDBLOCK):
				return false // empty: wait for the poller
			}
			return true // bytes, the client's hang-up or an error: the server reads it
		}
	})
	if err != nil || c.SetReadDeadline(time.Time{}) != nil {
		return false
	}
	return true
}
