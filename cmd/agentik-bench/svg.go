package main

import (
	"fmt"
	"math"
	"strings"
)

// series is one line of a chart.
type series struct {
	Name  string
	Color string
	Y     []float64
}

// chart is a line chart with log-scaled axes, written as plain SVG so that
// the bench needs no plotting dependency.
type chart struct {
	Title, XLabel, YLabel string
	X                     []float64
	XTicks                []string // labels at X
	Series                []series
}

const (
	svgW, svgH                     = 720, 420
	padL, padR, padT, padB float64 = 80, 170, 50, 60
)

func (c chart) SVG() string {
	plotW, plotH := svgW-padL-padR, svgH-padT-padB
	lx := func(v float64) float64 { return math.Log10(math.Max(v, 1e-9)) }
	x0, x1 := lx(c.X[0]), lx(c.X[len(c.X)-1])
	if x1 == x0 {
		x1 = x0 + 1
	}
	ymin, ymax := math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for _, y := range s.Y {
			if y > 0 {
				ymin, ymax = math.Min(ymin, y), math.Max(ymax, y)
			}
		}
	}
	if math.IsInf(ymin, 0) {
		ymin, ymax = 0.1, 1
	}
	// Whole decades around the data, so the grid lines read 0.1, 1, 10 ms …
	y0, y1 := math.Floor(lx(ymin)), math.Ceil(lx(ymax))
	if y1 == y0 {
		y1 = y0 + 1
	}
	px := func(x float64) float64 { return padL + (lx(x)-x0)/(x1-x0)*plotW }
	py := func(y float64) float64 { return padT + plotH - (lx(y)-y0)/(y1-y0)*plotH }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", svgW, svgH, svgW, svgH)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%g" y="28" font-size="16" font-weight="bold">%s</text>`+"\n", padL, esc(c.Title))
	// Grid and y labels, one per decade.
	for e := y0; e <= y1; e++ {
		y := py(math.Pow(10, e))
		fmt.Fprintf(&b, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#ddd"/>`+"\n", padL, y, padL+plotW, y)
		fmt.Fprintf(&b, `<text x="%g" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", padL-6, y, fmtNum(math.Pow(10, e)))
	}
	for i, x := range c.X {
		xp := px(x)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#eee"/>`+"\n", xp, padT, xp, padT+plotH)
		// A tick label may have a second, smaller line (after "\n").
		first, second, _ := strings.Cut(c.XTicks[i], "\n")
		fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle">%s</text>`+"\n", xp, padT+plotH+18, esc(first))
		if second != "" {
			fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle" font-size="10" fill="#555">%s</text>`+"\n", xp, padT+plotH+31, esc(second))
		}
	}
	fmt.Fprintf(&b, `<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="#333"/>`+"\n", padL, padT, plotW, plotH)
	fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle">%s</text>`+"\n", padL+plotW/2, float64(svgH)-10, esc(c.XLabel))
	fmt.Fprintf(&b, `<text transform="translate(18 %g) rotate(-90)" text-anchor="middle">%s</text>`+"\n", padT+plotH/2, esc(c.YLabel))
	for i, s := range c.Series {
		var pts []string
		for j, y := range s.Y {
			if j < len(c.X) && y > 0 {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(c.X[j]), py(y)))
			}
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", s.Color, strings.Join(pts, " "))
		for j, y := range s.Y {
			if j < len(c.X) && y > 0 {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s: %s</title></circle>`+"\n", px(c.X[j]), py(y), s.Color, esc(s.Name), fmtNum(y))
			}
		}
		ly := padT + 10 + float64(i)*20
		fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="2"/>`+"\n", padL+plotW+15, ly, padL+plotW+40, ly, s.Color)
		fmt.Fprintf(&b, `<text x="%g" y="%g" dominant-baseline="middle">%s</text>`+"\n", padL+plotW+46, ly, esc(s.Name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func fmtNum(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
	default:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.4f", v), "0"), ".")
	}
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// concurrencyChart plots p50/p99 turn latency against concurrent conversations.
func concurrencyChart(ls []ConcurrencyLevel) chart {
	c := chart{Title: "Turn latency vs concurrent conversations", XLabel: "concurrent conversations (log), and turns/s reached", YLabel: "turn latency, ms (log)"}
	p50, p99 := series{Name: "p50", Color: "#1f77b4"}, series{Name: "p99", Color: "#d62728"}
	for _, l := range ls {
		c.X = append(c.X, float64(l.Conversations))
		c.XTicks = append(c.XTicks, fmt.Sprintf("%d\n%.0f/s", l.Conversations, l.TurnsPerSec))
		p50.Y, p99.Y = append(p50.Y, l.Latency.P50Ms), append(p99.Y, l.Latency.P99Ms)
	}
	c.Series = []series{p50, p99}
	return c
}

// lengthChart plots turn latency against the journal length.
func lengthChart(ps []LengthPoint) chart {
	c := chart{Title: "Turn latency vs conversation length", XLabel: "journal messages already in the conversation (log)", YLabel: "turn latency, ms (log)"}
	p50, p99, first := series{Name: "p50", Color: "#1f77b4"}, series{Name: "p99", Color: "#d62728"}, series{Name: "first turn", Color: "#2ca02c"}
	for _, p := range ps {
		c.X = append(c.X, float64(p.Messages))
		c.XTicks = append(c.XTicks, fmt.Sprintf("%d", p.Messages))
		p50.Y, p99.Y, first.Y = append(p50.Y, p.Latency.P50Ms), append(p99.Y, p.Latency.P99Ms), append(first.Y, p.FirstTurnMs)
	}
	c.Series = []series{p50, p99, first}
	return c
}
