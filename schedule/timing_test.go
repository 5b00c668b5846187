package schedule_test

import (
	"testing"
	"time"

	"github.com/agentik/agentik"
)

// next parses a cron schedule in zone and returns its first due time
// after from and the one after that.
func next(t *testing.T, expr, zone string, from time.Time) (time.Time, time.Time) {
	t.Helper()
	tm, err := agentik.ParseTiming(agentik.Schedule{Cron: expr, Timezone: zone}, time.Minute)
	if err != nil {
		t.Fatalf("%s in %s: %v", expr, zone, err)
	}
	first := tm.First(from)
	return first, tm.After(first, first)
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestCronInItsTimeZone: a cron expression is evaluated in the schedule's
// zone: 8:00 in Tokyo is 23:00 UTC the day before.
func TestCronInItsTimeZone(t *testing.T) {
	first, second := next(t, "0 8 * * *", "Asia/Tokyo", utc("2026-01-10T00:00:00Z"))
	if want := utc("2026-01-10T23:00:00Z"); !first.Equal(want) || first.Location() != time.UTC {
		t.Fatalf("first: %s, want %s", first, want)
	}
	if want := utc("2026-01-11T23:00:00Z"); !second.Equal(want) {
		t.Fatalf("second: %s, want %s", second, want)
	}
	// Without a zone, UTC.
	if first, _ := next(t, "0 8 * * *", "", utc("2026-01-10T00:00:00Z")); !first.Equal(utc("2026-01-10T08:00:00Z")) {
		t.Fatalf("UTC: %s", first)
	}
}

// TestCronAcrossDST: 8:00 in New York stays 8:00 local across both DST
// changes of 2026 (13:00 UTC in winter, 12:00 UTC in summer), and a time
// of day that the spring change skips or the autumn one repeats runs at
// most once that day.
func TestCronAcrossDST(t *testing.T) {
	for _, c := range []struct{ from, first, second string }{
		{"2026-03-07T14:00:00Z", "2026-03-08T12:00:00Z", "2026-03-09T12:00:00Z"}, // spring forward on the 8th
		{"2026-10-31T13:00:00Z", "2026-11-01T13:00:00Z", "2026-11-02T13:00:00Z"}, // fall back on the 1st
	} {
		first, second := next(t, "0 8 * * *", "America/New_York", utc(c.from))
		if !first.Equal(utc(c.first)) || !second.Equal(utc(c.second)) {
			t.Errorf("from %s: %s, %s; want %s, %s", c.from, first, second, c.first, c.second)
		}
	}
	ny, _ := time.LoadLocation("America/New_York")
	for _, c := range []struct{ expr, from string }{
		{"30 2 * * *", "2026-03-07T12:00:00Z"}, // 2:30 does not exist on March 8
		{"30 1 * * *", "2026-10-31T12:00:00Z"}, // 1:30 happens twice on November 1
	} {
		tm, err := agentik.ParseTiming(agentik.Schedule{Cron: c.expr, Timezone: "America/New_York"}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		perDay := map[string]int{}
		due := tm.First(utc(c.from))
		for range 4 {
			perDay[due.In(ny).Format(time.DateOnly)]++
			n := tm.After(due, due)
			if !n.After(due) {
				t.Fatalf("%s: %s after %s", c.expr, n, due)
			}
			due = n
		}
		for day, n := range perDay {
			if n > 1 {
				t.Errorf("%s: %d runs on %s", c.expr, n, day)
			}
		}
		t.Logf("%s: %v", c.expr, perDay)
	}
	// Every hour at :30 runs in both 1 o'clock hours of November 1 (an
	// hour apart): only fixed hours are run once.
	first, second := next(t, "30 * * * *", "America/New_York", utc("2026-11-01T05:00:00Z"))
	if !first.Equal(utc("2026-11-01T05:30:00Z")) || !second.Equal(utc("2026-11-01T06:30:00Z")) {
		t.Errorf("hourly across the autumn change: %s, %s", first, second)
	}
}
