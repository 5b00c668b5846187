package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/bus"
	"github.com/agentik/agentik/storeutil"
	"github.com/jackc/pgx/v5"
)

// DefaultPollInterval is how often a Bus checks the cursor counters for
// events whose notification was lost (the sender died between its commit
// and its NOTIFY, or this process's listening connection was down).
const DefaultPollInterval = time.Second

// BusOptions tune a Bus. Zero values take the defaults.
type BusOptions struct {
	PollInterval time.Duration
	Logger       *slog.Logger

	// sequence replaces the sequencer's statement (tests).
	sequence func(context.Context, querier) (numbered int, last int64, busy bool, err error)
	// handling, when set, runs before each notification heard is handled
	// (tests: it can hold the listener back).
	handling func()
}

// Bus is the cross-process agentik.Bus. Events published in this process are
// delivered to its subscribers directly, in publish order, and announced to
// the other processes with NOTIFY. A durable event's notification carries
// the event itself, signed, with its predecessor's cursor (a "d" entry; see
// Publish), or only its conversation and cursor when it does not fit: a
// receiving process that delivered up to the predecessor delivers it as
// sent, and otherwise reads the events from the store, so the events table
// stays the source of truth and a lost notification delays delivery (until
// the next notification or poll) but loses nothing. Online events travel in
// the notification itself.
//
// Ordering: every process delivers each conversation's durable events in
// cursor order, following each conversation it has subscribers for on its
// own: cursors commit in order within a conversation (migrations/0004), so
// once cursor c of a conversation is visible, every smaller one of it is. A
// local durable event whose predecessor in its conversation (as the store
// recorded at commit) is not the last one delivered — another process
// committed in between — is delivered after the events before it are read
// from the store. Agent events are numbered after commit by the sequencer
// (qSequence), which this Bus runs whenever this process committed some:
// their cursors then increase in commit order of the numbering, so they are
// delivered by one counter, in cursor order. An engine on this Bus and its
// Store is told so (engine.Options.BusSequencesAgentEvents): it hands each
// unnumbered agent event to PublishAgent as its write returns, without
// ordering its commits.
//
// If the store cannot be read, the subscribers of the conversations that may
// have missed events are cut off (their channel closes), as the Bus contract
// asks: they resume from their last cursor.
type Bus struct {
	s        *Store
	local    *bus.Bus
	channel  string
	poll     time.Duration
	log      *slog.Logger
	control  atomic.Pointer[func(notification)] // set by a Coordinator
	foreign  atomic.Pointer[func(string, bool)] // set by a Coordinator: another process committed in a conversation (notified: heard now, not polled)
	seq      atomic.Uint64
	number   func(context.Context, querier) (int, int64, bool, error) // the sequencer's statement
	handling func()                                                   // BusOptions.handling

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// subscribers by conversation, with what was delivered to them, so
	// delivery reads only the events somebody here waits for, and cuts them
	// off when it cannot.
	subMu  sync.Mutex
	convs  map[string]*convState
	agents map[*agentSub]struct{}

	// turns other processes run, by conversation, and the conversations
	// whose turn this process runs, by the message it answers (see
	// turns.go).
	turnMu sync.Mutex
	turns  map[string]*remoteTurn
	mine   map[string]string

	// Items to deliver, in order, by lane: a conversation's items go to the
	// lane of its id (so its events stay in order while another
	// conversation's catch-up waits for the store), agent events to the
	// last lane. Each lane is drained by a deliver goroutine of its own.
	lanes []*lane

	// out: notifications to send, in order; drained by send.
	outMu   sync.Mutex
	out     []outEntry
	outWake chan struct{}

	// seqWake wakes the sequencer: this process committed agent events.
	seqWake chan struct{}

	// Owned by the agent lane's deliver: every agent-event cursor up to it
	// has been delivered (or nobody here followed agent events then).
	agentDelivered int64

	// eventReads counts the reads of conversations' events (catchUpEvents).
	eventReads atomic.Int64

	// key signs and checks the durable events sent whole (signDurable).
	key []byte
}

// lane is one delivery queue and its wake-up.
type lane struct {
	mu   sync.Mutex
	in   []item
	wake chan struct{}
}

// conversationLanes is how many lanes deliver conversations' events: up to
// that many catch-up reads of different conversations run at once.
const conversationLanes = 4

// convState is one conversation followed here: its subscribers and the
// cursor up to which its events were delivered to them (at the first
// subscription, the conversation's last cursor then). Guarded by subMu.
type convState struct {
	subs      map[*convSub]struct{}
	delivered int64
}

var _ agentik.Bus = (*Bus)(nil)

// maxQueue bounds the delivery and notification queues: past it online
// events are dropped (durable ones are never queued without bound: their
// notifications coalesce and the store keeps them).
const maxQueue = 1 << 16

type itemKind int

const (
	itemEvent   itemKind = iota // a local event, durable or online
	itemAgent                   // a local agent event with its cursor
	itemRemote                  // an online event of another process
	itemCatchUp                 // durable events are committed (see item)
	itemDurable                 // a durable event of another process, after prev
)

type item struct {
	kind  itemKind
	ev    agentik.Event
	prev  int64  // itemDurable: the cursor before ev in its conversation
	raw   string // itemRemote read by its head: the entry (notification.raw)
	agent agentik.AgentEvent
	// itemCatchUp: events of these conversations up to these cursors, and
	// agent events up to agents.
	events []convCursor
	agents int64
}

// convCursor is a conversation and a cursor of it.
type convCursor struct {
	conv   string
	cursor int64
}

// NewBus starts the Bus of store s: a listening connection of its own, a
// sender of notifications and a deliverer. Close stops them.
func NewBus(ctx context.Context, s *Store, opts BusOptions) (*Bus, error) {
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	b := &Bus{
		s:        s,
		local:    bus.New(),
		channel:  "agentik " + s.schema,
		poll:     opts.PollInterval,
		log:      opts.Logger,
		convs:    make(map[string]*convState),
		agents:   make(map[*agentSub]struct{}),
		turns:    make(map[string]*remoteTurn),
		mine:     make(map[string]string),
		outWake:  make(chan struct{}, 1),
		seqWake:  make(chan struct{}, 1),
		number:   opts.sequence,
		handling: opts.handling,
	}
	if b.number == nil {
		b.number = sequenceUnlessBusy
	}
	if err := s.pool.QueryRow(ctx, qAgentCounter).Scan(&b.agentDelivered); err != nil {
		return nil, fmt.Errorf("start bus: %w", classify(err))
	}
	if err := s.pool.QueryRow(ctx, qBusKey).Scan(&b.key); err != nil {
		return nil, fmt.Errorf("start bus: %w", classify(err))
	}
	// Listening before NewBus returns: online events travel only in
	// notifications, so a process that serves before it listens would
	// never hear those sent in between (a poll catches up durable events
	// only).
	conn, err := b.connectListening(ctx)
	if err != nil {
		return nil, fmt.Errorf("start bus: %w", classify(err))
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	for range conversationLanes + 1 {
		b.lanes = append(b.lanes, &lane{wake: make(chan struct{}, 1)})
	}
	// The first poll before NewBus returns, so that it never races with
	// the first subscriptions (it wakes the sequencer for agent events a
	// dead process left unnumbered).
	if err := b.pollOnce(conn); err != nil {
		b.cancel()
		conn.Close(context.Background())
		return nil, fmt.Errorf("start bus: %w", classify(err))
	}
	b.wg.Add(3 + len(b.lanes))
	for _, l := range b.lanes {
		go b.deliver(l)
	}
	go b.send()
	go b.listen(conn, time.Now())
	go b.sequencer()
	return b, nil
}

// Close stops the Bus's goroutines and closes its connection. Subscribers
// stay registered; their owners close them. Idempotent.
func (b *Bus) Close() {
	b.cancel()
	b.wg.Wait()
}

// Publish delivers ev to this process's subscribers and announces it to the
// other processes. It never blocks on a subscriber or the database.
//
// A durable event goes to the other processes whole with the cursor of its
// predecessor in its conversation (as this process's commit recorded it),
// so a process that delivered up to that predecessor delivers it without
// reading the store (itemDurable, deliverAfter); one that fits no notification, or whose
// predecessor is not known here, is announced by its cursor only.
func (b *Bus) Publish(ev agentik.Event) {
	if ev.Cursor == 0 {
		b.enqueue(item{kind: itemEvent, ev: ev}, true)
		// What the others hear says which of this process's commits it
		// came before: a subscriber whose replay holds a later one drops
		// it (the engine's staleOnline).
		ev.SentBefore = b.s.states.last(ev.ConversationID) + 1
		if ev.Type == agentik.EvAppendText {
			b.queueDelta(ev)
			return
		}
		b.queueOut(onlineEntries(ev)...)
		return
	}
	// Before the event is queued here: delivering it takes its
	// predecessor from the chain.
	prev, known := b.s.chain.peek(ev.Cursor)
	b.enqueue(item{kind: itemEvent, ev: ev}, false)
	if known {
		if e := durableEntry(b.key, ev, prev); e != "" && b.queueOut(e) {
			return
		}
	}
	b.notifyEvent(ev.ConversationID, ev.Cursor)
}

// PublishAgent delivers ev here and announces it to the other processes. An
// event without a cursor (as this package's Store returns them) wakes the
// sequencer, which numbers it; it is delivered from the store then.
func (b *Bus) PublishAgent(ev agentik.AgentEvent) {
	if ev.Cursor == 0 {
		wake(b.seqWake)
		return
	}
	b.enqueue(item{kind: itemAgent, agent: ev}, false)
	b.notifyAgent(ev.Cursor)
}

func (b *Bus) nextSeq() uint64 { return b.seq.Add(1) }

// outEntry is a notification entry to send: encoded (without its header),
// or committed cursors (of conversations, or of agent events) that fold
// together until sent.
type outEntry struct {
	entry  string
	events []convCursor
	size   int // of events, encoded
	agent  int64
	delta  *agentik.Event // a text delta, encoded when sent (queueDelta)
}

// maxDeltaText bounds the text of deltas merged into one (queueDelta).
const maxDeltaText = 4 << 10

// queueDelta queues a text delta for the other processes, appending its
// text to the delta queued last when that one is of the same turn and not
// sent yet: a burst of deltas costs every other process one entry to
// decode, not one each. Texts of deltas concatenate (SPEC), so a follower
// shows the same text in fewer pieces.
func (b *Bus) queueDelta(ev agentik.Event) {
	b.outMu.Lock()
	if n := len(b.out); n > 0 {
		if d := b.out[n-1].delta; d != nil && d.ConversationID == ev.ConversationID && d.ReplyTo == ev.ReplyTo &&
			len(d.Text)+len(ev.Text) <= maxDeltaText {
			d.Text += ev.Text
			b.outMu.Unlock()
			return
		}
	}
	if len(b.out) >= maxQueue {
		b.outMu.Unlock()
		return
	}
	b.out = append(b.out, outEntry{delta: &ev})
	b.outMu.Unlock()
	wake(b.outWake)
}

// maxNoticeSize bounds the cursor list of one durable-events notification.
const maxNoticeSize = maxEntry - 2

// notifyEvent queues a committed-cursor notification. A notification that
// directly follows another of the same kind folds into it: it says events
// up to those cursors are committed.
func (b *Bus) notifyEvent(conv string, cursor int64) {
	b.outMu.Lock()
	n := len(b.out)
	if n > 0 && b.out[n-1].events != nil {
		e := &b.out[n-1]
		for i := range e.events {
			if e.events[i].conv == conv {
				e.events[i].cursor = max(e.events[i].cursor, cursor)
				b.outMu.Unlock()
				return
			}
		}
		if add := len(conv) + 22; e.size+add <= maxNoticeSize {
			e.events = append(e.events, convCursor{conv, cursor})
			e.size += add
			b.outMu.Unlock()
			return
		}
	}
	b.out = append(b.out, outEntry{events: []convCursor{{conv, cursor}}, size: len(conv) + 22})
	b.outMu.Unlock()
	wake(b.outWake)
}

// notifyAgent queues an agent-event cursor notification, folding it into a
// directly preceding one. A cursor below 1 says nothing: it is not sent
// (it would encode as an empty entry, which receivers refuse).
func (b *Bus) notifyAgent(cursor int64) {
	if cursor <= 0 {
		return
	}
	b.outMu.Lock()
	if n := len(b.out); n > 0 && b.out[n-1].agent != 0 {
		b.out[n-1].agent = max(b.out[n-1].agent, cursor)
		b.outMu.Unlock()
		return
	}
	b.out = append(b.out, outEntry{agent: cursor})
	b.outMu.Unlock()
	wake(b.outWake)
}

// notifyControl sends an interrupt notification to the other processes.
func (b *Bus) notifyControl(n notification) {
	if e, err := encodeEntry(n); err == nil {
		b.queueOut(e)
	}
}

// queueOut queues entries to send, all of them or (past maxQueue) none,
// and says which.
func (b *Bus) queueOut(ps ...string) bool {
	if len(ps) == 0 {
		return false
	}
	b.outMu.Lock()
	queued := len(b.out) < maxQueue
	if queued {
		for _, p := range ps {
			b.out = append(b.out, outEntry{entry: p})
		}
	}
	b.outMu.Unlock()
	wake(b.outWake)
	return queued
}

// enqueue queues an item on its lane; a catch-up is split by lane.
func (b *Bus) enqueue(it item, droppable bool) {
	switch it.kind {
	case itemAgent:
		b.enqueueOn(b.agentLane(), it, droppable)
	case itemCatchUp:
		if len(it.events) > 0 {
			byLane := map[*lane][]convCursor{}
			for _, e := range it.events {
				l := b.laneOf(e.conv)
				byLane[l] = append(byLane[l], e)
			}
			for l, evs := range byLane {
				b.enqueueOn(l, item{kind: itemCatchUp, events: evs}, false)
			}
		}
		if it.agents > 0 {
			b.enqueueOn(b.agentLane(), item{kind: itemCatchUp, agents: it.agents}, false)
		}
	default:
		b.enqueueOn(b.laneOf(it.ev.ConversationID), it, droppable)
	}
}

func (b *Bus) enqueueOn(l *lane, it item, droppable bool) {
	l.mu.Lock()
	if droppable && len(l.in) >= maxQueue {
		l.mu.Unlock()
		return
	}
	l.in = append(l.in, it)
	l.mu.Unlock()
	wake(l.wake)
}

// laneOf is the lane of a conversation's items.
func (b *Bus) laneOf(conversationID string) *lane {
	h := fnv.New32a()
	h.Write([]byte(conversationID))
	return b.lanes[h.Sum32()%conversationLanes]
}

func (b *Bus) agentLane() *lane { return b.lanes[conversationLanes] }

func wake(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Subscribe registers a subscriber of one conversation. The first
// subscriber of a conversation here reads the conversation's last cursor:
// delivery continues from it.
func (b *Bus) Subscribe(conversationID string) agentik.Subscriber[agentik.Event] {
	s := &convSub{b: b, conv: conversationID}
	b.subMu.Lock()
	defer b.subMu.Unlock()
	st := b.convs[conversationID]
	if st == nil {
		// Read outside the lock: delivery goes on meanwhile. Events committed
		// between the read and the registration are delivered from the
		// store (they come after the cursor read); none is lost.
		b.subMu.Unlock()
		floor, err := b.lastCursor(conversationID)
		b.subMu.Lock()
		if st = b.convs[conversationID]; st == nil {
			if err != nil {
				if b.ctx.Err() == nil {
					b.log.Warn("bus: cannot read the conversation's cursor; cutting off its subscriber", "err", err)
				}
				s.Subscriber = b.local.Subscribe(conversationID)
				s.Subscriber.Close()
				return s
			}
			st = &convState{subs: make(map[*convSub]struct{}), delivered: floor}
			b.convs[conversationID] = st
		}
	}
	s.Subscriber = b.local.Subscribe(conversationID)
	st.subs[s] = struct{}{}
	return s
}

// lastCursor reads a conversation's last cursor (0 for one that does not
// exist: it has no events).
func (b *Bus) lastCursor(conversationID string) (int64, error) {
	ctx, cancel := context.WithTimeout(b.ctx, catchUpTimeout)
	defer cancel()
	var last int64
	err := b.s.pool.QueryRow(ctx, qLastCursor, conversationID).Scan(&last)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return last, err
}

// SubscribeAgent registers a subscriber of agent events.
func (b *Bus) SubscribeAgent() agentik.Subscriber[agentik.AgentEvent] {
	s := &agentSub{b: b}
	b.subMu.Lock()
	s.Subscriber = b.local.SubscribeAgent()
	b.agents[s] = struct{}{}
	b.subMu.Unlock()
	return s
}

type convSub struct {
	agentik.Subscriber[agentik.Event]
	b    *Bus
	conv string
}

func (s *convSub) Close() {
	s.b.subMu.Lock()
	if st := s.b.convs[s.conv]; st != nil {
		if _, ok := st.subs[s]; ok {
			delete(st.subs, s)
			if len(st.subs) == 0 {
				delete(s.b.convs, s.conv)
			}
		}
	}
	s.b.subMu.Unlock()
	s.Subscriber.Close()
}

type agentSub struct {
	agentik.Subscriber[agentik.AgentEvent]
	b *Bus
}

func (s *agentSub) Close() {
	s.b.subMu.Lock()
	delete(s.b.agents, s)
	s.b.subMu.Unlock()
	s.Subscriber.Close()
}

// agentsFollowed tells whether anybody here follows agent events.
func (b *Bus) agentsFollowed() bool {
	b.subMu.Lock()
	defer b.subMu.Unlock()
	return len(b.agents) > 0
}

// cutOff closes the subscribers of the given conversations (all agent
// subscribers when agents is set): they may have missed durable events.
func (b *Bus) cutOff(ids []string, agents bool) {
	b.subMu.Lock()
	var subs []*convSub
	for _, id := range ids {
		if st := b.convs[id]; st != nil {
			for s := range st.subs {
				subs = append(subs, s)
			}
		}
	}
	var asubs []*agentSub
	if agents {
		for s := range b.agents {
			asubs = append(asubs, s)
		}
	}
	b.subMu.Unlock()
	for _, s := range subs {
		s.Close()
	}
	for _, s := range asubs {
		s.Close()
	}
}

// deliver hands a lane's queued items to the local subscribers in order.
func (b *Bus) deliver(l *lane) {
	defer b.wg.Done()
	for {
		l.mu.Lock()
		items := l.in
		l.in = nil
		l.mu.Unlock()
		for _, it := range foldCatchUps(items) {
			b.deliverItem(it)
		}
		if len(items) > 0 {
			continue
		}
		select {
		case <-b.ctx.Done():
			return
		case <-l.wake:
		}
	}
}

// foldCatchUps merges catch-ups that follow each other in items into one,
// so that a burst of notifications costs one read of the store, not one
// round trip each. Only neighbours fold: the order relative to other items
// stays.
func foldCatchUps(items []item) []item {
	out := items[:0]
	for _, it := range items {
		if n := len(out); n > 0 && it.kind == itemCatchUp && out[n-1].kind == itemCatchUp {
			last := &out[n-1]
			last.events = append(last.events, it.events...)
			last.agents = max(last.agents, it.agents)
			continue
		}
		out = append(out, it)
	}
	return out
}

func (b *Bus) deliverItem(it item) {
	switch it.kind {
	case itemEvent:
		if it.ev.Cursor == 0 {
			b.turnMu.Lock()
			b.trackLocked(it.ev, true, "")
			b.turnMu.Unlock()
			return
		}
		b.deliverLocal(it.ev)
	case itemAgent:
		c := it.agent.Cursor
		if c <= b.agentDelivered {
			return
		}
		b.catchUpAgent(c - 1)
		b.local.PublishAgent(it.agent)
		b.agentDelivered = c
	case itemRemote:
		b.deliverRemote(it)
	case itemDurable:
		b.deliverAfter(it.ev, it.prev, true)
	case itemCatchUp: // of one lane: conversations', or agent events
		if len(it.events) > 0 {
			b.catchUpEvents(it.events)
		}
		if it.agents > 0 {
			b.catchUpAgent(it.agents)
		}
	}
}

// deliverLocal delivers a durable event committed by this process, after
// the events of its conversation that others committed before it.
func (b *Bus) deliverLocal(ev agentik.Event) {
	prev, known := b.s.chain.take(ev.Cursor)
	b.deliverAfter(ev, prev, known)
}

// deliverAfter delivers a durable event whose predecessor in its
// conversation is prev (when known): this process's own, or another's sent
// whole (itemDurable). At once when that predecessor is the last event
// delivered, else after reading what came between from the store (another
// process committed in between, or a notification was lost or sent by
// cursor only).
func (b *Bus) deliverAfter(ev agentik.Event, prev int64, known bool) {
	b.subMu.Lock()
	st := b.convs[ev.ConversationID]
	switch {
	case st == nil || ev.Cursor <= st.delivered:
		// Nobody follows the conversation here, or the event was read from
		// the store already.
		b.subMu.Unlock()
		return
	case known && prev <= st.delivered:
		// Nothing was committed to the conversation between the last event
		// delivered and this one.
		b.local.Publish(ev)
		st.delivered = ev.Cursor
		b.subMu.Unlock()
		return
	}
	b.subMu.Unlock()
	b.catchUpEvents([]convCursor{{ev.ConversationID, ev.Cursor - 1}})
	b.subMu.Lock()
	if st := b.convs[ev.ConversationID]; st != nil && ev.Cursor > st.delivered {
		b.local.Publish(ev)
		st.delivered = ev.Cursor
	}
	b.subMu.Unlock()
}

// catchUpPage is how many events of one conversation one catch-up query
// reads.
const catchUpPage = 1000

// catchUpTimeout bounds one catch-up, so a hanging database cannot stall
// local delivery for longer.
const catchUpTimeout = 10 * time.Second

// catchUpEvents delivers the committed events that this process has not
// delivered yet of the conversations in upto, each up to its cursor. The
// bound keeps the order of this process's own items: an event committed
// later is delivered at its own place in the queue, not before items
// published ahead of it.
func (b *Bus) catchUpEvents(upto []convCursor) {
	type span struct {
		after int64
		upto  int64
	}
	spans := map[string]span{}
	b.subMu.Lock()
	for _, u := range upto {
		if st := b.convs[u.conv]; st != nil && u.cursor > st.delivered {
			spans[u.conv] = span{after: st.delivered, upto: max(u.cursor, spans[u.conv].upto)}
		}
	}
	b.subMu.Unlock()
	if len(spans) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, catchUpTimeout)
	defer cancel()
	for len(spans) > 0 {
		ids := make([]string, 0, len(spans))
		afters := make([]int64, 0, len(spans))
		uptos := make([]int64, 0, len(spans))
		for id, sp := range spans {
			ids = append(ids, id)
			afters = append(afters, sp.after)
			uptos = append(uptos, sp.upto)
		}
		var evs []agentik.Event
		var withImages []storeutil.Pending
		b.eventReads.Add(1)
		err := queryEach(ctx, b.s.pool, scanEvents(&evs, &withImages), qEventsAfter, ids, afters, uptos, catchUpPage)
		var missing []int
		if err == nil {
			missing, err = restoreImages(ctx, b.s.pool, withImages, func(i int) []agentik.Content { return evs[i].Message.Content })
		}
		if err != nil {
			if b.ctx.Err() == nil {
				b.log.Warn("bus: cannot read events from the store; cutting off subscribers", "err", err)
			}
			b.cutOff(ids, false)
			return
		}
		// A conversation whose page was full has more to read.
		count := map[string]int{}
		for _, ev := range evs {
			count[ev.ConversationID]++
		}
		next := map[string]span{}
		for id, sp := range spans {
			if count[id] == catchUpPage {
				next[id] = sp
			}
		}
		// An event whose images are gone belongs to a conversation deleted
		// since the query; its subscribers are about to see it deleted.
		b.subMu.Lock()
		for _, ev := range storeutil.DropIndexes(evs, missing) {
			if st := b.convs[ev.ConversationID]; st != nil && ev.Cursor > st.delivered {
				b.local.Publish(ev)
				st.delivered = ev.Cursor
			}
		}
		b.subMu.Unlock()
		for _, ev := range evs {
			if sp, ok := next[ev.ConversationID]; ok {
				sp.after = max(sp.after, ev.Cursor)
				next[ev.ConversationID] = sp
			}
		}
		spans = next
	}
}

// catchUpAgent delivers the committed agent events up to cursor `to`.
func (b *Bus) catchUpAgent(to int64) {
	if to <= b.agentDelivered {
		return
	}
	if !b.agentsFollowed() {
		b.agentDelivered = to
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, catchUpTimeout)
	defer cancel()
	for b.agentDelivered < to {
		var evs []agentik.AgentEvent
		err := queryEach(ctx, b.s.pool, func(rows pgx.Rows) error {
			ev, err := scanAgentEvent(rows)
			evs = append(evs, ev)
			return err
		}, qAgentEventsRange, b.agentDelivered, to, catchUpPage, b.s.agent)
		if err != nil {
			if b.ctx.Err() == nil {
				b.log.Warn("bus: cannot read agent events from the store; cutting off subscribers", "err", err)
			}
			b.cutOff(nil, true)
			b.agentDelivered = to
			return
		}
		for _, ev := range evs {
			b.local.PublishAgent(ev)
		}
		if len(evs) < catchUpPage {
			b.agentDelivered = to
			return
		}
		b.agentDelivered = evs[len(evs)-1].Cursor
	}
}

// send NOTIFYs queued notifications in order, a batch per round trip.
func (b *Bus) send() {
	defer b.wg.Done()
	for {
		b.outMu.Lock()
		es := b.out
		b.out = nil
		b.outMu.Unlock()
		if len(es) > 0 {
			b.sendBatch(es)
			continue
		}
		select {
		case <-b.ctx.Done():
			return
		case <-b.outWake:
		}
	}
}

// sendBatch sends notifications in one transaction: PostgreSQL delivers the
// notifications of a transaction in order. The entries are packed into as
// few notifications as they fit. A failed send is not retried: durable
// events are found by the other processes' poll, online events are allowed
// to be lost.
func (b *Bus) sendBatch(es []outEntry) {
	ctx, cancel := context.WithTimeout(b.ctx, catchUpTimeout)
	defer cancel()
	entries := make([]string, 0, len(es))
	for _, e := range es {
		if e.delta != nil {
			entries = append(entries, onlineEntries(*e.delta)...)
			continue
		}
		p := e.entry
		switch {
		case e.events != nil:
			p, _ = encodeEntry(notification{kind: kindEvents, events: e.events})
		case e.agent != 0:
			p, _ = encodeEntry(notification{kind: kindAgent, cursor: e.agent})
		}
		if p == "" {
			continue // nothing to say; an empty entry is malformed
		}
		entries = append(entries, p)
	}
	var batch pgx.Batch
	for _, p := range packPayloads(b.s.node, b.nextSeq, entries) {
		batch.Queue("SELECT pg_notify($1, $2)", b.channel, p)
	}
	if err := b.s.pool.SendBatch(ctx, &batch).Close(); err != nil && b.ctx.Err() == nil {
		b.log.Warn("bus: notify failed", "err", err, "notifications", len(es))
	}
}

// sequenceGap is the least time between two sequencer runs of one
// process: under load, each run numbers what the process committed during
// the gap (one write transaction for all of it, not one per commit), and an
// agent event waits at most that long, plus the run, for its cursor.
const sequenceGap = 50 * time.Millisecond

// logSequencerBusy is logged (debug) when the sequencer found another
// process's run holding the counter.
const logSequencerBusy = "bus: agent-event counter held by another run; numbering again after the gap"

// sequencer numbers the agent events this process committed (and any
// others committed meanwhile) whenever it is woken, then delivers them here
// and announces them to the other processes. Wake-ups during a run, or
// within sequenceGap after it, fold into one more run. A run that finds
// another process's run holding the counter does not wait for it; it runs
// again after the gap. A failed run is retried by the next wake-up or poll.
func (b *Bus) sequencer() {
	defer b.wg.Done()
	var last time.Time
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-b.seqWake:
		}
		if wait := sequenceGap - time.Since(last); wait > 0 {
			select {
			case <-b.ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		last = time.Now()
		ctx, cancel := context.WithTimeout(b.ctx, catchUpTimeout)
		n, top, busy, err := b.number(ctx, b.s.pool)
		cancel()
		if err != nil {
			if b.ctx.Err() == nil {
				b.log.Warn("bus: cannot number agent events", "err", err)
			}
			continue
		}
		if busy {
			b.log.Debug(logSequencerBusy)
			wake(b.seqWake)
		}
		// A run can pick events that another process's run numbered
		// since this statement's snapshot (it then numbers none of them:
		// n > 0, top 0). Only a cursor is news (see docs/postgres.md,
		// "The lost end").
		if n > 0 && top > 0 {
			b.enqueue(item{kind: itemCatchUp, agents: top}, false)
			b.notifyAgent(top)
		}
	}
}

// listen keeps a connection listening on the channel, reconnecting with a
// backoff, and polls the cursor counters for lost notifications. conn was
// polled last at polled.
func (b *Bus) listen(conn *pgx.Conn, polled time.Time) {
	defer b.wg.Done()
	backoff := 100 * time.Millisecond
	for {
		err := b.listenOn(conn, polled) // closes conn
		polled = time.Time{}
		for {
			if b.ctx.Err() != nil {
				return
			}
			b.log.Warn("bus: listening connection lost; reconnecting", "err", err, "in", backoff)
			select {
			case <-b.ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			if conn, err = b.connectListening(b.ctx); err == nil {
				break
			}
		}
	}
}

// connectListening opens a connection of its own and LISTENs on it.
func (b *Bus) connectListening(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, b.s.cfg)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{b.channel}.Sanitize()); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}

// listenOn delivers what conn hears until it fails or the Bus closes, and
// closes it. A connection not polled yet (polled zero) is polled first:
// whatever was committed while nobody here listened.
func (b *Bus) listenOn(conn *pgx.Conn, polled time.Time) error {
	defer conn.Close(context.Background())
	if polled.IsZero() {
		if err := b.pollOnce(conn); err != nil {
			return err
		}
		polled = time.Now()
	}
	for {
		ctx, cancel := context.WithTimeout(b.ctx, b.poll-time.Since(polled))
		n, err := conn.WaitForNotification(ctx)
		cancel()
		switch {
		case err == nil:
			b.handle(n.Payload)
		case b.ctx.Err() != nil:
			return nil
		case !errors.Is(err, context.DeadlineExceeded):
			return err
		}
		// Poll every interval, also while notifications keep coming: one
		// lost among many would otherwise wait for a quiet moment.
		if time.Since(polled) >= b.poll {
			if err := b.pollOnce(conn); err != nil {
				return err
			}
			polled = time.Now()
		}
	}
}

// qPoll reads the agent-event counter and whether agent events wait for
// their number (their process died before running the sequencer), and the
// last cursors of the conversations followed here.
const qPoll = `SELECT '', last, EXISTS (SELECT 1 FROM agent_events WHERE cursor IS NULL)
		FROM cursors WHERE name = 'agent_events'
	UNION ALL
	SELECT id, last_cursor, false FROM conversations WHERE id = ANY($1)`

// pollOnce queues a catch-up to the newest committed cursors of the
// conversations followed here and of the agent events, and wakes the
// sequencer if agent events wait for their number. Reading on the
// listening connection also proves it is alive.
func (b *Bus) pollOnce(conn *pgx.Conn) error {
	b.subMu.Lock()
	ids := make([]string, 0, len(b.convs))
	for id := range b.convs {
		ids = append(ids, id)
	}
	b.subMu.Unlock()
	ctx, cancel := context.WithTimeout(b.ctx, catchUpTimeout)
	defer cancel()
	it := item{kind: itemCatchUp}
	err := queryEach(ctx, conn, func(rows pgx.Rows) error {
		var id string
		var last int64
		var unnumbered bool
		if err := rows.Scan(&id, &last, &unnumbered); err != nil {
			return err
		}
		switch {
		case id == "":
			it.agents = last
			if unnumbered {
				wake(b.seqWake)
			}
		case last > 0:
			it.events = append(it.events, convCursor{id, last})
		}
		return nil
	}, qPoll, ids)
	if err != nil {
		return err
	}
	b.heard(it.events, false)
	b.enqueue(it, false)
	return nil
}

// heard tells the store of conversations' newest cursors learnt from
// outside this process: where another process wrote, a commit here reads
// the row first. The Coordinator (foreign) hears of them too: a
// conversation whose lease this process keeps may have a new turn. It
// hears of every notification (another process's commit), even one
// whose cursor this process has passed meanwhile — a commit of its own
// may have overtaken the notification, not the turn it opened — and of a
// poll's cursor only when it is news. It is told which: a poll's cursor
// may be old news again (the counters a commit remembers move only with
// this process's own reads and commits).
func (b *Bus) heard(events []convCursor, notified bool) {
	f := b.foreign.Load()
	for _, e := range events {
		if news := b.s.states.outdated(e.conv, e.cursor); (news || notified) && f != nil {
			(*f)(e.conv, notified)
		}
	}
}

func (b *Bus) handle(payload string) {
	if b.handling != nil {
		b.handling()
	}
	// This process's own notifications come back to its listening
	// connection too: they are dropped before anything is decoded.
	if len(payload) > len(b.s.node) && payload[len(b.s.node)] == ' ' && payload[:len(b.s.node)] == b.s.node {
		return
	}
	ns, bad, err := decodePayload(payload, b.unfollowed)
	if err != nil || bad > 0 {
		b.log.Debug("bus: ignoring a malformed notification or entries of one", "len", strconv.Itoa(len(payload)), "entries", bad)
	}
	for _, n := range ns {
		b.handleOne(n)
	}
}

// unfollowed says whether no subscriber here follows the conversation. A
// subscriber registered after it answered reads what it missed from the
// store: its registration reads the conversation's last cursor first.
func (b *Bus) unfollowed(conv string) bool {
	b.subMu.Lock()
	defer b.subMu.Unlock()
	return b.convs[conv] == nil
}

func (b *Bus) handleOne(n notification) {
	switch n.kind {
	case kindEvents:
		b.heard(n.events, true)
		b.enqueue(item{kind: itemCatchUp, events: n.events}, false)
	case kindAgent:
		b.enqueue(item{kind: itemCatchUp, agents: n.cursor}, false)
	case kindDurable:
		if !signedBy(b.key, n) {
			b.log.Debug("bus: ignoring a durable event with a bad signature", "conversation", n.event.ConversationID)
			return
		}
		b.heard([]convCursor{{n.event.ConversationID, n.event.Cursor}}, true)
		b.enqueue(item{kind: itemDurable, ev: n.event, prev: n.prev}, false)
	case kindOnline:
		b.enqueue(item{kind: itemRemote, ev: n.event, raw: n.raw}, true)
	case kindInterrupt:
		if f := b.control.Load(); f != nil {
			(*f)(n)
		}
	}
}

// Pending says whether the local subscriber holds events not yet in its
// channel, so that a reader draining at shutdown waits for them.
func (s *convSub) Pending() bool {
	p, ok := s.Subscriber.(interface{ Pending() bool })
	return ok && p.Pending()
}

// Pending: see convSub.Pending.
func (s *agentSub) Pending() bool {
	p, ok := s.Subscriber.(interface{ Pending() bool })
	return ok && p.Pending()
}
