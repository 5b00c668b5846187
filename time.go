package agentik

import (
	"fmt"
	"time"
)

// TimeFormat is the wire form of every date: RFC 3339, UTC, milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// Time is a time.Time that travels as RFC 3339 UTC with milliseconds and is
// omitted (with the omitzero tag) when zero.
type Time struct{ time.Time }

// Now returns the current time truncated to the wire precision, so a value
// read back from a store equals the value written.
func Now() Time { return TimeOf(time.Now()) }

// TimeOf converts t to wire precision and UTC.
func TimeOf(t time.Time) Time { return Time{t.UTC().Truncate(time.Millisecond)} }

func (t Time) String() string { return t.UTC().Format(TimeFormat) }

// MarshalJSON writes the RFC 3339 millisecond form.
func (t Time) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(TimeFormat)+2)
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, TimeFormat)
	return append(b, '"'), nil
}

// UnmarshalJSON accepts any RFC 3339 time and converts it to wire precision.
func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*t = Time{}
		return nil
	}
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return fmt.Errorf("time: want a JSON string, got %.20s", b)
	}
	parsed, err := time.Parse(time.RFC3339Nano, string(b[1:len(b)-1]))
	if err != nil {
		return fmt.Errorf("time: %w", err)
	}
	*t = TimeOf(parsed)
	return nil
}
