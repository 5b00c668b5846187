package agentik

import "context"

// Coordinator schedules the turns of the conversations in a Store among the
// processes that use it. The engine runs every turn through one: with a
// Store only this process uses, a trivial local one (every lease is free,
// nobody else runs turns); with a Store several processes share
// (PostgreSQL), one that spans them:
//
//   - the store is the queue: a user message stored by any process is an
//     open turn (Store.OpenTurnsOf) that the process holding the
//     conversation's lease answers, in seq order;
//   - a turn runs only while its process holds the conversation's lease, so
//     exactly one process runs a conversation's turns at a time;
//   - interrupts reach the process running the turn, wherever they were
//     posted;
//   - when a process dies its leases are freed, and the Coordinator's Kick
//     makes another process pick the open turns up (failover).
//
// A Coordinator is safe for concurrent use.
type Coordinator interface {
	// Start begins delivering the callbacks. The engine calls it once, in
	// its Start, before it looks for open turns.
	Start(cb CoordinatorCallbacks) error
	// Acquire tries to take the lease of a conversation's turns without
	// waiting. The Lease is not Held when another process holds it; holding
	// it already returns the current lease. ENotFound: the conversation is
	// gone.
	Acquire(ctx context.Context, conversationID string) (Lease, error)
	// Release gives the lease back; a no-op when not held.
	Release(ctx context.Context, conversationID string)
	// Pending returns the conversation's open turns in seq order and the
	// journal of the first one so far (ReadTurnQueue).
	Pending(ctx context.Context, conversationID string) (TurnQueue, error)
	// Interrupt asks the process running the conversation's turn to cancel
	// it, as req says. It reports whether some other process holds the
	// lease (a local Coordinator: never).
	Interrupt(ctx context.Context, req InterruptRequest) (bool, error)
	// Join subscribes to the conversation's events (as Bus.Subscribe) and
	// returns, at the same point of the stream, the turn another process
	// runs in it (zero when none is known).
	Join(conversationID string) (Subscriber[Event], RemoteTurn)
	// Running returns the turn another process runs in the conversation.
	Running(conversationID string) (RemoteTurn, bool)
}

// QueueCoordinator is a Coordinator that reads a conversation's queue
// (Pending) in the same round trip as it takes or gives back the lease:
// the engine's loop reads the queue right after each, so a shared store
// saves two round trips per burst of turns (docs/postgres.md). The read
// is made after the lease is taken (or given back), as Pending would be.
type QueueCoordinator interface {
	Coordinator
	// AcquirePending is Acquire, and when the lease is Held, Pending.
	AcquirePending(ctx context.Context, conversationID string) (Lease, TurnQueue, error)
	// ReleasePending is Release, then Pending.
	ReleasePending(ctx context.Context, conversationID string) (TurnQueue, error)
}

// LeaseKeeper is a Coordinator that can keep a conversation's lease
// while nothing is left to run in it, so that the conversation's next turn
// needs neither a new lease nor the release of this one (docs/postgres.md,
// "Leases kept between turns"). While it keeps one, it calls Wake when
// another process stores something in the conversation, and Kick, from
// its scan, when the conversation has open turns: this process is then the
// one to run them.
type LeaseKeeper interface {
	// Keep is called in place of Release by a loop that holds the lease
	// and leaves no open turn waiting (its last turn was answered, or none
	// was open). It reports whether the lease is kept; false: the loop
	// gives it back, as without a LeaseKeeper.
	Keep(ctx context.Context, conversationID string) bool
	// GiveBackKept gives back every lease kept, and keeps none from then
	// on: the engine is shutting down, and other processes take its
	// conversations' next turns at once.
	GiveBackKept(ctx context.Context)
}

// CoordinatorCallbacks are what a Coordinator calls into the engine with.
// They do not block on turns.
type CoordinatorCallbacks struct {
	// Kick: the conversation has open turns that may have no runner.
	Kick func(conversationID string)
	// Wake: another process stored something in a conversation whose
	// lease this process keeps (LeaseKeeper): its loop reads the queue
	// again, also when it runs a turn now. nil: Kick.
	Wake func(conversationID string)
	// Interrupt: another process asked to interrupt the conversation's
	// running turn (see Coordinator.Interrupt); true if one was cancelled.
	Interrupt func(conversationID string, req InterruptRequest) bool
	// Lost: the leases of this process may now be held by others. Running
	// turns stop at once and are left open (nothing is written), so that the
	// process that takes the lease answers them — never twice.
	Lost func()
}

// Lease is a conversation's turn lease. Held is false when another process
// holds it. Epoch, when non-zero, fences every turn write made under it
// (Write.Fence). Continued says this process held the lease last, so no
// other process wrote the conversation's turns since and cached working
// memory is current.
type Lease struct {
	Held      bool
	Epoch     int64
	Continued bool
}

// TurnQueue is a conversation's open turns in seq order, and the journal
// messages answering the first one (its turn so far: tool calls, results).
// Only the first open turn is read whole: a Coordinator may give the others
// as their identity alone (ID, ConversationID, Seq, Type), which is all the
// engine needs of a turn that waits behind another.
type TurnQueue struct {
	Open []Message
	Turn []Message
	// Head is the conversation's head (SPEC §18) read with the queue, when
	// the Coordinator reads it there (0: not read). A turn whose user
	// message is the head needs no head move before it starts, so the
	// engine then does not read the head path.
	Head int64
}

// RemoteTurn is a turn running in another process, as its online events
// tell: the user message it answers, the phase of the current model call
// (DeltaReasoning or DeltaText, "" before the first delta) and the text of
// that phase so far.
type RemoteTurn struct {
	ReplyTo string
	Phase   string
	Partial string
}

// InterruptRequest says which turn of a conversation to interrupt, and why
// (ReasonUser or ReasonBusyPolicy). ReplyTo, when set, names the one turn to
// cut (the turn answering that user message): any other turn is left alone.
// Unless, when set, spares the turn answering that message (the message a
// busy-policy interrupt was sent with). Both empty: whatever turn runs.
type InterruptRequest struct {
	ConversationID string
	Reason         string
	ReplyTo        string
	Unless         string
}

// Matches reports whether the running turn answering replyTo is the one req
// targets.
func (req InterruptRequest) Matches(replyTo string) bool {
	if req.ReplyTo != "" && replyTo != req.ReplyTo {
		return false
	}
	return req.Unless == "" || replyTo != req.Unless
}

// ReadTurnQueue reads a conversation's queue from s: its open turns and the
// journal of the first one.
func ReadTurnQueue(ctx context.Context, s Store, conversationID string) (TurnQueue, error) {
	open, err := s.OpenTurnsOf(ctx, conversationID)
	if err != nil || len(open) == 0 {
		return TurnQueue{Open: open}, err
	}
	q := TurnQueue{Open: open}
	first := open[0]
	after := first.Seq
	for {
		page, more, err := s.Messages(ctx, conversationID, MessagesRequest{After: after, Limit: MaxMessagesLimit})
		if err != nil {
			return TurnQueue{}, err
		}
		for _, m := range page {
			if m.ReplyTo == first.ID {
				q.Turn = append(q.Turn, m)
			}
		}
		if !more || len(page) == 0 {
			return q, nil
		}
		after = page[len(page)-1].Seq
	}
}
