package main

import (
	"io"
	"maps"
	"net"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"
)

// proxy is a TCP proxy that a test can cut and restore: in front of the
// database, the database "goes down" for the agentik process behind it,
// and no other test sharing the server notices. With a delay, every byte
// takes that long to cross it in each direction (a network with a round
// trip of twice the delay), order kept.
type proxy struct {
	ln     net.Listener
	target string
	delay  time.Duration
	mu     sync.Mutex
	down   bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// proxied puts a proxy with a one-way delay in front of dsn's database and
// returns it with a DSN that goes through it.
func proxied(t *testing.T, dsn string, delay time.Duration) (*proxy, string) {
	u, _ := url.Parse(dsn)
	px := newDelayProxy(t, u.Host, delay)
	u.Host = px.ln.Addr().String()
	return px, u.String()
}

// newDelayProxy is a proxy to target with a one-way delay (0: none).
func newDelayProxy(t *testing.T, target string, delay time.Duration) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, delay: delay, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.setDown(true)
		p.wg.Wait()
	})
	return p
}

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.mu.Unlock()
		d, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.down { // cut while dialling
			p.mu.Unlock()
			c.Close()
			d.Close()
			continue
		}
		p.conns[c], p.conns[d] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, d)
		go p.pipe(d, c)
	}
}

func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	if p.delay > 0 {
		delayedCopy(dst, src, p.delay)
	} else {
		io.Copy(dst, src)
	}
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// delayedCopy copies src to dst, each chunk written delay after it was
// read; reading goes on meanwhile, so the delay adds latency, not a limit
// on throughput.
func delayedCopy(dst, src net.Conn, delay time.Duration) {
	type chunk struct {
		due  time.Time
		data []byte
	}
	chunks := make(chan chunk, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range chunks {
			time.Sleep(time.Until(c.due)) // the simulated network, not synchronisation
			if _, err := dst.Write(c.data); err != nil {
				src.Close()
				for range chunks {
				}
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			chunks <- chunk{time.Now().Add(delay), append([]byte(nil), buf[:n]...)}
		}
		if err != nil {
			break
		}
	}
	close(chunks)
	<-done
}

// setDown cuts every connection and refuses new ones, or lets them in again.
func (p *proxy) setDown(down bool) {
	p.mu.Lock()
	p.down = down
	p.mu.Unlock()
	if down {
		p.dropAll()
	}
}

// dropAll cuts every connection; new ones are let in as before.
func (p *proxy) dropAll() {
	p.mu.Lock()
	cs := slices.Collect(maps.Keys(p.conns))
	p.mu.Unlock()
	for _, c := range cs {
		c.Close()
	}
}
