package irc

import (
	"errors"
	"time"

	"github.com/ergochat/irc-go/ircmsg"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
)

// watchAgents follows the agent-level events of the client's principal,
// for every agent it may use, so that a conversation renamed elsewhere (the
// web console, REST, another client) reaches the client as a TOPIC change
// of its channel. It starts once, when the client may act.
func (c *conn) watchAgents() {
	principal, ok := c.acting()
	if !ok {
		return
	}
	c.mu.Lock()
	if c.watching || c.ended {
		c.mu.Unlock()
		return
	}
	c.watching = true
	c.mu.Unlock()
	for _, a := range c.srv.agents {
		if !c.srv.mayUse(principal, a) {
			continue
		}
		st, err := a.agent.Events(c.pctx(), agentik.LiveOnly)
		if err != nil {
			c.srv.log.Debug("irc: agent events not followed", "client", c.id, "agent", a.id, "err", err)
			continue
		}
		c.mu.Lock()
		if c.ended {
			c.mu.Unlock()
			st.Close()
			return
		}
		c.wg.Add(1)
		c.mu.Unlock()
		go func() {
			defer c.wg.Done()
			c.watch(a, st)
		}()
	}
}

// watch turns renamed events into TOPIC lines until the connection ends;
// a stream cut off for falling behind is resumed from its cursor.
func (c *conn) watch(a *agentUser, st agentik.Stream[agentik.AgentEvent]) {
	after := agentik.LiveOnly
	for {
		// Pulled on this goroutine (edge.Pull): no goroutine of the
		// engine's runs for it.
		events := edge.Pull(st, edge.AgentEventFrame)
		var err error
		for {
			ev, ok, ended, terr := edge.Take(events)
			if ended {
				if err = terr; err == nil {
					err = events.Err()
				}
				break
			}
			if !ok {
				select {
				case <-events.Ready():
				case <-events.Done():
				}
				continue
			}
			if ev.Cursor > after {
				after = ev.Cursor
			}
			if ev.Type == agentik.AgentEvRenamed {
				c.renamed(a, ev.ConversationID, ev.Title, ev.Date.Time)
			}
		}
		st.Close()
		if c.ctx.Err() != nil || !errors.Is(err, agentik.ErrSlowSubscriber) {
			return
		}
		if st, err = a.agent.Events(c.pctx(), after); err != nil {
			return
		}
	}
}

// renamed tells the client of a new title of a conversation whose channel
// it is in — unless the client set it itself (its TOPIC was answered). The
// TOPIC comes from whoever set it: the client of the principal whose TOPIC
// it was, else the agent.
func (c *conn) renamed(a *agentUser, id, title string, at time.Time) {
	by := c.srv.renamed(id, title, a.source(c.srv.opts.ServerName), at)
	c.mu.Lock()
	if t, ok := c.topics[id]; ok && t == title {
		delete(c.topics, id)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	name := c.nameFor(id)
	if name == "" {
		return
	}
	c.send(ircmsg.MakeMessage(nil, by, "TOPIC", name, oneLine(title, maxTopicLen)))
}
