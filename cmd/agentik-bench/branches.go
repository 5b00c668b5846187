package main

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// Branches (issue 46): what a send costs on a conversation whose last
// answer has Branches siblings (each made by a regenerate, one turn each)
// next to one without any. Both conversations are on the same server and
// measured alternately, LengthTurns sends each.
type Branches struct {
	Branches  int     `json:"branches"`
	Plain     Dist    `json:"plain"`
	Branched  Dist    `json:"branched"`
	RatioP50  float64 `json:"ratio_p50"` // branched p50 / plain p50
	SeedMs    float64 `json:"seed_ms"`   // making the branches
	HeadMoves int     `json:"head_moves"`
}

func (a *api) regenerate(ctx context.Context, id string) error {
	return a.do(ctx, http.MethodPost, "/agentik/conversations/"+id+"/regenerate", map[string]any{}, http.StatusAccepted, nil)
}

// branches measures the Branches result.
func (r *runner) branches(ctx context.Context) (err error) {
	n := r.plan.Branches
	t, a, _, err := r.startFresh(ctx)
	if err != nil {
		return err
	}
	defer stop(t, &err)
	var convs [2]string
	var streams [2]*eventStream
	for i := range convs {
		if convs[i], err = a.createConversation(ctx, "branches"); err != nil {
			return err
		}
		if streams[i], err = a.events(ctx, convs[i], -1); err != nil {
			return err
		}
		defer streams[i].Close()
		if err := turn(ctx, a, streams[i], func() error { return a.send(ctx, convs[i], promptPlain) }); err != nil {
			return err
		}
	}
	t0 := time.Now()
	for range n {
		if err := turn(ctx, a, streams[1], func() error { return a.regenerate(ctx, convs[1]) }); err != nil {
			return fmt.Errorf("regenerate: %w", err)
		}
	}
	res := &Branches{Branches: n, SeedMs: round3(ms(time.Since(t0))), HeadMoves: n}
	var lat [2][]time.Duration
	for range r.plan.LengthTurns {
		for i := range convs {
			t0 := time.Now()
			if err := turn(ctx, a, streams[i], func() error { return a.send(ctx, convs[i], promptPlain) }); err != nil {
				return err
			}
			lat[i] = append(lat[i], time.Since(t0))
		}
	}
	res.Plain, res.Branched = dist(lat[0]).rounded(), dist(lat[1]).rounded()
	if res.Plain.P50Ms > 0 {
		res.RatioP50 = round3(res.Branched.P50Ms / res.Plain.P50Ms)
	}
	r.res.Branches = res
	r.logf("send with %d branches: p50 %.3f ms p99 %.3f ms | without: p50 %.3f ms p99 %.3f ms | ratio p50 %.3f (branches made in %.0f ms)",
		n, res.Branched.P50Ms, res.Branched.P99Ms, res.Plain.P50Ms, res.Plain.P99Ms, res.RatioP50, res.SeedMs)
	return nil
}

// turn runs act and waits for the end of the turn it starts.
func turn(ctx context.Context, a *api, es *eventStream, act func() error) error {
	if err := act(); err != nil {
		return err
	}
	_, err := es.waitEnd()
	return err
}
