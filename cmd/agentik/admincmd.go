package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentik/agentik/config"
)

const adminUsage = `usage: agentik admin <command> [flags]

commands:
  turns                running and queued turns of every agent (and process)
  cancel REPLY_TO      interrupt a running turn, or withdraw a queued one
  stats                conversations, messages, events and database size per agent

flags (every command):
  --url URL            the server (default http://127.0.0.1:PORT, PORT from the configuration)
  --token TOKEN        an admin's bearer token (default AGENTIK_TOKEN)
  --json               the server's JSON instead of a table
`

// adminCommand runs agentik admin: the admin API of a running server
// (docs/observability.md), for a principal of AGENTIK_ADMINS or with
// admin: true.
func adminCommand(ctx context.Context, cfg config.Config, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("admin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, adminUsage) }
	rawURL := fs.String("url", "", "")
	token := fs.String("token", "", "")
	asJSON := fs.Bool("json", false, "")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	want := map[string]int{"turns": 0, "cancel": 1, "stats": 0}
	if len(pos) == 0 {
		fs.Usage()
		return exitConfig
	}
	if n, known := want[pos[0]]; !known || len(pos)-1 != n {
		if !known {
			fmt.Fprintf(stderr, "agentik admin: unknown command %q\n\n", pos[0])
		} else {
			fmt.Fprintf(stderr, "agentik admin %s: want %d argument(s), got %d\n\n", pos[0], n, len(pos)-1)
		}
		fs.Usage()
		return exitConfig
	}
	base := *rawURL
	if base == "" {
		base = "http://127.0.0.1:" + strconv.Itoa(cfg.Port)
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		fmt.Fprintf(stderr, "agentik admin: --url %q: want http://host:port\n", base)
		return exitConfig
	}
	if *token == "" {
		*token = getenv("AGENTIK_TOKEN")
	}
	c := adminClient{base: strings.TrimRight(u.String(), "/"), token: *token}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()

	var body []byte
	switch pos[0] {
	case "turns":
		body, err = c.do(ctx, http.MethodGet, "/admin/turns")
	case "cancel":
		body, err = c.do(ctx, http.MethodPost, "/admin/turns/"+url.PathEscape(pos[1])+"/cancel")
	case "stats":
		body, err = c.do(ctx, http.MethodGet, "/admin/stats")
	}
	if err != nil {
		fmt.Fprintf(stderr, "agentik admin %s: %v\n", pos[0], err)
		return exitFail
	}
	if *asJSON {
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			fmt.Fprintf(stderr, "agentik admin %s: the server's answer is not JSON: %v\n", pos[0], err)
			return exitFail
		}
		(&cmdOut{w: stdout}).printJSON(v)
		return exitOK
	}
	if err := printAdmin(stdout, pos[0], body); err != nil {
		fmt.Fprintf(stderr, "agentik admin %s: %v\n", pos[0], err)
		return exitFail
	}
	return exitOK
}

type adminClient struct {
	base, token string
}

// do sends one admin request and returns the body of a 2xx answer; any
// other answer is an error with the server's message.
func (c adminClient) do(ctx context.Context, method, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, nil)
	if err != nil {
		return nil, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return body, nil
	}
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &e) == nil && e.Error.Code != "" {
		msg = e.Error.Code + ": " + e.Error.Message
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		msg += " (give an admin's token with --token or AGENTIK_TOKEN)"
	case http.StatusNotFound:
		if strings.Contains(msg, "no such endpoint") {
			msg += " (the token's principal is not an admin: AGENTIK_ADMINS, or admin: true in the configuration file)"
		}
	}
	return nil, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, msg)
}

// printAdmin writes the answer of command as a table.
func printAdmin(w io.Writer, command string, body []byte) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	defer tw.Flush()
	switch command {
	case "turns":
		var v struct{ Turns []adminTurn }
		if err := json.Unmarshal(body, &v); err != nil {
			return err
		}
		if len(v.Turns) == 0 {
			fmt.Fprintln(tw, "no open turns")
			return nil
		}
		fmt.Fprintln(tw, "STATE\tAGE\tAGENT\tPRINCIPAL\tCONVERSATION\tREPLY_TO\tPROCESS")
		for _, t := range v.Turns {
			state := t.State
			if t.PendingApprovals > 0 {
				state += fmt.Sprintf(" (%d)", t.PendingApprovals)
			}
			process := t.Process
			if process == "" {
				process = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", state, (time.Duration(t.AgeSeconds * float64(time.Second))).Round(time.Second),
				t.Agent, t.Principal, t.ConversationID, t.ReplyTo, process)
		}
	case "cancel":
		var v struct {
			Cancelled      bool   `json:"cancelled"`
			ConversationID string `json:"conversation_id"`
			ReplyTo        string `json:"reply_to"`
		}
		if err := json.Unmarshal(body, &v); err != nil {
			return err
		}
		if v.Cancelled {
			fmt.Fprintf(tw, "cancelled %s (conversation %s)\n", v.ReplyTo, v.ConversationID)
		} else {
			fmt.Fprintf(tw, "%s was already over (conversation %s)\n", v.ReplyTo, v.ConversationID)
		}
	case "stats":
		var v adminStats
		if err := json.Unmarshal(body, &v); err != nil {
			return err
		}
		fmt.Fprintln(tw, "AGENT\tCONVERSATIONS\tMESSAGES\tEVENTS\tAGENT_EVENTS\tOPEN_TURNS")
		for _, a := range v.Agents {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\n", a.Agent, a.Conversations, a.Messages, a.Events, a.AgentEvents, a.OpenTurns)
		}
		tw.Flush()
		fmt.Fprintf(w, "database: %s, %s\n", v.Database.Backend, byteSize(v.Database.Bytes))
	}
	return nil
}

// byteSize is n in the largest binary unit that keeps it at least 1.
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB (%d bytes)", float64(n)/float64(div), "KMGTPE"[exp], n)
}
