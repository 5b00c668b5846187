package agentik

import "context"

// AgentInfo describes an agent (GET {prefix}).
type AgentInfo struct {
	ID           string       `json:"id"`
	Name         string       `json:"name"`
	Description  string       `json:"description,omitempty"`
	Version      string       `json:"version,omitempty"`
	Model        string       `json:"model,omitempty"`
	Capabilities Capabilities `json:"capabilities"`
}

// Capabilities of an agent.
type Capabilities struct {
	ImageInput  bool `json:"image_input"`
	ImageOutput bool `json:"image_output"`
	Streaming   bool `json:"streaming"`
}

// ConversationInfo is the snapshot of a conversation as the API shows it.
// Owner is the principal that created it; it never travels on the wire.
type ConversationInfo struct {
	ID                  string      `json:"id"`
	Title               string      `json:"title,omitempty"`
	Temporal            bool        `json:"temporal"`
	CreatedAt           Time        `json:"created_at"`
	UpdatedAt           Time        `json:"updated_at"`
	SupportsImageInput  bool        `json:"supports_image_input"`
	SupportsImageOutput bool        `json:"supports_image_output"`
	Working             bool        `json:"working"`
	Tokens              *TurnTokens `json:"tokens,omitempty"`      // running totals
	Head                int64       `json:"head,omitempty"`        // seq of the head (SPEC §18)
	ForkedFrom          *ForkedFrom `json:"forked_from,omitempty"` // set on a fork
	Owner               string      `json:"-"`
}

// Busy policies: what a message that arrives while a turn runs does.
const (
	BusyEnqueue   = "enqueue"   // stored now, answered after the running turn
	BusyInterrupt = "interrupt" // the running turn is cancelled, then this one answered
	BusyReject    = "reject"    // refused with EBusy, nothing stored
)

// ValidBusyPolicy reports whether p is "" (the default) or a known policy.
func ValidBusyPolicy(p string) bool {
	return p == "" || p == BusyEnqueue || p == BusyInterrupt || p == BusyReject
}

// CreateRequest asks for a new conversation. ID is for facades whose
// clients name conversations (AG-UI threadId, A2A contextId): it must satisfy
// ValidID, and an existing id is EConflict. Empty: a new id is made.
type CreateRequest struct {
	Temporal bool   `json:"temporal,omitempty"`
	Title    string `json:"title,omitempty"`
	ID       string `json:"-"`
	// History are messages the conversation starts with, stored as given
	// (new ids) in one commit with their working memory, no turn run for
	// them: user messages, and assistant messages answering the user
	// message before them (ReplyTo its ID). It ends with an answer; a user
	// message left unanswered inside is closed. For facades whose clients
	// resend a history the server never saw (OpenAI Chat Completions).
	History []Message `json:"-"`
}

// SendRequest is a user message to store and answer.
//
// ClientTools and ToolResults serve facades whose clients run tools
// themselves (AG-UI frontend tools): ClientTools are offered to the model for
// this turn beside the agent's own; when the model calls one, the turn ends
// with reason EndClientTools and waits. A later Send with ToolResults for
// every pending call feeds them back and the turn continues. Content may then
// be empty; if it is not, the new message is answered after the continued
// turn. A new message without ToolResults abandons the waiting turn (it is
// closed with interrupted{reason:busy_policy}).
type SendRequest struct {
	Content []Content       `json:"content"`
	Context *MessageContext `json:"context,omitempty"`
	IfBusy  string          `json:"if_busy,omitempty"`
	// Parent, when set, is the seq the message follows (0: the root): a
	// Parent that is not the head is an edit, a new branch (SPEC §18).
	// Nil follows the head.
	Parent      *int64             `json:"parent,omitempty"`
	ClientTools []ToolSpec         `json:"-"`
	ToolResults []ClientToolResult `json:"-"`
	// Params are the sampling parameters of the message's turn (nil: the
	// model's settings); kept with the message (Message.Params).
	Params *ModelParams `json:"-"`
	// Keys are lookup keys recorded with the message, in its commit
	// (Write.Keys): KeyFinder finds the conversation by them later, from
	// any process and after a restart. Not for temporal conversations.
	Keys []string `json:"-"`
}

// KeyFinder is the part of an Agent that finds the caller's conversations
// by the lookup keys their messages were sent with (SendRequest.Keys):
// key → the conversation and the seq of that message. Keys not found are
// absent. The OpenAI door finds a resent Chat Completions history this way.
type KeyFinder interface {
	FindKeys(ctx context.Context, keys []string) (map[string]KeyRef, error)
}

// ClientToolResult is the result of a client tool call.
type ClientToolResult struct {
	CallID  string
	Content []Content
	IsError bool
}

// SendResult identifies the stored user message (or, when a Send only
// carried tool results, the user message whose turn continues).
type SendResult struct {
	MessageID string `json:"message_id"`
	Seq       int64  `json:"seq"`
}

// ListRequest pages the conversation list, newest updated_at first. Before is
// the Next token of the previous page ("" for the first page).
type ListRequest struct {
	Limit  int
	Before string
}

// ConversationList is one page of conversations.
type ConversationList struct {
	Conversations []ConversationInfo `json:"conversations"`
	Next          string             `json:"next,omitempty"`
}

// MessagesRequest pages a journal by seq. After gives the page above it,
// Before the newest page below it; Offset skips entries; Limit defaults to 50
// and is at most 500. Results are always in ascending seq order.
type MessagesRequest struct {
	After  int64
	Before int64
	Offset int
	Limit  int
	// Branch is "" (or BranchHead) for the head path, BranchAll for every
	// message of the journal (SPEC §18).
	Branch string
}

// Branches MessagesRequest.Branch reads.
const (
	BranchHead = "head"
	BranchAll  = "all"
)

// RegenerateRequest asks for the answer to user message Seq (0: the last
// user message of the head path) again, on a new branch (SPEC §18).
type RegenerateRequest struct {
	Seq    int64  `json:"seq,omitempty"`
	IfBusy string `json:"if_busy,omitempty"`
}

// ForkRequest copies the path up to Seq (0: the head) into a new
// conversation of the same owner.
type ForkRequest struct {
	Seq int64 `json:"seq,omitempty"`
}

// Brancher is the part of Conversation that branches (SPEC §18).
// Regenerate answers a user message again on a new branch (ENotFound for
// a seq of no message, EInvalid for one that is not a closed user
// message's, EBusy under if_busy reject while a turn runs). SetHead makes
// seq the head (ENotFound for no such message, EBusy while a turn runs or
// waits). Fork copies a path into a new conversation and returns it.
type Brancher interface {
	Regenerate(ctx context.Context, req RegenerateRequest) (SendResult, error)
	SetHead(ctx context.Context, seq int64) (ConversationInfo, error)
	Fork(ctx context.Context, req ForkRequest) (ConversationInfo, error)
}

// Paging limits of MessagesRequest.
const (
	DefaultMessagesLimit = 50
	MaxMessagesLimit     = 500
)

// MessagePage is one page of a journal. Cursor is the conversation's latest
// durable cursor when the page was read: subscribe from it to miss nothing.
type MessagePage struct {
	Messages []Message `json:"messages"`
	HasMore  bool      `json:"has_more"`
	Cursor   int64     `json:"cursor"`
}

// LiveOnly as the after argument of Events asks for live events only.
const LiveOnly int64 = -1

// Stream is a subscription. C is closed when the stream ends; Err then says
// why (nil after Close or when the context ended, ErrSlowSubscriber when the
// subscriber fell behind and must resume from its last cursor, or the error
// that ended it). Close is idempotent and safe to call concurrently with
// receiving from C.
type Stream[T any] interface {
	C() <-chan T
	Err() error
	Close() error
}

// ErrSlowSubscriber ends a stream whose reader fell behind. Resuming from the
// last received cursor loses nothing.
var ErrSlowSubscriber = Errorf(EUnavailable, "subscriber too slow; resume from the last cursor")

// Agent is the core's front: every facade speaks to it. Implementations are
// safe for concurrent use. Every method that takes a context acts for the
// principal in it (see WithPrincipal): conversations of other principals are
// ENotFound. Errors are *Error values with codes from this package.
type Agent interface {
	Info() AgentInfo
	CreateConversation(ctx context.Context, req CreateRequest) (ConversationInfo, error)
	// Conversation returns a handle to an existing conversation.
	Conversation(ctx context.Context, id string) (Conversation, error)
	ListConversations(ctx context.Context, req ListRequest) (ConversationList, error)
	DeleteConversation(ctx context.Context, id string) error
	RenameConversation(ctx context.Context, id, title string) (ConversationInfo, error)
	// Events streams agent events with a cursor greater than after (LiveOnly
	// for live events only), then live ones, until ctx ends or Close.
	Events(ctx context.Context, after int64) (Stream[AgentEvent], error)
}

// Conversation is a handle to one conversation. Handles are cheap; Close
// releases this handle (idempotent) and never deletes anything.
//
// Every Conversation has the capabilities embedded at the end (tool
// approval, interrupting one turn, reading a message by id): facades call
// them without asserting. An implementation that cannot provide one (a
// client whose server has no endpoint for it) still has the method and
// returns an *Error saying so.
type Conversation interface {
	ID() string
	Info(ctx context.Context) (ConversationInfo, error)
	// Send stores the user message (durably, unless temporal) and returns once
	// it is committed; the answer arrives as events.
	Send(ctx context.Context, req SendRequest) (SendResult, error)
	// Interrupt cancels the running turn, or withdraws the turn of a message
	// just sent that has not started yet; false when idle.
	Interrupt(ctx context.Context) (bool, error)
	Messages(ctx context.Context, req MessagesRequest) (MessagePage, error)
	// Events streams durable events with a cursor greater than after (LiveOnly
	// for live events only), then live durable and online events. When a turn
	// is running at subscription time the stream first carries working and the
	// partial text so far as one append_text.
	Events(ctx context.Context, after int64) (Stream[Event], error)
	Rename(ctx context.Context, title string) (ConversationInfo, error)
	Close() error

	Approver
	TurnInterrupter
	MessageReader
	Brancher
	StateSharer
}

// TurnInterrupter is the part of Conversation that interrupts one turn: the
// turn answering the user message replyTo if it is running, or — before it
// starts — by withdrawing it from the queue (it is then closed with
// interrupted{reason:user}). False when that turn is already over. Facades
// that map a run or a task to one turn use it instead of Interrupt, which
// cuts whatever turn runs.
type TurnInterrupter interface {
	InterruptTurn(ctx context.Context, replyTo string) (bool, error)
}

// MessageReader is the part of Conversation that reads one journal message
// by its id (ENotFound when the conversation has none with that id).
// Facades whose clients refer to messages by id (IRC msgid selectors in
// CHATHISTORY) use it.
type MessageReader interface {
	Message(ctx context.Context, id string) (Message, error)
}

// StateSharer is the part of Conversation that holds its shared state
// (SPEC §19, docs/state.md): one JSON object that clients (AG-UI state,
// the native API, LangGraph thread values) and the agent (update_state)
// read and change. Its encoding is at most MaxSharedState bytes. Every
// change is a durable state_updated event, committed with the new state;
// a change that leaves the state as it was stores nothing.
//
// SharedState returns the state ({} when none was set). PutSharedState
// replaces it with an object (EInvalid for anything else, ETooLarge over
// the bound) and PatchSharedState applies an RFC 6902 patch to it
// (EInvalid for a patch that is malformed, does not apply or leaves no
// object, ETooLarge over the bound); both return the
// new state, and on an error change nothing.
type StateSharer interface {
	SharedState(ctx context.Context) (RawJSON, error)
	PutSharedState(ctx context.Context, state RawJSON) (RawJSON, error)
	PatchSharedState(ctx context.Context, patch RawJSON) (RawJSON, error)
}

// StateKeeper is an optional part of a Conversation: its durable state by
// key (ConversationState), kept with it and deleted with it, for a front
// door's own records outside of any turn (the LangGraph door's deleted
// runs). Keys are the door's namespace ("langgraph. …"); SharedStateKey is
// not one (EInvalid).
type StateKeeper interface {
	KeptState() ConversationState
}

// MaxSharedState bounds a conversation's shared state: the bytes of its
// compact JSON encoding (64 KiB, the bound of a conversation state value).
const MaxSharedState = MaxStateValue

// SharedStateKey is the conversation state key (Write.State) the shared
// state is kept under.
const SharedStateKey = "agentik.state"
