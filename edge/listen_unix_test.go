//go:build unix

package edge

import (
	"net"
	"syscall"
	"testing"
	"time"
)

// TestBytesBeforeTheWaitAreSeen: a connection whose request is already in
// its socket when the wait begins — and whose readiness the runtime's
// poller may have noted before, which a raw read forgets — is handed over
// at once, not after the idle limit. (A lost readiness left such a
// connection waiting for 2 min, its client's request unanswered.)
func TestBytesBeforeTheWaitAreSeen(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := client.Write([]byte("GET / HTTP/1.1\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	// The bytes are in c's socket (a blocking peek returns), and a read of
	// another kind made the poller note them, as a server's first look
	// would.
	raw, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	raw.Read(func(fd uintptr) bool {
		var b [1]byte
		syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK)
		return true
	})
	c.SetReadDeadline(time.Now().Add(time.Millisecond))
	c.Read(nil)
	c.SetReadDeadline(time.Time{})
	const idle = 30 * time.Second
	start := time.Now()
	if !waitReadable(c, idle) {
		t.Fatal("a connection with its request queued was not handed over")
	}
	if d := time.Since(start); d >= idle {
		t.Fatalf("handed over after %v: the bytes already there were not seen", d)
	}
	buf := make([]byte, 64)
	if n, err := c.Read(buf); err != nil || string(buf[:n]) != "GET / HTTP/1.1\r\n\r\n" {
		t.Fatalf("the server reads %q, %v: the peek must consume nothing", buf[:n], err)
	}
}
