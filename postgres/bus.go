package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/bus"
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
}

// Bus is the cross-process agentik.Bus. Events published in this process are
// delivered to its subscribers directly, in publish order, and announced to
// the other processes with NOTIFY. A durable event's notification carries
// only its cursor: a receiving process reads the events from the store, so
// the events table stays the source of truth and a lost notification delays
// delivery (until the next notification or poll) but loses nothing. Online
// events travel in the notification itself.
//
// Ordering: every process delivers durable events in cursor order. A local
// durable event whose cursor is not the next one expected (another process
// committed in between) is delivered after the events before it are read
// from the store. Cursors are handed out in commit order (see allocate), so
// when cursor c is published, every smaller cursor is already visible.
//
// If the store cannot be read, the subscribers of the conversations that may
// have missed events are cut off (their channel closes), as the Bus contract
// asks: they resume from their last cursor.
type Bus struct {
	s       *Store
	local   *bus.Bus
	channel string
	poll    time.Duration
	log     *slog.Logger
	control atomic.Pointer[func(notification)] // set by a Coordinator
	seq     atomic.Uint64

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// subscribers by conversation, so delivery can read only the events
	// somebody here waits for, and cut them off when it cannot.
	subMu  sync.Mutex
	convs  map[string]map[*convSub]struct{}
	agents map[*agentSub]struct{}

	// turns other processes run, by conversation (see turns.go).
	turnMu sync.Mutex
	turns  map[string]*remoteTurn

	// in: items to deliver, in order; drained by deliver.
	inMu   sync.Mutex
	in     []item
	inWake chan struct{}

	// out: payloads to NOTIFY, in order; drained by send.
	outMu   sync.Mutex
	out     []string
	outWake chan struct{}

	// Owned by deliver: every cursor up to these has been delivered (or
	// belongs to a conversation nobody here subscribed to).
	delivered, agentDelivered int64
}

var _ agentik.Bus = (*Bus)(nil)

// maxQueue bounds the delivery and notification queues: past it online
// events are dropped (durable ones are never queued without bound: their
// notifications coalesce and the store keeps them).
const maxQueue = 1 << 16

type itemKind int

const (
	itemEvent   itemKind = iota // a local event, durable or online
	itemAgent                   // a local agent event
	itemRemote                  // an online event of another process
	itemCatchUp                 // durable events up to the cursors are committed
)

type item struct {
	kind   itemKind
	ev     agentik.Event
	agent  agentik.AgentEvent
	events int64 // itemCatchUp
	agents int64 // itemCatchUp
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
		s:       s,
		local:   bus.New(),
		channel: "agentik " + s.schema,
		poll:    opts.PollInterval,
		log:     opts.Logger,
		convs:   make(map[string]map[*convSub]struct{}),
		agents:  make(map[*agentSub]struct{}),
		turns:   make(map[string]*remoteTurn),
		inWake:  make(chan struct{}, 1),
		outWake: make(chan struct{}, 1),
	}
	ev, ag, err := b.counters(ctx)
	if err != nil {
		return nil, fmt.Errorf("start bus: %w", classify(err))
	}
	b.delivered, b.agentDelivered = ev, ag
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.wg.Add(3)
	go b.deliver()
	go b.send()
	go b.listen()
	return b, nil
}

// Close stops the Bus's goroutines and closes its connection. Subscribers
// stay registered; their owners close them. Idempotent.
func (b *Bus) Close() {
	b.cancel()
	b.wg.Wait()
}

func (b *Bus) counters(ctx context.Context) (events, agents int64, err error) {
	rows, err := b.s.pool.Query(ctx, qCounters)
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var last int64
		if err := rows.Scan(&name, &last); err != nil {
			return 0, 0, err
		}
		switch name {
		case "events":
			events = last
		case "agent_events":
			agents = last
		}
	}
	return events, agents, rows.Err()
}

// Publish delivers ev to this process's subscribers and announces it to the
// other processes. It never blocks on a subscriber or the database.
func (b *Bus) Publish(ev agentik.Event) {
	b.enqueue(item{kind: itemEvent, ev: ev}, ev.Cursor == 0)
	if ev.Cursor != 0 {
		b.notifyCursor(kindEvents, ev.Cursor)
		return
	}
	b.queueOut(onlinePayloads(b.s.node, b.nextSeq, ev)...)
}

// PublishAgent delivers ev here and announces it to the other processes.
func (b *Bus) PublishAgent(ev agentik.AgentEvent) {
	b.enqueue(item{kind: itemAgent, agent: ev}, false)
	b.notifyCursor(kindAgent, ev.Cursor)
}

func (b *Bus) nextSeq() uint64 { return b.seq.Add(1) }

// notifyCursor queues a committed-cursor notification. Consecutive ones of
// the same kind fold into the last: it says everything up to it is there.
func (b *Bus) notifyCursor(kind byte, cursor int64) {
	p, _ := encodeNotification(notification{node: b.s.node, seq: b.nextSeq(), kind: kind, cursor: cursor})
	b.outMu.Lock()
	if n := len(b.out); n > 0 {
		if last, err := decodeNotification(b.out[n-1]); err == nil && last.kind == kind && last.cursor <= cursor {
			b.out[n-1] = p
			b.outMu.Unlock()
			return
		}
	}
	b.out = append(b.out, p)
	b.outMu.Unlock()
	wake(b.outWake)
}

// notifyControl sends an interrupt notification to the other processes.
func (b *Bus) notifyControl(n notification) {
	n.node, n.seq = b.s.node, b.nextSeq()
	if p, err := encodeNotification(n); err == nil {
		b.queueOut(p)
	}
}

func (b *Bus) queueOut(ps ...string) {
	if len(ps) == 0 {
		return
	}
	b.outMu.Lock()
	if len(b.out) < maxQueue {
		b.out = append(b.out, ps...)
	}
	b.outMu.Unlock()
	wake(b.outWake)
}

func (b *Bus) enqueue(it item, droppable bool) {
	b.inMu.Lock()
	if droppable && len(b.in) >= maxQueue {
		b.inMu.Unlock()
		return
	}
	b.in = append(b.in, it)
	b.inMu.Unlock()
	wake(b.inWake)
}

func wake(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Subscribe registers a subscriber of one conversation's events.
func (b *Bus) Subscribe(conversationID string) agentik.Subscriber[agentik.Event] {
	s := &convSub{b: b, conv: conversationID}
	b.subMu.Lock()
	s.Subscriber = b.local.Subscribe(conversationID)
	set := b.convs[conversationID]
	if set == nil {
		set = make(map[*convSub]struct{})
		b.convs[conversationID] = set
	}
	set[s] = struct{}{}
	b.subMu.Unlock()
	return s
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
	if set := s.b.convs[s.conv]; set != nil {
		delete(set, s)
		if len(set) == 0 {
			delete(s.b.convs, s.conv)
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

// subscribed returns the conversations with subscribers here and whether
// anybody follows agent events.
func (b *Bus) subscribed() ([]string, bool) {
	b.subMu.Lock()
	defer b.subMu.Unlock()
	ids := make([]string, 0, len(b.convs))
	for id := range b.convs {
		ids = append(ids, id)
	}
	return ids, len(b.agents) > 0
}

// cutOff closes the subscribers of the given conversations (all agent
// subscribers when agents is set): they may have missed durable events.
func (b *Bus) cutOff(ids []string, agents bool) {
	b.subMu.Lock()
	var subs []*convSub
	for _, id := range ids {
		for s := range b.convs[id] {
			subs = append(subs, s)
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

// deliver hands queued items to the local subscribers in order.
func (b *Bus) deliver() {
	defer b.wg.Done()
	for {
		b.inMu.Lock()
		items := b.in
		b.in = nil
		b.inMu.Unlock()
		for _, it := range items {
			b.deliverItem(it)
		}
		if len(items) > 0 {
			continue
		}
		select {
		case <-b.ctx.Done():
			return
		case <-b.inWake:
		}
	}
}

func (b *Bus) deliverItem(it item) {
	switch it.kind {
	case itemEvent:
		c := it.ev.Cursor
		if c == 0 {
			b.turnMu.Lock()
			b.trackLocked(it.ev, true)
			b.turnMu.Unlock()
			return
		}
		if c <= b.delivered {
			return // already read from the store
		}
		b.catchUpEvents(c - 1)
		b.local.Publish(it.ev)
		b.delivered = c
	case itemAgent:
		c := it.agent.Cursor
		if c <= b.agentDelivered {
			return
		}
		b.catchUpAgent(c - 1)
		b.local.PublishAgent(it.agent)
		b.agentDelivered = c
	case itemRemote:
		b.turnMu.Lock()
		b.trackLocked(it.ev, false)
		b.turnMu.Unlock()
	case itemCatchUp:
		b.catchUpEvents(it.events)
		b.catchUpAgent(it.agents)
	}
}

// catchUpPage is how many events one catch-up query reads.
const catchUpPage = 1000

// catchUpTimeout bounds one catch-up, so a hanging database cannot stall
// local delivery for longer.
const catchUpTimeout = 10 * time.Second

// catchUpEvents delivers the committed events up to cursor `to` that this
// process has not delivered, for the conversations subscribed here.
func (b *Bus) catchUpEvents(to int64) {
	if to <= b.delivered {
		return
	}
	ids, _ := b.subscribed()
	if len(ids) == 0 {
		b.delivered = to
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, catchUpTimeout)
	defer cancel()
	for b.delivered < to {
		var evs []agentik.Event
		var withImages []pending
		err := queryEach(ctx, b.s.pool, scanEvents(&evs, &withImages), qEventsRange, b.delivered, to, ids, catchUpPage)
		var missing []int
		if err == nil {
			missing, err = restoreImages(ctx, b.s.pool, withImages, func(i int) []agentik.Content { return evs[i].Message.Content })
		}
		if err != nil {
			if b.ctx.Err() == nil {
				b.log.Warn("bus: cannot read events from the store; cutting off subscribers", "err", err)
			}
			b.cutOff(ids, false)
			b.delivered = to
			return
		}
		page := len(evs)
		if page == catchUpPage {
			b.delivered = evs[page-1].Cursor
		}
		// An event whose images are gone belongs to a conversation deleted
		// since the query; its subscribers are about to see it deleted.
		for _, ev := range dropIndexes(evs, missing) {
			b.local.Publish(ev)
		}
		if page < catchUpPage {
			b.delivered = to
			return
		}
	}
}

// catchUpAgent delivers the committed agent events up to cursor `to`.
func (b *Bus) catchUpAgent(to int64) {
	if to <= b.agentDelivered {
		return
	}
	if _, agents := b.subscribed(); !agents {
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
		}, qAgentEventsRange, b.agentDelivered, to, catchUpPage)
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

// send NOTIFYs queued payloads in order, a batch per round trip.
func (b *Bus) send() {
	defer b.wg.Done()
	for {
		b.outMu.Lock()
		ps := b.out
		b.out = nil
		b.outMu.Unlock()
		if len(ps) > 0 {
			b.sendBatch(ps)
			continue
		}
		select {
		case <-b.ctx.Done():
			return
		case <-b.outWake:
		}
	}
}

// sendBatch sends payloads in one transaction: PostgreSQL delivers the
// notifications of a transaction in order. A failed send is not retried:
// durable events are found by the other processes' poll, online events are
// allowed to be lost.
func (b *Bus) sendBatch(ps []string) {
	ctx, cancel := context.WithTimeout(b.ctx, catchUpTimeout)
	defer cancel()
	var batch pgx.Batch
	for _, p := range ps {
		batch.Queue("SELECT pg_notify($1, $2)", b.channel, p)
	}
	if err := b.s.pool.SendBatch(ctx, &batch).Close(); err != nil && b.ctx.Err() == nil {
		b.log.Warn("bus: notify failed", "err", err, "notifications", len(ps))
	}
}

// listen keeps a connection listening on the channel, reconnecting with a
// backoff, and polls the cursor counters for lost notifications.
func (b *Bus) listen() {
	defer b.wg.Done()
	backoff := 100 * time.Millisecond
	for b.ctx.Err() == nil {
		err := b.listenOnce()
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
	}
}

func (b *Bus) listenOnce() error {
	conn, err := pgx.ConnectConfig(b.ctx, b.s.cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(b.ctx, "LISTEN "+pgx.Identifier{b.channel}.Sanitize()); err != nil {
		return err
	}
	// Whatever was committed while nobody here listened.
	if err := b.pollOnce(conn); err != nil {
		return err
	}
	for {
		ctx, cancel := context.WithTimeout(b.ctx, b.poll)
		n, err := conn.WaitForNotification(ctx)
		cancel()
		switch {
		case err == nil:
			b.handle(n.Payload)
		case b.ctx.Err() != nil:
			return nil
		case errors.Is(err, context.DeadlineExceeded):
			if err := b.pollOnce(conn); err != nil {
				return err
			}
		default:
			return err
		}
	}
}

// pollOnce queues a catch-up to the newest committed cursors. Reading them
// on the listening connection also proves it is alive.
func (b *Bus) pollOnce(conn *pgx.Conn) error {
	ctx, cancel := context.WithTimeout(b.ctx, catchUpTimeout)
	defer cancel()
	var events, agents int64
	rows, err := conn.Query(ctx, qCounters)
	if err != nil {
		return err
	}
	for rows.Next() {
		var name string
		var last int64
		if err := rows.Scan(&name, &last); err != nil {
			rows.Close()
			return err
		}
		switch name {
		case "events":
			events = last
		case "agent_events":
			agents = last
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	b.enqueue(item{kind: itemCatchUp, events: events, agents: agents}, false)
	return nil
}

func (b *Bus) handle(payload string) {
	n, err := decodeNotification(payload)
	if err != nil {
		b.log.Debug("bus: ignoring a malformed notification", "len", strconv.Itoa(len(payload)))
		return
	}
	if n.node == b.s.node {
		return
	}
	switch n.kind {
	case kindEvents:
		b.enqueue(item{kind: itemCatchUp, events: n.cursor}, false)
	case kindAgent:
		b.enqueue(item{kind: itemCatchUp, agents: n.cursor}, false)
	case kindOnline:
		b.enqueue(item{kind: itemRemote, ev: n.event}, true)
	case kindInterrupt:
		if f := b.control.Load(); f != nil {
			(*f)(n)
		}
	}
}
