package httpapi

import (
	"context"
	"sync"

	"github.com/agentik/agentik"
)

// fakeAgent is a small in-memory agentik.Agent for tests of the transport
// alone (no turns: Send stores the message and emits its event). It keeps
// the contracts the transport relies on: cursors strictly increase, Events
// replays after the cursor then goes live, a full subscriber is cut off with
// ErrSlowSubscriber.
type fakeAgent struct {
	mu        sync.Mutex
	cursor    int64
	convs     map[string]*fakeConv
	subs      map[*fakeStream[agentik.Event]]string
	buffer    int // subscriber channel capacity
	sendCalls int
}

type fakeConv struct {
	info   agentik.ConversationInfo
	msgs   []agentik.Message
	events []agentik.Event
}

func newFakeAgent() *fakeAgent {
	return &fakeAgent{convs: map[string]*fakeConv{}, subs: map[*fakeStream[agentik.Event]]string{}, buffer: 64}
}

var _ agentik.Agent = (*fakeAgent)(nil)

func (a *fakeAgent) Info() agentik.AgentInfo {
	return agentik.AgentInfo{ID: "fake", Name: "fake", Capabilities: agentik.Capabilities{Streaming: true}}
}

func (a *fakeAgent) CreateConversation(ctx context.Context, req agentik.CreateRequest) (agentik.ConversationInfo, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := agentik.Now()
	info := agentik.ConversationInfo{ID: agentik.NewID(), Title: req.Title, Temporal: req.Temporal, CreatedAt: now, UpdatedAt: now}
	a.convs[info.ID] = &fakeConv{info: info}
	return info, nil
}

func (a *fakeAgent) Conversation(ctx context.Context, id string) (agentik.Conversation, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.convs[id] == nil {
		return nil, agentik.Errorf(agentik.ENotFound, "conversation not found")
	}
	return &fakeHandle{a: a, id: id}, nil
}

func (a *fakeAgent) ListConversations(ctx context.Context, req agentik.ListRequest) (agentik.ConversationList, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var list agentik.ConversationList
	for _, c := range a.convs {
		list.Conversations = append(list.Conversations, c.info)
	}
	return list, nil
}

func (a *fakeAgent) DeleteConversation(ctx context.Context, id string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.convs[id] == nil {
		return agentik.Errorf(agentik.ENotFound, "conversation not found")
	}
	delete(a.convs, id)
	for s, cid := range a.subs {
		if cid == id {
			s.end(agentik.Errorf(agentik.ENotFound, "conversation deleted"))
			delete(a.subs, s)
		}
	}
	return nil
}

func (a *fakeAgent) RenameConversation(ctx context.Context, id, title string) (agentik.ConversationInfo, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.convs[id]
	if c == nil {
		return agentik.ConversationInfo{}, agentik.Errorf(agentik.ENotFound, "conversation not found")
	}
	c.info.Title = title
	return c.info, nil
}

func (a *fakeAgent) Events(ctx context.Context, after int64) (agentik.Stream[agentik.AgentEvent], error) {
	s := newFakeStream[agentik.AgentEvent](ctx, 1)
	return s, nil
}

// emit appends a durable event to c and fans it out; a subscriber whose
// buffer is full is cut off. Called with a.mu held.
func (a *fakeAgent) emit(c *fakeConv, ev agentik.Event) {
	if agentik.Durable(ev.Type) {
		a.cursor++
		ev.Cursor = a.cursor
		c.events = append(c.events, ev)
	}
	for s, id := range a.subs {
		if id != c.info.ID {
			continue
		}
		select {
		case s.c <- ev:
		default:
			s.end(agentik.ErrSlowSubscriber)
			delete(a.subs, s)
		}
	}
}

type fakeHandle struct {
	a  *fakeAgent
	id string
}

func (h *fakeHandle) conv() (*fakeConv, error) {
	c := h.a.convs[h.id]
	if c == nil {
		return nil, agentik.Errorf(agentik.ENotFound, "conversation not found")
	}
	return c, nil
}

func (h *fakeHandle) ID() string { return h.id }

func (h *fakeHandle) Info(ctx context.Context) (agentik.ConversationInfo, error) {
	h.a.mu.Lock()
	defer h.a.mu.Unlock()
	c, err := h.conv()
	if err != nil {
		return agentik.ConversationInfo{}, err
	}
	return c.info, nil
}

func (h *fakeHandle) Send(ctx context.Context, req agentik.SendRequest) (agentik.SendResult, error) {
	h.a.mu.Lock()
	defer h.a.mu.Unlock()
	h.a.sendCalls++
	c, err := h.conv()
	if err != nil {
		return agentik.SendResult{}, err
	}
	if err := agentik.ValidateContent(req.Content); err != nil {
		return agentik.SendResult{}, err
	}
	m := agentik.Message{ID: agentik.NewID(), ConversationID: h.id, Seq: int64(len(c.msgs) + 1), Date: agentik.Now(),
		Type: agentik.MsgUser, Content: req.Content, Context: req.Context}
	c.msgs = append(c.msgs, m)
	h.a.emit(c, agentik.MessageEvent(&m))
	return agentik.SendResult{MessageID: m.ID, Seq: m.Seq}, nil
}

// Online publishes an online event to the conversation's live subscribers.
func (a *fakeAgent) online(id string, ev agentik.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ev.ConversationID = id
	a.emit(a.convs[id], ev)
}

func (h *fakeHandle) Interrupt(ctx context.Context) (bool, error) {
	h.a.mu.Lock()
	defer h.a.mu.Unlock()
	_, err := h.conv()
	return false, err
}

func (h *fakeHandle) Messages(ctx context.Context, req agentik.MessagesRequest) (agentik.MessagePage, error) {
	h.a.mu.Lock()
	defer h.a.mu.Unlock()
	c, err := h.conv()
	if err != nil {
		return agentik.MessagePage{}, err
	}
	var page agentik.MessagePage
	for _, m := range c.msgs {
		if m.Seq > req.After && len(page.Messages) < req.Limit {
			page.Messages = append(page.Messages, m)
		}
	}
	if n := len(c.events); n > 0 {
		page.Cursor = c.events[n-1].Cursor
	}
	return page, nil
}

func (h *fakeHandle) Events(ctx context.Context, after int64) (agentik.Stream[agentik.Event], error) {
	h.a.mu.Lock()
	defer h.a.mu.Unlock()
	c, err := h.conv()
	if err != nil {
		return nil, err
	}
	s := newFakeStream[agentik.Event](ctx, h.a.buffer+len(c.events))
	if after != agentik.LiveOnly {
		for _, ev := range c.events {
			if ev.Cursor > after {
				s.c <- ev
			}
		}
	}
	h.a.subs[s] = h.id
	go func() {
		<-s.done
		h.a.mu.Lock()
		delete(h.a.subs, s)
		h.a.mu.Unlock()
	}()
	return s, nil
}

func (h *fakeHandle) Rename(ctx context.Context, title string) (agentik.ConversationInfo, error) {
	return h.a.RenameConversation(ctx, h.id, title)
}

func (h *fakeHandle) Close() error { return nil }

// fakeStream is a buffered agentik.Stream. The agent sends into c (under its
// lock, never blocking); a forwarding goroutine owns out and closes it when
// the stream ends, so a send never races with the close.
type fakeStream[T any] struct {
	c    chan T
	out  chan T
	done chan struct{}
	once sync.Once
	mu   sync.Mutex
	err  error
}

func newFakeStream[T any](ctx context.Context, n int) *fakeStream[T] {
	s := &fakeStream[T]{c: make(chan T, n), out: make(chan T), done: make(chan struct{})}
	go func() {
		defer close(s.out)
		for {
			select {
			case <-ctx.Done():
				s.end(nil)
				return
			case <-s.done:
				return
			case v := <-s.c:
				select {
				case s.out <- v:
				case <-s.done:
					return
				case <-ctx.Done():
					s.end(nil)
					return
				}
			}
		}
	}()
	return s
}

func (s *fakeStream[T]) end(err error) {
	s.once.Do(func() {
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		close(s.done)
	})
}

func (s *fakeStream[T]) C() <-chan T { return s.out }
func (s *fakeStream[T]) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
func (s *fakeStream[T]) Close() error { s.end(nil); return nil }
