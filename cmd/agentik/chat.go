package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/mattn/go-isatty"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/config"
	"github.com/agentik/agentik/httpapi"
)

// The terminal client and the conversation commands talk to an
// agentik.Agent: the httpapi Client of a running server (--url, token from
// AGENTIK_TOKEN), or an engine run in-process on the configured database.

const chatUsage = `usage: agentik chat [flags]

Talk to the agent. Type a message and press Enter; the answer streams as it
is written. Ctrl-C interrupts the running answer; Ctrl-C when idle, a second
Ctrl-C, or Ctrl-D exits. A tool call that needs approval is shown and asked
about: answer y, or n with an optional reason ("n not now"). With stdin not
a terminal, every line is a message, sent once the previous one is answered
(a line read while a call waits for approval is its answer), and chat exits
once all are answered.

flags:
`

const conversationsUsage = `usage: agentik conversations <command> [flags]

commands:
  list                 list conversations, newest first
  show ID              show a conversation and its last messages
  rename ID TITLE      rename a conversation
  delete ID            delete a conversation with everything it holds

flags (every command):
  --url URL            a running server (token from AGENTIK_TOKEN); default: the local database
  --agent ID           the agent whose conversations these are (default: the default agent)
  --json               machine-readable output
  --limit N            list: how many conversations; show: how many messages (default 50)
`

// target is the agent to talk to and how to release it.
type target struct {
	agent agentik.Agent
	local bool
	close func()
}

// connect returns the agent agentID ("" for the default agent) of the
// server at rawURL, or the local one.
func connect(ctx context.Context, cfg config.Config, rawURL, agentID string, getenv func(string) string, log *slog.Logger, start bool) (*target, error) {
	if agentID != "" && !config.ValidAgentID(agentID) {
		return nil, fmt.Errorf("--agent %q: want an agent id (lower-case letters, digits, - and _)", agentID)
	}
	if rawURL != "" {
		u, err := url.Parse(rawURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("--url %q: want http://host:port (optionally with the mount prefix, default /agentik)", rawURL)
		}
		switch {
		case (u.Path == "" || u.Path == "/") && agentID != "":
			u.Path = "/agents/" + agentID
		case u.Path == "" || u.Path == "/":
			u.Path = "/agentik"
		case agentID != "":
			return nil, fmt.Errorf("--agent %q: the --url %q already names an agent's path", agentID, rawURL)
		}
		var opts []httpapi.ClientOption
		if tok := getenv("AGENTIK_TOKEN"); tok != "" {
			opts = append(opts, httpapi.WithToken(tok))
		}
		c := httpapi.NewClient(strings.TrimRight(u.String(), "/"), opts...)
		if _, err := c.FetchInfo(ctx); err != nil {
			return nil, fmt.Errorf("%s: %s", u.String(), agentik.ErrorMessage(err))
		}
		return &target{agent: c, close: func() {}}, nil
	}
	return localAgent(ctx, cfg, agentID, log, start)
}

// localAgent runs the engine in-process on the configured database, wired
// like serve. With start it also resumes turns left unclosed, as a server
// would; the conversation commands leave that to the server.
func localAgent(ctx context.Context, cfg config.Config, agentID string, log *slog.Logger, start bool) (*target, error) {
	a := &app{cfg: cfg, log: log}
	ok := false
	defer func() {
		if !ok {
			a.close()
		}
	}()
	if agentID == "" {
		agentID = cfg.DefaultAgent().ID
	}
	if err := a.buildAgents(ctx, agentID); err != nil {
		return nil, err
	}
	eng := a.eng
	if start {
		if err := eng.Start(ctx); err != nil {
			return nil, err
		}
	}
	ok = true
	return &target{agent: eng, local: true, close: func() {
		// A turn still running when the user leaves is closed as
		// interrupted{shutdown}; queued ones are answered next time.
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		eng.Shutdown(sctx)
		a.close()
	}}, nil
}

// quietLogger keeps the terminal for the conversation: only warnings and
// errors of the in-process engine reach stderr.
func quietLogger(cfg config.Config, stderr io.Writer) *slog.Logger {
	level := slog.LevelWarn
	if cfg.LogLevel == "error" {
		level = slog.LevelError
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// parseInterspersed parses flags that may come before, between or after
// positional arguments (Go's flag package stops at the first positional).
// parseArgs is parseInterspersed for a command: ok false means the command
// ends now with code (exitOK after -h, exitConfig after a bad flag; the
// flag set has said why).
func parseArgs(fs *flag.FlagSet, args []string) (pos []string, code int, ok bool) {
	pos, err := parseInterspersed(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return nil, exitOK, false
	case err != nil:
		return nil, exitConfig, false
	}
	return pos, 0, true
}

func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// chat runs the terminal client.
func chat(ctx context.Context, cfg config.Config, args []string, getenv func(string) string, stdout, stderr io.Writer, log *slog.Logger) int {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, chatUsage); fs.PrintDefaults() }
	rawURL := fs.String("url", "", "a running server, e.g. http://localhost:8080 (token from AGENTIK_TOKEN); default: in-process on the local database")
	agentID := fs.String("agent", "", "the agent to talk to (its id; default: the default agent)")
	convID := fs.String("conversation", "", "resume this conversation (its last messages are shown)")
	history := fs.Int("history", 10, "with --conversation: how many of the last messages to show")
	title := fs.String("title", "", "title of the new conversation")
	temporal := fs.Bool("temporal", false, "the new conversation lives in memory only")
	plain := fs.Bool("plain", false, "plain output even on a terminal (no colours)")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "agentik chat: unexpected argument %q\n", pos[0])
		return exitConfig
	}

	// Ctrl-C belongs to the conversation from here on: the first interrupts
	// the running answer, it never kills the process outright.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)

	if *rawURL == "" {
		log = quietLogger(cfg, stderr)
	}
	t, err := connect(ctx, cfg, *rawURL, *agentID, getenv, log, true)
	if err != nil {
		fmt.Fprintln(stderr, "agentik chat:", err)
		return exitFail
	}
	defer t.close()

	var conv agentik.Conversation
	if *convID != "" {
		conv, err = t.agent.Conversation(ctx, *convID)
	} else {
		var info agentik.ConversationInfo
		info, err = t.agent.CreateConversation(ctx, agentik.CreateRequest{Title: *title, Temporal: *temporal})
		if err == nil {
			conv, err = t.agent.Conversation(ctx, info.ID)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "agentik chat:", agentik.ErrorMessage(err))
		return exitFail
	}
	defer conv.Close()

	r := &renderer{w: stdout, color: isTerminal(stdout) && !*plain && getenv("NO_COLOR") == ""}
	interactive := isTerminal(os.Stdin) && isTerminal(stdout)
	// Subscribe before showing history or sending: nothing is missed between.
	stream, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		fmt.Fprintln(stderr, "agentik chat:", agentik.ErrorMessage(err))
		return exitFail
	}
	defer stream.Close()
	if *convID != "" && *history > 0 {
		page, err := conv.Messages(ctx, agentik.MessagesRequest{Before: math.MaxInt64, Limit: min(*history, agentik.MaxMessagesLimit)})
		if err != nil {
			fmt.Fprintln(stderr, "agentik chat:", agentik.ErrorMessage(err))
			return exitFail
		}
		r.history(page.Messages)
	}
	if interactive {
		r.notef("conversation %s — Ctrl-C interrupts, Ctrl-D exits", conv.ID())
	}

	lines := make(chan string)
	go readLines(os.Stdin, lines)

	s := &chatSession{ctx: ctx, conv: conv, r: r, stderr: stderr, mine: map[string]bool{}, interactive: interactive}
	if *convID != "" {
		// What waits is known before the first line is read, so a script's
		// answer is taken as one rather than sent as a message.
		list, err := conv.Approvals(ctx)
		if err != nil {
			fmt.Fprintln(stderr, "agentik chat:", agentik.ErrorMessage(err))
			return exitFail
		}
		for _, a := range list {
			s.requested(agentik.Event{Type: agentik.EvApprovalRequested, CallID: a.CallID, Name: a.Name, Arguments: a.Arguments, ReplyTo: a.ReplyTo})
		}
	}
	return s.run(lines, sigs, stream)
}

// readLines sends each line of r; the channel is closed at EOF.
func readLines(r io.Reader, out chan<- string) {
	defer close(out)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		out <- sc.Text()
	}
}

// chatSession is the client's state: which turns it waits for and whether
// an interrupt is under way.
type chatSession struct {
	ctx         context.Context
	conv        agentik.Conversation
	r           *renderer
	stderr      io.Writer
	interactive bool

	mine         map[string]bool // user messages sent here and not yet answered
	running      bool
	interrupting bool
	eof          bool

	// Tool approval (SPEC §10): the calls waiting for an answer, in the
	// order they were requested; the first is the one asked about.
	pending  []agentik.Event
	answered map[string]bool // call ids answered from here
}

func (s *chatSession) prompt() {
	if s.interactive && len(s.mine) == 0 && !s.running {
		s.r.prompt()
	}
}

func (s *chatSession) run(lines <-chan string, sigs <-chan os.Signal, stream agentik.Stream[agentik.Event]) int {
	s.prompt()
	for {
		if s.eof && len(s.mine) == 0 {
			s.r.finishLine()
			return exitOK
		}
		if s.eof && len(s.pending) > 0 {
			// A script that ends while its turn waits for an answer would
			// wait forever; the call stays pending for another client.
			s.r.finishLine()
			fmt.Fprintf(s.stderr, "agentik chat: input ended while %s waits for approval (it stays pending)\n", s.pending[0].CallID)
			return exitFail
		}
		in := lines
		if !s.interactive && len(s.mine) > 0 && len(s.pending) == 0 {
			// A script's next line is read once its previous message is
			// answered, or as the answer to an approval.
			in = nil
		}
		select {
		case <-s.ctx.Done():
			return exitOK
		case sig := <-sigs:
			if sig == syscall.SIGTERM || !s.running || s.interrupting {
				s.r.finishLine()
				return exitOK
			}
			s.interrupting = true
			if _, err := s.conv.Interrupt(s.ctx); err != nil {
				s.r.errorf("interrupt: %s", agentik.ErrorMessage(err))
			}
		case line, ok := <-in:
			if !ok {
				lines = nil
				s.eof = true
				if s.interactive {
					// Ctrl-D on a terminal leaves now; a script's last
					// messages are waited for.
					s.r.finishLine()
					return exitOK
				}
				continue
			}
			if len(s.pending) > 0 {
				s.answer(line)
				continue
			}
			if strings.TrimSpace(line) == "" {
				s.prompt()
				continue
			}
			res, err := s.conv.Send(s.ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text(line)},
				Context: &agentik.MessageContext{Origin: &agentik.Origin{Channel: "cli"}}})
			if err != nil {
				s.r.errorf("not sent: %s", agentik.ErrorMessage(err))
				s.prompt()
				continue
			}
			s.mine[res.MessageID] = true
		case ev, ok := <-stream.C():
			if !ok {
				s.r.finishLine()
				if err := stream.Err(); err != nil {
					fmt.Fprintln(s.stderr, "agentik chat: event stream ended:", agentik.ErrorMessage(err))
				} else {
					fmt.Fprintln(s.stderr, "agentik chat: the conversation ended (deleted, or the server stopped)")
				}
				return exitFail
			}
			s.event(ev)
		}
	}
}

func (s *chatSession) event(ev agentik.Event) {
	r := s.r
	switch ev.Type {
	case agentik.EvWorking:
		s.running = true
		r.phase = ""
	case agentik.EvStartReasoning:
		r.phase = agentik.EvStartReasoning
	case agentik.EvStartResponse:
		r.phase = agentik.EvStartResponse
	case agentik.EvAppendText:
		r.text(ev.Text)
	case agentik.EvUserMessage:
		if ev.Message != nil && !s.mine[ev.Message.ID] {
			// Sent by another client of this conversation.
			r.other(agentik.JoinText(ev.Message.Content))
		}
	case agentik.EvToolCall:
		r.toolCall(ev.Message)
	case agentik.EvToolResult, agentik.EvToolFailed:
		r.toolResult(ev.Message)
	case agentik.EvError:
		if ev.Message != nil {
			r.errorf("%s: %s", ev.Message.Code, ev.Message.Details)
		}
	case agentik.EvApprovalRequested:
		s.requested(ev)
	case agentik.EvApprovalResolved:
		s.resolved(ev)
	case agentik.EvEnd:
		s.running = false
		s.interrupting = false
		if ev.Reason == agentik.EndInterrupted {
			r.notef("[interrupted]")
		}
		r.finishLine()
		delete(s.mine, ev.ReplyTo)
		s.prompt()
	}
}

// requested queues a call that waits for approval and asks about it when
// it is the first. A subscriber that reconnects is told again what waits:
// a call already queued or answered is not asked twice.
func (s *chatSession) requested(ev agentik.Event) {
	if ev.CallID == "" || s.answered[ev.CallID] {
		return
	}
	for _, p := range s.pending {
		if p.CallID == ev.CallID {
			return
		}
	}
	s.pending = append(s.pending, ev)
	if len(s.pending) == 1 {
		s.ask()
	}
}

// resolved drops an answered call; one answered elsewhere (another client,
// expiry, an interrupt) is reported. The next waiting call is asked about.
func (s *chatSession) resolved(ev agentik.Event) {
	i := slices.IndexFunc(s.pending, func(p agentik.Event) bool { return p.CallID == ev.CallID })
	if i < 0 {
		return
	}
	name := s.pending[i].Name
	s.pending = slices.Delete(s.pending, i, i+1)
	if !s.answered[ev.CallID] {
		verdict := "denied"
		if ev.Approved != nil && *ev.Approved {
			verdict = "approved"
		}
		if ev.Reason != "" {
			verdict += " (" + ev.Reason + ")"
		}
		if ev.By != "" {
			verdict += " by " + ev.By
		}
		s.r.notef("%s %s %s", name, ev.CallID, verdict)
	}
	if i == 0 && len(s.pending) > 0 {
		s.ask()
	}
}

func (s *chatSession) ask() {
	s.r.approval(s.pending[0], s.interactive)
}

// answer takes line as the answer to the first waiting call: y or yes
// approves; n or no denies, the rest of the line being the reason.
func (s *chatSession) answer(line string) {
	p := s.pending[0]
	word, reason, _ := strings.Cut(strings.TrimSpace(line), " ")
	var res agentik.Resolution
	switch strings.ToLower(word) {
	case "y", "yes":
		res.Approved = true
	case "n", "no":
		res.Reason = strings.TrimSpace(reason)
	default:
		s.r.errorf("answer y to approve, or n to deny (optionally followed by a reason)")
		s.ask()
		return
	}
	err := s.conv.Resolve(s.ctx, p.CallID, res)
	if err != nil && agentik.ErrorCode(err) != agentik.EConflict && agentik.ErrorCode(err) != agentik.ENotFound {
		// Nothing changed (a bad reason, the server unreachable): ask again.
		s.r.errorf("not answered: %s", agentik.ErrorMessage(err))
		s.ask()
		return
	}
	if err != nil {
		// Answered meanwhile by someone else, expired, or the turn is over.
		s.r.errorf("%s: %s", p.CallID, agentik.ErrorMessage(err))
	}
	if s.answered == nil {
		s.answered = map[string]bool{}
	}
	s.answered[p.CallID] = true
	if err == nil && p.ReplyTo != "" {
		// Answered here: its turn is waited for like one sent from here.
		s.mine[p.ReplyTo] = true
	}
	s.pending = s.pending[1:]
	if len(s.pending) > 0 {
		s.ask()
	}
}

// renderer writes the conversation: answers as they stream, reasoning
// dimmed, tool calls and results one compact line each. Without colour
// (not a terminal, --plain, NO_COLOR) it writes plain text and leaves
// reasoning out, so scripts get the answers alone.
type renderer struct {
	w      io.Writer
	color  bool
	phase  string
	midRow bool // the cursor is not at the start of a line
}

const (
	ansiDim   = "\x1b[2m"
	ansiCyan  = "\x1b[36m"
	ansiRed   = "\x1b[31m"
	ansiBold  = "\x1b[1m"
	ansiReset = "\x1b[0m"
)

func (r *renderer) style(code, s string) string {
	if !r.color {
		return s
	}
	return code + s + ansiReset
}

func (r *renderer) write(s string) {
	if s == "" {
		return
	}
	io.WriteString(r.w, s)
	r.midRow = !strings.HasSuffix(s, "\n")
}

func (r *renderer) finishLine() {
	if r.midRow {
		r.write("\n")
	}
}

func (r *renderer) line(s string) {
	r.finishLine()
	r.write(s + "\n")
}

func (r *renderer) prompt() {
	r.finishLine()
	r.write(r.style(ansiBold, "you> "))
	r.midRow = false // the user's Enter ends the line
}

func (r *renderer) text(s string) {
	if r.phase == agentik.EvStartReasoning {
		if r.color {
			r.write(ansiDim + s + ansiReset)
		}
		return
	}
	r.write(s)
}

func (r *renderer) notef(format string, args ...any) {
	r.line(r.style(ansiDim, fmt.Sprintf(format, args...)))
}

func (r *renderer) errorf(format string, args ...any) {
	r.line(r.style(ansiRed, "error: "+fmt.Sprintf(format, args...)))
}

func (r *renderer) other(text string) {
	r.line(r.style(ansiDim, "> "+oneLine(text, 200)))
}

func (r *renderer) toolCall(m *agentik.Message) {
	if m == nil {
		return
	}
	r.line(r.style(ansiCyan, "→ "+m.Name+" "+oneLine(string(m.Arguments), 120)))
}

func (r *renderer) toolResult(m *agentik.Message) {
	if m == nil {
		return
	}
	if m.IsError {
		r.line(r.style(ansiRed, "✗ "+m.Name+": "+oneLine(agentik.JoinText(m.Content), 120)))
		return
	}
	r.line(r.style(ansiCyan, "← "+m.Name+": "+oneLine(agentik.JoinText(m.Content), 120)))
}

// approval asks about a call that waits for approval: the tool, its
// arguments in full (folded to one line) and its call id. On a terminal the
// question is a prompt the answer is typed after.
func (r *renderer) approval(ev agentik.Event, interactive bool) {
	r.line(r.style(ansiBold, "? "+ev.Name+" "+oneLine(string(ev.Arguments), 4000)) + r.style(ansiDim, "  ("+ev.CallID+")"))
	q := "approve? [y/n, n may take a reason] "
	if !interactive {
		r.line(q)
		return
	}
	r.write(r.style(ansiBold, q))
	r.midRow = false // the user's Enter ends the line
}

// history shows past messages compactly, oldest first.
func (r *renderer) history(msgs []agentik.Message) {
	for i := range msgs {
		m := &msgs[i]
		switch m.Type {
		case agentik.MsgUser:
			r.line(r.style(ansiBold, "you> ") + agentik.JoinText(m.Content))
		case agentik.MsgAssistant:
			if m.Reasoning != "" && r.color {
				r.line(r.style(ansiDim, oneLine(m.Reasoning, 200)))
			}
			t := agentik.JoinText(m.Content)
			if m.Interrupted {
				t += r.style(ansiDim, " [interrupted]")
			}
			r.line(t)
		case agentik.MsgToolCall:
			r.toolCall(m)
		case agentik.MsgToolResult:
			r.toolResult(m)
		case agentik.MsgError:
			r.errorf("%s: %s", m.Code, m.Details)
		}
	}
	if len(msgs) > 0 {
		r.line(r.style(ansiDim, "──"))
	}
}

// oneLine folds s to one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	rs := []rune(s)
	return string(rs[:n-1]) + "…"
}

// conversations runs the conversation commands.
func conversations(ctx context.Context, cfg config.Config, args []string, getenv func(string) string, stdout, stderr io.Writer, log *slog.Logger) int {
	fs := flag.NewFlagSet("conversations", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, conversationsUsage) }
	rawURL := fs.String("url", "", "")
	agentID := fs.String("agent", "", "")
	asJSON := fs.Bool("json", false, "")
	limit := fs.Int("limit", 50, "")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	want := map[string]int{"list": 0, "show": 1, "rename": 2, "delete": 1}
	if len(pos) == 0 {
		fs.Usage()
		return exitConfig
	}
	n, known := want[pos[0]]
	if !known || len(pos)-1 != n || *limit < 1 {
		if !known {
			fmt.Fprintf(stderr, "agentik conversations: unknown command %q\n\n", pos[0])
		} else if *limit < 1 {
			fmt.Fprintf(stderr, "agentik conversations: --limit must be at least 1\n\n")
		} else {
			fmt.Fprintf(stderr, "agentik conversations %s: want %d argument(s), got %d\n\n", pos[0], n, len(pos)-1)
		}
		fs.Usage()
		return exitConfig
	}
	if *rawURL == "" {
		log = quietLogger(cfg, stderr)
	}
	t, err := connect(ctx, cfg, *rawURL, *agentID, getenv, log, false)
	if err != nil {
		fmt.Fprintln(stderr, "agentik conversations:", err)
		return exitFail
	}
	defer t.close()
	out := &cmdOut{w: stdout, json: *asJSON}
	if err := runConversations(ctx, t.agent, pos, *limit, out); err != nil {
		fmt.Fprintf(stderr, "agentik conversations %s: %s\n", pos[0], agentik.ErrorMessage(err))
		return exitFail
	}
	return exitOK
}

type cmdOut struct {
	w    io.Writer
	json bool
}

func (o *cmdOut) printJSON(v any) error {
	enc := json.NewEncoder(o.w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func runConversations(ctx context.Context, agent agentik.Agent, pos []string, limit int, out *cmdOut) error {
	switch pos[0] {
	case "list":
		var all []agentik.ConversationInfo
		next := ""
		for len(all) < limit {
			page, err := agent.ListConversations(ctx, agentik.ListRequest{Limit: min(limit-len(all), 100), Before: next})
			if err != nil {
				return err
			}
			all = append(all, page.Conversations...)
			if next = page.Next; next == "" || len(page.Conversations) == 0 {
				break
			}
		}
		if out.json {
			if all == nil {
				all = []agentik.ConversationInfo{}
			}
			return out.printJSON(map[string]any{"conversations": all})
		}
		for _, c := range all {
			title := c.Title
			if title == "" {
				title = "(untitled)"
			}
			state := ""
			if c.Working {
				state = "  [working]"
			}
			fmt.Fprintf(out.w, "%s  %s  %s%s\n", c.ID, c.UpdatedAt.Local().Format("2006-01-02 15:04"), title, state)
		}
		return nil
	case "show":
		conv, err := agent.Conversation(ctx, pos[1])
		if err != nil {
			return err
		}
		defer conv.Close()
		info, err := conv.Info(ctx)
		if err != nil {
			return err
		}
		page, err := conv.Messages(ctx, agentik.MessagesRequest{Before: math.MaxInt64, Limit: min(limit, agentik.MaxMessagesLimit)})
		if err != nil {
			return err
		}
		if out.json {
			if page.Messages == nil {
				page.Messages = []agentik.Message{}
			}
			return out.printJSON(map[string]any{"conversation": info, "messages": page.Messages, "has_more": page.HasMore})
		}
		title := info.Title
		if title == "" {
			title = "(untitled)"
		}
		fmt.Fprintf(out.w, "%s  %s\n", info.ID, title)
		if page.HasMore {
			fmt.Fprintf(out.w, "(earlier messages not shown; --limit to see more)\n")
		}
		(&renderer{w: out.w}).history(page.Messages)
		return nil
	case "rename":
		info, err := agent.RenameConversation(ctx, pos[1], pos[2])
		if err != nil {
			return err
		}
		if out.json {
			return out.printJSON(info)
		}
		fmt.Fprintf(out.w, "%s  %s\n", info.ID, info.Title)
		return nil
	case "delete":
		if err := agent.DeleteConversation(ctx, pos[1]); err != nil {
			return err
		}
		if out.json {
			return out.printJSON(map[string]any{"deleted": pos[1]})
		}
		fmt.Fprintf(out.w, "deleted %s\n", pos[1])
		return nil
	}
	return nil
}
