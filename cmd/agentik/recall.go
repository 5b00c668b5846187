package main

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/openai"
	"github.com/agentik/agentik/recall"
)

// setupRecall gives an agent with memory on (SPEC §19) the
// conversation_search tool and GET {p}/memory/search, over its view of the
// store, which every store of the process indexes; with memory.embeddings,
// by meaning too, and a background indexer that embeds its messages.
func (a *app) setupRecall(ag *agent, store agentik.Store) {
	if !ag.cfg.Memory.Enabled {
		return
	}
	text, ok := store.(agentik.MessageSearcher)
	if !ok {
		a.log.Warn("the store cannot search messages: conversation_search is off", "agent", ag.ID)
		return
	}
	ag.recall = recall.New(text)
	if em := ag.cfg.Memory.Embeddings; em.BaseURL != "" {
		a.setupSemantic(ag, store)
	}
	ag.reg.AddSource("memory", staticTools{ag.recall.Tool()})
}

// setupSemantic makes an agent's recall search by meaning too and runs its
// indexer while the process serves.
func (a *app) setupSemantic(ag *agent, store agentik.Store) {
	st, ok := store.(interface {
		agentik.MessageSearcher
		agentik.MessageEmbeddings
	})
	if !ok {
		a.log.Warn("the store keeps no vectors: conversation_search is full-text only", "agent", ag.ID)
		return
	}
	em := ag.cfg.Memory.Embeddings
	log := a.log.With("agent", ag.ID)
	emb := recall.NewEmbedder(em.BaseURL, em.Model, em.APIKey, &http.Client{Transport: openai.NewTransport()})
	ag.recall = recall.NewSemantic(st, emb, log)
	ag.indexer = recall.NewIndexer(st, emb, log)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	a.onStart = append(a.onStart, func() { wg.Go(func() { ag.indexer.Run(ctx) }) })
	stop := func() { cancel(); wg.Wait() }
	a.onShutdown = append(a.onShutdown, func(context.Context) { stop() })
	a.onClose = append(a.onClose, stop)
}

// staticTools is a tool source whose tools never change.
type staticTools []agentik.Tool

func (s staticTools) Tools(context.Context) []agentik.Tool { return s }

// recallAPI is what an agent's native API searches: nil (no route) when
// memory is off.
func (ag *agent) recallAPI() agentik.Recall {
	if ag.recall == nil {
		return nil
	}
	return ag.recall
}

// observer is what an agent's engine reports to: the process's metrics,
// and, with an indexer, a nudge at the end of each turn, whose messages
// are then embedded at once rather than at the indexer's next poll.
func (ag *agent) observer() agentik.Observer {
	obs := ag.app.observer()
	if ag.indexer == nil {
		return obs
	}
	if obs == nil {
		obs = agentik.NopObserver{}
	}
	return nudger{obs, ag.indexer}
}

// nudger is an Observer that nudges an indexer when a turn ends.
type nudger struct {
	agentik.Observer
	x *recall.Indexer
}

func (n nudger) TurnEnded(agent, outcome string, d time.Duration) {
	n.Observer.TurnEnded(agent, outcome, d)
	n.x.Nudge()
}
