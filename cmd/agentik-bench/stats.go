package main

import (
	"math"
	"slices"
	"time"
)

// Dist summarises a set of durations, in milliseconds.
type Dist struct {
	N      int     `json:"n"`
	MinMs  float64 `json:"min_ms"`
	P50Ms  float64 `json:"p50_ms"`
	P90Ms  float64 `json:"p90_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
	MeanMs float64 `json:"mean_ms"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// dist computes percentiles by the nearest-rank method.
func dist(ds []time.Duration) Dist {
	if len(ds) == 0 {
		return Dist{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	rank := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return ms(s[max(0, min(i, len(s)-1))])
	}
	return Dist{
		N: len(s), MinMs: ms(s[0]), P50Ms: rank(0.50), P90Ms: rank(0.90), P99Ms: rank(0.99),
		MaxMs: ms(s[len(s)-1]), MeanMs: ms(sum / time.Duration(len(s))),
	}
}

// round3 keeps JSON readable: microsecond resolution is all a millisecond
// figure needs.
func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

func (d Dist) rounded() Dist {
	d.MinMs, d.P50Ms, d.P90Ms, d.P99Ms, d.MaxMs, d.MeanMs = round3(d.MinMs), round3(d.P50Ms), round3(d.P90Ms), round3(d.P99Ms), round3(d.MaxMs), round3(d.MeanMs)
	return d
}
