package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/config"
	"github.com/agentik/agentik/internal/testenv"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/postgres"
)

// TestPostgresAgentStreamSubscribers: 1,000 subscribers of the agent-event
// stream, spread over three processes, some joining before and some while
// conversations are created, renamed and deleted through all three, some
// dropping their connection midway and resuming after their last cursor.
// Each must receive every agent event exactly once, in cursor order: the
// sequence of cursors it read equals the store's agent events. The stream
// is read raw (SSE over HTTP), not through httpapi.Client, whose reconnects
// drop repeated cursors and would hide a duplicate.
func TestPostgresAgentStreamSubscribers(t *testing.T) {
	const (
		subscribers = 1000
		workers     = 4 // per process
		cycles      = 5 // create, rename, delete per worker
	)
	llm := llmtest.NewServer()
	defer llm.Close()
	llm.Handle(echo)
	dsn := pgSchema(t)
	ps, cs := startProcs(t, 3, pgEnv(dsn, llm, unlimited...)...)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: subscribers}}
	defer hc.CloseIdleConnections()
	// Waits end on events; the context only ends them before go test's
	// -timeout would (a loaded machine took 65 s of the 90 s this once had).
	ctx := testenv.Wait(t)

	// Subscribers read until the created event of the conversation made
	// after all the others, known by its title.
	lastTitle := "last " + agentik.NewID()
	var resumed, reconnects atomic.Int64
	type result struct {
		cursors []int64
		err     error
	}
	results := make([]result, subscribers)
	var subs, joined sync.WaitGroup
	subscribe := func(i int) {
		joined.Add(1)
		subs.Go(func() {
			base := ps[i%len(ps)].url + "/agentik/events"
			// A quarter of the subscribers drop their connection after a
			// few events and resume from the last cursor they got.
			dropAt := -1
			if i%4 == 0 {
				dropAt = 1 + i%37
			}
			var got []int64
			after := int64(0)
			first := true
			failures := 0
			for {
				done, err := readAgentEvents(ctx, hc, base, after, dropAt-len(got), lastTitle, func() {
					if first {
						joined.Done()
						first = false
					}
				}, func(ev agentik.AgentEvent) {
					got = append(got, ev.Cursor)
					after = ev.Cursor
				})
				if first { // never opened
					joined.Done()
					first = false
				}
				if err != nil && ctx.Err() == nil && failures < 5 {
					// A connection refused or reset before the stream
					// opened (a loaded machine): an SSE client retries from
					// its last cursor, which must lose and repeat nothing.
					failures++
					reconnects.Add(1)
					continue
				}
				if err != nil {
					results[i] = result{got, err}
					return
				}
				if done {
					results[i] = result{got, nil}
					return
				}
				if dropAt > 0 && len(got) >= dropAt {
					resumed.Add(1)
					dropAt = -1
				} else {
					reconnects.Add(1) // the server ended the stream (cut off)
				}
			}
		})
	}

	// Half subscribe before anything happens.
	for i := range subscribers / 2 {
		subscribe(i)
	}
	joined.Wait()

	var work sync.WaitGroup
	errs := make(chan error, 3*workers)
	for p := range cs {
		for w := range workers {
			work.Go(func() {
				for k := range cycles {
					info, err := cs[p].CreateConversation(ctx, agentik.CreateRequest{Title: fmt.Sprintf("p%d w%d c%d", p, w, k)})
					if err != nil {
						errs <- err
						return
					}
					// Renamed and deleted through other processes.
					if _, err := cs[(p+1)%len(cs)].RenameConversation(ctx, info.ID, "renamed"); err != nil {
						errs <- err
						return
					}
					if err := cs[(p+2)%len(cs)].DeleteConversation(ctx, info.ID); err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	// The other half joins while the conversations come and go: their
	// replay from cursor 0 hands over to live delivery mid-stream.
	for i := subscribers / 2; i < subscribers; i++ {
		subscribe(i)
	}
	work.Wait()
	close(errs)
	for err := range errs {
		for i, p := range ps {
			t.Logf("process %d's log:\n%s", i, p.log())
		}
		t.Fatalf("workload: %v", err)
	}
	last, err := cs[0].CreateConversation(ctx, agentik.CreateRequest{Title: lastTitle})
	if err != nil {
		t.Fatal(err)
	}
	subs.Wait()

	// What the store holds, up to the last conversation's created event.
	st, err := postgres.Open(ctx, dsn, postgres.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	all, err := st.ForAgent(config.DefaultAgentID).AgentEvents(ctx, 0, 0) // the one agent's events
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	for _, ev := range all {
		want = append(want, ev.Cursor)
		if ev.Type == agentik.AgentEvCreated && ev.ConversationID == last.ID {
			break
		}
	}
	if n := 3*workers*cycles*3 + 1; len(want) != n {
		t.Fatalf("the store has %d agent events up to the last one, want %d", len(want), n)
	}
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("subscriber %d: %v (after %d events)", i, r.err, len(r.cursors))
		}
		if !equalCursors(r.cursors, want) {
			t.Fatalf("subscriber %d (process %d) received %d events, want the store's %d exactly once in order:\n got  %v\n want %v",
				i, i%len(ps), len(r.cursors), len(want), r.cursors, want)
		}
	}
	t.Logf("%d subscribers × %d agent events each; %d resumed after dropping their connection, %d reconnected after the server ended their stream",
		subscribers, len(want), resumed.Load(), reconnects.Load())
}

func equalCursors(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// readAgentEvents reads the agent-event stream at url after the cursor,
// calling open once the server answered and fn for each event, until the
// created event of the conversation titled last (done), until it has read
// drop events when drop > 0 (it then closes the connection itself), or
// until the server ends the stream.
func readAgentEvents(ctx context.Context, hc *http.Client, url string, after int64, drop int, last string,
	open func(), fn func(agentik.AgentEvent)) (done bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s?after=%d", url, after), nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	open()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		var ev agentik.AgentEvent
		if err := json.Unmarshal([]byte(strings.TrimSpace(data)), &ev); err != nil {
			return false, fmt.Errorf("event %q: %v", data, err)
		}
		fn(ev)
		n++
		if ev.Type == agentik.AgentEvCreated && ev.Conversation != nil && ev.Conversation.Title == last {
			return true, nil
		}
		if drop > 0 && n >= drop {
			return false, nil
		}
	}
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	return false, nil
}
