package irc

import "time"

// fakelag is flood control on what one client sends, after ergo's fakelag:
// a client may send a burst of lines at once; past it, each line waits
// until the rate allows it. Lines are delayed, never dropped, and the
// client is not disconnected: while it waits, the server reads nothing more
// from it, so TCP pushes back. Not safe for concurrent use (the reader
// goroutine owns it).
type fakelag struct {
	burst  float64
	rate   float64 // lines per second
	tokens float64
	last   time.Time
}

func newFakelag(burst int, rate float64, now time.Time) *fakelag {
	return &fakelag{burst: float64(burst), rate: rate, tokens: float64(burst), last: now}
}

// delay takes one line's worth of allowance and returns how long the line
// must wait before it is handled (0 within the burst).
func (f *fakelag) delay(now time.Time) time.Duration {
	if f == nil || f.rate <= 0 {
		return 0
	}
	f.tokens += now.Sub(f.last).Seconds() * f.rate
	f.last = now
	if f.tokens > f.burst {
		f.tokens = f.burst
	}
	f.tokens--
	if f.tokens >= 0 {
		return 0
	}
	return time.Duration(-f.tokens / f.rate * float64(time.Second))
}
