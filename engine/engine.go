// Package engine is the turn engine: it implements agentik.Agent over a
// Store, a Bus, an LLM and a tool registry.
//
// Guarantees: a user message is acknowledged only after it is committed; each
// journal message is committed in the same transaction as its durable event;
// durable events of a conversation are published in cursor order after their
// commit; one turn runs at a time per conversation; every turn ends with an
// assistant_message, an error or an interrupted event — a turn cut short by a
// crash is resumed (or closed) at the next start.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/internal/workers"
	"github.com/agentik/agentik/tools"
)

// Restart policies for turns found unclosed at start.
const (
	RestartResume    = "resume"    // answer them again, in order
	RestartInterrupt = "interrupt" // close them with interrupted{reason:restart}
)

// Options configure an Engine. Store, Bus and LLM are required.
type Options struct {
	Store agentik.Store
	Bus   agentik.Bus
	LLM   agentik.LLM
	Tools *tools.Registry // nil: no tools

	// Temporal keeps the temporal conversations, which must never touch
	// disk: memstore.Store, chosen by the caller like Store (required). Its
	// cursors are its own: the engine neither compares them with
	// Store's nor publishes its agent events.
	Temporal agentik.Store

	// BusSequencesAgentEvents says that Store returns agent events
	// unnumbered (Cursor 0) and that Bus numbers them after their commit
	// and delivers them in cursor order: postgres.Store with postgres.Bus
	// (docs/postgres.md). The engine then hands each one to the Bus as its
	// write returns. false: Store numbers agent events in the commit, and
	// the engine publishes them in cursor order itself (agentorder.go), as a
	// single-writer store (SQLite, memstore) needs.
	BusSequencesAgentEvents bool

	Info         agentik.AgentInfo // ID, Name, Description, Version; Model and capabilities are filled in
	SystemPrompt string
	// Context adds to the system prompt of every model call (memory,
	// shared state: agentik.ContextSource). With any, no model call is
	// sent early: its system context is read when the turn calls.
	Context []agentik.ContextSource

	MaxToolRounds int           // model calls per turn; default 16
	ToolTimeout   time.Duration // per tool call; default 60s
	TemporalIdle  time.Duration // idle temporal conversations are closed; default 30m
	OnRestart     string        // RestartResume (default) or RestartInterrupt
	ImageInput    bool          // the model takes image content

	// Context management (see docs/context.md and compact.go).
	ContextTokens int    // the model's context budget; 0: LLM.Info().ContextTokens, else 32768
	SummaryPrompt string // system prompt of compaction summaries; default DefaultSummaryPrompt
	SendReasoning bool   // feed stored reasoning back to the model; default off
	MaxImageBytes int    // limit of one image in a user message; default agentik.DefaultMaxImageBytes

	// Per-principal limits (agentik.Limits); zero means unlimited. A
	// request over a limit is refused (ERateLimited with RetryAfter, or
	// ETooLarge / EUnavailable for memory) and stores nothing. Limiter,
	// when set, replaces them all (e.g. postgres.Limiter, limits shared by
	// a cluster); nil: a LocalLimiter of these fields.
	MaxConcurrentTurns     int // conversations with a running or queued turn
	MessagesPerMinute      int
	ConversationsPerMinute int
	TemporalBytes          int64 // held by one principal's temporal conversations
	TemporalBytesTotal     int64 // held by all temporal conversations
	Limiter                agentik.Limiter
	// MaxTextBytes bounds the text of one user message (all its parts);
	// default agentik.DefaultMaxTextBytes.
	MaxTextBytes int

	// Tool approval (SPEC §10, approval.go): which calls wait for a
	// person's yes (ask), run (allow, the default) or are hidden (deny),
	// and how long a call waits before it is denied as expired (0: no
	// limit).
	Approval        agentik.ApprovalPolicy
	ApprovalTimeout time.Duration

	Logger *slog.Logger

	// Cluster, when set, is the Coordinator of a Store that other
	// processes share (postgres.Coordinator): turns run where it says.
	// nil: this engine is the store's only user, and a local Coordinator
	// runs them here (coordinator.go).
	Cluster agentik.Coordinator

	// Observer receives turns, model calls and tool calls for metrics and
	// traces; nil: agentik.NopObserver.
	Observer agentik.Observer
	// Tracer opens the spans of turns, model calls and tool calls; nil:
	// no tracing, at no cost.
	Tracer agentik.Tracer
}

func (o *Options) setDefaults() error {
	if o.Store == nil || o.Bus == nil || o.LLM == nil {
		return errors.New("engine: Store, Bus and LLM are required")
	}
	if o.Tools == nil {
		o.Tools = tools.NewRegistry()
	}
	if o.MaxToolRounds <= 0 {
		o.MaxToolRounds = 16
	}
	if o.ToolTimeout <= 0 {
		o.ToolTimeout = 60 * time.Second
	}
	if o.TemporalIdle <= 0 {
		o.TemporalIdle = 30 * time.Minute
	}
	if o.ContextTokens <= 0 {
		o.ContextTokens = o.LLM.Info().ContextTokens
	}
	if o.ContextTokens <= 0 {
		o.ContextTokens = DefaultContextTokens
	}
	if o.SummaryPrompt == "" {
		o.SummaryPrompt = DefaultSummaryPrompt
	}
	if o.MaxTextBytes <= 0 {
		o.MaxTextBytes = agentik.DefaultMaxTextBytes
	}
	if o.Limiter == nil {
		o.Limiter = NewLocalLimiter(agentik.Limits{ConversationsPerMinute: o.ConversationsPerMinute, MessagesPerMinute: o.MessagesPerMinute,
			MaxConcurrentTurns: o.MaxConcurrentTurns, TemporalBytes: o.TemporalBytes, TemporalBytesTotal: o.TemporalBytesTotal})
	}
	if o.Temporal == nil {
		return errors.New("engine: Options.Temporal is required (memstore.New())")
	}
	if o.MaxImageBytes <= 0 {
		o.MaxImageBytes = agentik.DefaultMaxImageBytes
	}
	if err := o.Approval.Validate(); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	switch o.OnRestart {
	case "":
		o.OnRestart = RestartResume
	case RestartResume, RestartInterrupt:
	default:
		return fmt.Errorf("engine: unknown restart policy %q", o.OnRestart)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Observer == nil {
		o.Observer = agentik.NopObserver{}
	}
	if o.Info.ID == "" {
		o.Info.ID = "agentik"
	}
	if o.Info.Name == "" {
		o.Info.Name = "Agentik"
	}
	o.Info.Model = o.LLM.Info().Name
	o.Info.Capabilities = agentik.Capabilities{ImageInput: o.ImageInput, Streaming: true}
	return nil
}

// SystemPrompt is the system prompt of the engine's model calls.
func (e *Engine) SystemPrompt() string {
	if p := e.prompt.Load(); p != nil {
		return *p
	}
	return e.opts.SystemPrompt
}

// SetSystemPrompt replaces the system prompt from the next model call on
// (a configuration reload); running turns keep theirs for the calls already
// made. Safe for concurrent use.
func (e *Engine) SetSystemPrompt(p string) { e.prompt.Store(&p) }

// Engine is the agent. Create it with New, call Start, and Shutdown at the end.
type Engine struct {
	opts   Options
	prompt atomic.Pointer[string] // set by SetSystemPrompt; nil: opts.SystemPrompt
	log    *slog.Logger
	temp   agentik.Store // temporal conversations: Options.Temporal

	coord     agentik.Coordinator // of Store: Options.Cluster, else local
	tempCoord agentik.Coordinator // of temp: always local

	// baseCtx parents every turn and stream; cancelled by Shutdown.
	baseCtx    context.Context
	cancelBase context.CancelFunc

	turns   sync.WaitGroup // running turn loops
	loops   *workers.Pool  // the goroutines they run on
	streams sync.WaitGroup // stream goroutines
	janitor sync.WaitGroup

	mu     sync.Mutex
	live   map[string]*conv
	loadMu sync.RWMutex // loads (read) against deletes (write)

	streamsClosed bool // Shutdown waits for streams: no new ones
	draining      bool
	started       bool

	limits limits

	// agentMu guards the publication of agent events, in cursor order
	// (agentorder.go), and what a new agent stream starts from.
	agentMu       sync.Mutex
	lastAgentSeen int64
	agentNext     uint64           // the next write's ticket
	agentLow      uint64           // the lowest ticket not back
	agentBack     []bool           // per ticket from agentLow: the write is back
	agentHeld     []heldAgentEvent // committed, waiting for earlier tickets; by cursor

	// hook, set by tests only (export_test.go) before Start: called by a
	// turn loop at the named point with the user message of the turn.
	hook func(point, replyTo string)
}

var _ agentik.Agent = (*Engine)(nil)

// testHook calls the test's hook, if any.
func (e *Engine) testHook(point, replyTo string) {
	if e.hook != nil {
		e.hook(point, replyTo)
	}
}

// New validates opts and returns an Engine. It does no I/O.
func New(opts Options) (*Engine, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &Engine{
		opts:       opts,
		log:        opts.Logger,
		temp:       opts.Temporal,
		baseCtx:    ctx,
		cancelBase: cancel,
		live:       make(map[string]*conv),
		limits:     limits{opts.Limiter},
		loops:      workers.New(workers.Idle),
	}
	e.coord = opts.Cluster
	if e.coord == nil {
		e.coord = localCoordinator{store: opts.Store, bus: opts.Bus}
	}
	e.tempCoord = localCoordinator{store: e.temp, bus: opts.Bus}
	return e, nil
}

// Start reads the store's state, starts the Coordinator and resumes (or
// closes, per OnRestart) every turn left unclosed by a previous process, in
// order. Call it once.
func (e *Engine) Start(ctx context.Context) error {
	e.mu.Lock()
	if e.started {
		e.mu.Unlock()
		return errors.New("engine: already started")
	}
	e.started = true
	e.mu.Unlock()

	last, err := e.opts.Store.LastAgentCursor(ctx)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	e.agentMu.Lock()
	e.lastAgentSeen = last
	e.agentMu.Unlock()
	if err := e.coord.Start(e.callbacks()); err != nil {
		return fmt.Errorf("start: coordinator: %w", err)
	}
	if err := e.recover(ctx); err != nil {
		return err
	}
	e.janitor.Add(1)
	go e.sweepTemporal()
	return nil
}

// Shutdown stops accepting messages, lets running turns finish until ctx ends,
// then interrupts the rest with reason shutdown and ends every stream.
// Messages queued but not started stay unclosed and are answered at the next
// start. Idempotent.
func (e *Engine) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	e.draining = true
	convs := slices.Collect(maps.Values(e.live))
	e.mu.Unlock()
	if k, ok := e.coord.(agentik.LeaseKeeper); ok {
		k.GiveBackKept(ctx) // a draining loop keeps none (conv.keep)
	}

	drained := make(chan struct{})
	go func() { e.turns.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-ctx.Done():
		for _, c := range convs {
			c.interrupt(agentik.ReasonShutdown)
		}
		<-drained
	}
	e.cancelBase()
	e.loops.Close()
	e.mu.Lock()
	e.streamsClosed = true
	e.mu.Unlock()
	e.streams.Wait()
	e.janitor.Wait()
	return nil
}

// Info describes the agent.
func (e *Engine) Info() agentik.AgentInfo { return e.opts.Info }

func (e *Engine) storeFor(temporal bool) agentik.Store {
	if temporal {
		return e.temp
	}
	return e.opts.Store
}

// CreateConversation creates a conversation owned by the caller.
func (e *Engine) CreateConversation(ctx context.Context, req agentik.CreateRequest) (agentik.ConversationInfo, error) {
	if err := e.accepting(); err != nil {
		return agentik.ConversationInfo{}, err
	}
	if err := validTitle(req.Title); err != nil {
		return agentik.ConversationInfo{}, err
	}
	id := req.ID
	if id == "" {
		id = agentik.NewID()
	} else if !agentik.ValidID(id) {
		return agentik.ConversationInfo{}, agentik.Errorf(agentik.EInvalid, "conversation id must be a UUID")
	} else if _, err := e.load(ctx, id); err == nil {
		return agentik.ConversationInfo{}, agentik.Errorf(agentik.EConflict, "conversation %s exists", id)
	}
	if err := e.limits.AdmitConversation(agentik.PrincipalFrom(ctx)); err != nil {
		return agentik.ConversationInfo{}, err
	}
	now := agentik.Now()
	rec := agentik.ConversationRecord{
		ID:        id,
		Owner:     agentik.PrincipalFrom(ctx),
		Title:     req.Title,
		Temporal:  req.Temporal,
		CreatedAt: now,
		UpdatedAt: now,
	}
	if err := checkHistory(req.History); err != nil {
		return agentik.ConversationInfo{}, err
	}
	c, err := e.create(ctx, rec)
	if err != nil {
		return agentik.ConversationInfo{}, err
	}
	if len(req.History) > 0 {
		if err := c.copyPath(ctx, req.History, now); err != nil {
			return agentik.ConversationInfo{}, err
		}
		return c.snapshot(ctx)
	}
	return c.info(rec), nil
}

// checkHistory refuses a CreateRequest.History the journal cannot take as
// given: other than user and assistant messages, an answer to no user
// message before it, bad content, or a last message that is no answer.
func checkHistory(h []agentik.Message) error {
	users := map[string]bool{}
	for i, m := range h {
		switch {
		case m.Type == agentik.MsgUser && agentik.ValidID(m.ID):
			users[m.ID] = true
		case m.Type == agentik.MsgAssistant && users[m.ReplyTo]:
		default:
			return agentik.Errorf(agentik.EInvalid, "history[%d]: want a user message or an answer to one before it", i)
		}
		if err := agentik.ValidateContent(m.Content); err != nil && m.Type == agentik.MsgUser {
			return err
		}
	}
	if n := len(h); n > 0 && h[n-1].Type != agentik.MsgAssistant {
		return agentik.Errorf(agentik.EInvalid, "history: the last message must be an answer")
	}
	return nil
}

// create stores the conversation rec, publishes its created event and
// makes it live.
func (e *Engine) create(ctx context.Context, rec agentik.ConversationRecord) (*conv, error) {
	c := e.newConv(rec)
	// A conversation made here has no working memory yet: its first turn
	// need not read it (and can send its model call early). A process that
	// shares the store forgets this when another one takes the lease.
	c.memoryLoaded = true
	aw := e.beginAgentWrite(rec.Temporal)
	ev, err := e.storeFor(rec.Temporal).CreateConversation(ctx, rec)
	if err == nil {
		e.mu.Lock()
		e.live[rec.ID] = c
		e.mu.Unlock()
		aw.done(&ev)
	} else {
		aw.done(nil)
	}
	if err != nil {
		return nil, fmt.Errorf("create conversation: %w", err)
	}
	return c, nil
}

// Conversation returns a handle to the caller's conversation id.
func (e *Engine) Conversation(ctx context.Context, id string) (agentik.Conversation, error) {
	c, err := e.get(ctx, id)
	if err != nil {
		return nil, err
	}
	return &handle{c: c}, nil
}

var _ agentik.KeyFinder = (*Engine)(nil)

// FindKeys finds the caller's persistent conversations by lookup keys
// (agentik.KeyFinder).
func (e *Engine) FindKeys(ctx context.Context, keys []string) (map[string]agentik.KeyRef, error) {
	refs, err := e.opts.Store.FindKeys(ctx, agentik.PrincipalFrom(ctx), keys)
	if err != nil {
		return nil, fmt.Errorf("find keys: %w", err)
	}
	return refs, nil
}

// ListConversations pages the caller's persistent conversations, newest
// first. Temporal conversations are not listed.
func (e *Engine) ListConversations(ctx context.Context, req agentik.ListRequest) (agentik.ConversationList, error) {
	if req.Limit <= 0 {
		req.Limit = 50
	}
	if req.Limit > 500 {
		req.Limit = 500
	}
	if req.Before != "" {
		if _, _, err := agentik.ParseListToken(req.Before); err != nil {
			return agentik.ConversationList{}, err
		}
	}
	recs, next, err := e.opts.Store.ListConversations(ctx, agentik.PrincipalFrom(ctx), req.Limit, req.Before)
	if err != nil {
		return agentik.ConversationList{}, fmt.Errorf("list conversations: %w", err)
	}
	out := agentik.ConversationList{Conversations: make([]agentik.ConversationInfo, 0, len(recs)), Next: next}
	live := make([]*conv, len(recs))
	e.mu.Lock()
	for i, r := range recs {
		live[i] = e.live[r.ID]
	}
	e.mu.Unlock()
	// busyHere takes conv.mu, which is never taken under e.mu.
	for i, r := range recs {
		info := infoOf(r, e.opts.ImageInput)
		if live[i] != nil {
			info.Working = live[i].busyHere()
		}
		if !info.Working && !r.Temporal {
			_, info.Working = e.coord.Running(r.ID) // runs in another process
		}
		out.Conversations = append(out.Conversations, info)
	}
	return out, nil
}

// DeleteConversation cancels any running turn, deletes the conversation with
// everything it owns, and ends its streams.
func (e *Engine) DeleteConversation(ctx context.Context, id string) error {
	c, err := e.get(ctx, id)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.queue, c.pending = nil, nil // nothing left to answer
	c.mu.Unlock()
	c.interrupt(agentik.ReasonUser)
	e.loadMu.Lock()
	aw := e.beginAgentWrite(c.temporal)
	ev, err := c.store.DeleteConversation(ctx, id, agentik.Now())
	if err == nil {
		e.mu.Lock()
		delete(e.live, id)
		e.mu.Unlock()
		aw.done(&ev)
	} else {
		aw.done(nil)
	}
	e.loadMu.Unlock()
	if err != nil {
		return fmt.Errorf("delete conversation: %w", err)
	}
	c.releaseTemporal()
	c.closeStreams()
	return nil
}

// RenameConversation sets the title of the caller's conversation.
func (e *Engine) RenameConversation(ctx context.Context, id, title string) (agentik.ConversationInfo, error) {
	c, err := e.get(ctx, id)
	if err != nil {
		return agentik.ConversationInfo{}, err
	}
	return c.rename(ctx, title)
}

// accepting returns EUnavailable once Shutdown has begun.
func (e *Engine) accepting() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.draining {
		return agentik.Errorf(agentik.EUnavailable, "the agent is shutting down")
	}
	return nil
}

// get returns the live conversation id if the caller owns it.
func (e *Engine) get(ctx context.Context, id string) (*conv, error) {
	if !agentik.ValidID(id) {
		return nil, agentik.Errorf(agentik.ENotFound, "conversation not found")
	}
	c, err := e.load(ctx, id)
	if err != nil {
		return nil, err
	}
	if c.owner != agentik.PrincipalFrom(ctx) {
		return nil, agentik.Errorf(agentik.ENotFound, "conversation not found")
	}
	return c, nil
}

// liveConv returns the live struct of conversation id, nil when it is not
// live.
func (e *Engine) liveConv(id string) *conv {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.live[id]
}

// lockLive is liveConv with the conversation's mutex held; the caller
// unlocks it.
func (e *Engine) lockLive(id string) *conv {
	c := e.liveConv(id)
	if c != nil {
		c.mu.Lock()
	}
	return c
}

// load returns the live struct of conversation id, reading it from the store
// when it is not live yet.
func (e *Engine) load(ctx context.Context, id string) (*conv, error) {
	if c := e.liveConv(id); c != nil {
		return c, nil
	}
	// A delete cannot run between reading the record and making it live:
	// the deleted conversation would come back to life.
	e.loadMu.RLock()
	defer e.loadMu.RUnlock()
	rec, err := e.opts.Store.GetConversation(ctx, id)
	if err != nil {
		if agentik.IsNotFound(err) {
			if e.opts.Cluster != nil {
				// Temporal conversations live in the memory of the process
				// that created them: another process cannot tell one from
				// an id that never existed, so it says so.
				return nil, agentik.Errorf(agentik.ENotFound, "conversation not found (a temporal conversation is reachable only through the process that created it)")
			}
			return nil, agentik.Errorf(agentik.ENotFound, "conversation not found")
		}
		return nil, fmt.Errorf("load conversation: %w", err)
	}
	last, err := e.opts.Store.LastCursor(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("load conversation: %w", err)
	}
	fresh := e.newConv(rec)
	fresh.lastPublished = last
	e.mu.Lock()
	defer e.mu.Unlock()
	if c := e.live[id]; c != nil {
		return c, nil // loaded concurrently
	}
	e.live[id] = fresh
	return fresh, nil
}

// publishAgentLocked publishes ev; the caller holds agentMu. Agent events of
// temporal conversations come from the memory store, whose cursors are not
// comparable with the database's: they are published but not tracked.
func (e *Engine) publishAgentLocked(ev agentik.AgentEvent, temporal bool) {
	if temporal {
		return // temporal conversations emit no agent events (see docs)
	}
	if ev.Cursor == 0 {
		if e.opts.BusSequencesAgentEvents {
			e.opts.Bus.PublishAgent(ev) // the Bus numbers it, then delivers it
		}
		return
	}
	if ev.Cursor > e.lastAgentSeen {
		e.lastAgentSeen = ev.Cursor
	}
	e.opts.Bus.PublishAgent(ev)
}

// sweepTemporal closes temporal conversations idle past TemporalIdle and
// frees the cached working memory of other conversations idle that long.
func (e *Engine) sweepTemporal() {
	defer e.janitor.Done()
	every := e.opts.TemporalIdle / 4
	if every > time.Minute {
		every = time.Minute
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-e.baseCtx.Done():
			return
		case now := <-t.C:
			e.mu.Lock()
			convs := make([]*conv, 0, len(e.live))
			for _, c := range e.live {
				convs = append(convs, c)
			}
			e.mu.Unlock()
			// conv.mu is never taken under e.mu: check each conversation
			// alone, then remove the idle temporal ones that are still live.
			var idle []*conv
			for _, c := range convs {
				if c.temporal && c.idleSince(now) > e.opts.TemporalIdle {
					idle = append(idle, c)
				} else if !c.temporal {
					c.dropMemoryIfIdle(now, e.opts.TemporalIdle)
				}
			}
			e.mu.Lock()
			for i, c := range idle {
				if e.live[c.id] != c {
					idle[i] = nil
					continue
				}
				delete(e.live, c.id)
			}
			e.mu.Unlock()
			for _, c := range idle {
				if c == nil {
					continue
				}
				c.interrupt(agentik.ReasonUser)
				if _, err := e.temp.DeleteConversation(e.baseCtx, c.id, agentik.Now()); err != nil && !agentik.IsNotFound(err) {
					e.log.Warn("close idle temporal conversation", "conversation", c.id, "err", err)
				}
				c.releaseTemporal()
				c.closeStreams()
			}
		}
	}
}

func infoOf(r agentik.ConversationRecord, images bool) agentik.ConversationInfo {
	info := agentik.ConversationInfo{
		ID:                 r.ID,
		Title:              r.Title,
		Temporal:           r.Temporal,
		CreatedAt:          r.CreatedAt,
		UpdatedAt:          r.UpdatedAt,
		SupportsImageInput: images,
		Head:               r.Head,
		ForkedFrom:         r.ForkedFrom,
		Owner:              r.Owner,
	}
	if r.Tokens != (agentik.TurnTokens{}) {
		t := r.Tokens
		info.Tokens = &t
	}
	return info
}

// maxTitle bounds a conversation title, in bytes.
const maxTitle = 1024

// validTitle refuses titles no store should hold: NUL bytes (PostgreSQL
// text cannot), invalid UTF-8, or more than maxTitle bytes.
func validTitle(t string) error {
	switch {
	case len(t) > maxTitle:
		return agentik.Errorf(agentik.EInvalid, "title is longer than %d bytes", maxTitle)
	case !utf8.ValidString(t):
		return agentik.Errorf(agentik.EInvalid, "title is not valid UTF-8")
	case strings.ContainsRune(t, 0):
		return agentik.Errorf(agentik.EInvalid, "title contains a NUL character")
	}
	return nil
}

// RunsHere reports whether this process runs (or holds parked) a turn of
// conversation id: for administration (GET /admin/turns).
func (e *Engine) RunsHere(id string) bool {
	c := e.lockLive(id)
	if c == nil {
		return false
	}
	defer c.mu.Unlock()
	return c.running != nil || c.parked != nil
}
