package tools

import (
	"context"
	"testing"
	"time"

	"github.com/agentik/agentik"
)

func TestCurrentTime(t *testing.T) {
	fixed := time.Date(2026, 11, 30, 21, 0, 0, 0, time.UTC)
	tool := CurrentTime{Now: func() time.Time { return fixed }}
	cases := []struct {
		args    string
		want    string
		isError bool
	}{
		{``, "2026-11-30T21:00:00Z", false},
		{`{}`, "2026-11-30T21:00:00Z", false},
		{`{"timezone":"Europe/Paris"}`, "2026-11-30T22:00:00+01:00", false},
		{`{"timezone":"Mars/Olympus"}`, "unknown time zone Mars/Olympus", true},
		{`{"timezone":"../../etc/passwd"}`, "unknown time zone ../../etc/passwd", true},
		{`[1]`, "", true},
	}
	for _, tc := range cases {
		res, err := tool.Call(context.Background(), agentik.RawJSON(tc.args))
		if err != nil {
			t.Fatalf("%s: %v", tc.args, err)
		}
		if res.IsError != tc.isError {
			t.Errorf("%s: is_error=%v", tc.args, res.IsError)
		}
		if tc.want != "" && agentik.JoinText(res.Content) != tc.want {
			t.Errorf("%s: got %q want %q", tc.args, agentik.JoinText(res.Content), tc.want)
		}
	}
}

type fixedSource []agentik.Tool

func (s fixedSource) Tools(context.Context) []agentik.Tool { return s }

type named string

func (n named) Spec() agentik.ToolSpec { return agentik.ToolSpec{Name: string(n)} }
func (n named) Call(context.Context, agentik.RawJSON) (agentik.ToolResult, error) {
	return agentik.ToolResult{Content: []agentik.Content{agentik.Text(string(n))}}, nil
}

func TestRegistryPrefixesClashingNames(t *testing.T) {
	r := NewRegistry(CurrentTime{})
	r.AddSource("srv", fixedSource{named("current_time"), named("echo")})
	set := r.Snapshot(context.Background())
	var names []string
	for _, s := range set.Specs() {
		names = append(names, s.Name)
	}
	want := []string{"current_time", "srv_current_time", "echo"}
	if len(names) != len(want) {
		t.Fatalf("names %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("names %v, want %v", names, want)
		}
	}
	tool, ok := set.Lookup("srv_current_time")
	if !ok {
		t.Fatal("prefixed tool not found")
	}
	res, _ := tool.Call(context.Background(), nil)
	if agentik.JoinText(res.Content) != "current_time" {
		t.Fatalf("prefixed name reached the wrong tool: %+v", res)
	}
	if _, ok := set.Lookup("nope"); ok {
		t.Fatal("unknown tool found")
	}
}

func TestRegistryFilter(t *testing.T) {
	r := NewRegistry(CurrentTime{})
	ctx := context.Background()
	if _, ok := r.Snapshot(ctx).Lookup("current_time"); !ok {
		t.Fatal("no filter: current_time missing")
	}
	r.SetFilter(func(name string) bool { return name != "current_time" })
	s := r.Snapshot(ctx)
	if _, ok := s.Lookup("current_time"); ok || len(s.Specs()) != 0 {
		t.Fatalf("denied tool offered: %v", s.Specs())
	}
	r.SetFilter(nil)
	if len(r.Snapshot(ctx).Specs()) != 1 {
		t.Fatal("filter not lifted")
	}
}
