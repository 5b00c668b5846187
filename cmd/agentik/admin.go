package main

import (
	"context"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
)

// The admin API (routes.go) serves the principals of AGENTIK_ADMINS;
// anyone else gets 404 (docs/observability.md).

// adminTurn is one open turn as GET /admin/turns lists it.
type adminTurn struct {
	ConversationID string  `json:"conversation_id"`
	ReplyTo        string  `json:"reply_to"`
	Principal      string  `json:"principal"`
	Agent          string  `json:"agent"`
	State          string  `json:"state"` // running, queued, approval_pending
	Since          string  `json:"since"`
	AgeSeconds     float64 `json:"age_seconds"`
	// Process is host:pid of the process running the conversation's
	// turns: this one, or on PostgreSQL the one holding its lease; "" for
	// a turn no process has taken yet.
	Process string `json:"process,omitempty"`
	// PendingApprovals counts the tool calls waiting for an answer.
	PendingApprovals int `json:"pending_approvals,omitempty"`
}

// processName names this process in GET /admin/turns and, on
// PostgreSQL, to the other processes (host:pid).
func processName() string {
	host, _ := os.Hostname()
	return host + ":" + strconv.Itoa(os.Getpid())
}

// adminStats is the body of GET /admin/stats.
type adminStats struct {
	Database struct {
		Backend string `json:"backend"` // sqlite or postgres
		Bytes   int64  `json:"bytes"`
	} `json:"database"`
	Agents []agentStats `json:"agents"`
}

type agentStats struct {
	Agent string `json:"agent"`
	agentik.StoreStats
	// OpenTurns are the running and queued turns in the store (GET
	// /admin/turns lists them).
	OpenTurns int `json:"open_turns"`
}

// adminStats counts what the store holds, agent by agent.
func (a *app) adminStats(w http.ResponseWriter, r *http.Request) {
	var out adminStats
	out.Database.Backend = "sqlite"
	if a.cfg.DatabaseURL != "" {
		out.Database.Backend = "postgres"
	}
	out.Agents = []agentStats{}
	for _, ag := range a.agents {
		st, err := ag.store.Stats(r.Context())
		if err != nil {
			edge.WriteError(w, r, a.log, err)
			return
		}
		open, err := ag.store.OpenTurns(r.Context())
		if err != nil {
			edge.WriteError(w, r, a.log, err)
			return
		}
		out.Database.Bytes = st.DatabaseBytes
		out.Agents = append(out.Agents, agentStats{Agent: ag.ID, StoreStats: st, OpenTurns: len(open)})
	}
	edge.WriteJSON(w, http.StatusOK, out)
}

// openTurns lists every open turn in the store (on PostgreSQL: of every
// process), agent by agent: the first open turn of a conversation runs (or
// waits for approvals), the others are queued behind it.
func (a *app) openTurns(ctx context.Context) ([]adminTurn, error) {
	self := processName()
	now := time.Now()
	out := []adminTurn{}
	for _, ag := range a.agents {
		open, err := ag.store.OpenTurns(ctx)
		if err != nil {
			return nil, err
		}
		pending := map[string]int{}
		for _, p := range ag.eng.PendingApprovals() {
			pending[p.ReplyTo]++
		}
		owners := map[string]string{}
		holders := map[string]string{} // conversation → process
		holder, _ := ag.coord.(interface {
			Holder(ctx context.Context, conversationID string) (string, bool, error)
		})
		for i, m := range open {
			owner, ok := owners[m.ConversationID]
			if !ok {
				if rec, err := ag.store.GetConversation(ctx, m.ConversationID); err == nil {
					owner = rec.Owner
				}
				owners[m.ConversationID] = owner
			}
			t := adminTurn{ConversationID: m.ConversationID, ReplyTo: m.ID, Principal: owner, Agent: ag.ID,
				State: "queued", Since: m.Date.String(), AgeSeconds: now.Sub(m.Date.Time).Seconds()}
			if i == 0 || open[i-1].ConversationID != m.ConversationID {
				t.State = "running"
				if n := pending[m.ID]; n > 0 {
					t.State, t.PendingApprovals = "approval_pending", n
				}
			}
			process, ok := holders[m.ConversationID]
			if !ok {
				switch {
				case ag.eng.RunsHere(m.ConversationID):
					process = self
				case holder != nil:
					if process, _, err = holder.Holder(ctx, m.ConversationID); err != nil {
						return nil, err
					}
				}
				holders[m.ConversationID] = process
			}
			t.Process = process
			out = append(out, t)
		}
	}
	return out, nil
}

func (a *app) adminTurns(w http.ResponseWriter, r *http.Request) {
	turns, err := a.openTurns(r.Context())
	if err != nil {
		edge.WriteError(w, r, a.log, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"turns": turns})
}

// adminCancel interrupts a running turn, or withdraws a queued one, with
// reason user, for whoever owns it.
func (a *app) adminCancel(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	replyTo := r.PathValue("reply_to")
	turns, err := a.openTurns(ctx)
	if err != nil {
		edge.WriteError(w, r, a.log, err)
		return
	}
	for _, t := range turns {
		if t.ReplyTo != replyTo {
			continue
		}
		ag := a.agentByID(t.Agent)
		conv, err := ag.eng.Conversation(agentik.WithPrincipal(ctx, t.Principal), t.ConversationID)
		if err != nil {
			edge.WriteError(w, r, a.log, err)
			return
		}
		done, err := conv.InterruptTurn(agentik.WithPrincipal(ctx, t.Principal), replyTo)
		if err != nil {
			edge.WriteError(w, r, a.log, err)
			return
		}
		edge.WriteJSON(w, http.StatusOK, map[string]any{"cancelled": done, "conversation_id": t.ConversationID, "reply_to": replyTo})
		return
	}
	edge.WriteError(w, r, a.log, agentik.Errorf(agentik.ENotFound, "no open turn %s", replyTo))
}
