package main

// Results is the machine-readable outcome of a run (--json). Durations are
// milliseconds, memory KiB (as /proc reports it), rates per second.
type Results struct {
	Started string   `json:"started"` // RFC 3339
	Mode    string   `json:"mode"`    // full or quick
	Server  string   `json:"server"`  // binary or in-process
	Store   string   `json:"store"`   // sqlite or postgres
	Machine Machine  `json:"machine"`
	Model   ModelCfg `json:"model"`
	Command string   `json:"command"`

	Binary      *BinaryInfo        `json:"binary,omitempty"`
	Startup     *Startup           `json:"startup,omitempty"`
	Latency     *Latency           `json:"latency,omitempty"`
	OpenAI      *OpenAILatency     `json:"openai,omitempty"`
	Concurrency []ConcurrencyLevel `json:"concurrency,omitempty"`
	Relay       []Relay            `json:"relay,omitempty"`
	Length      []LengthPoint      `json:"length,omitempty"`
	Replay      *Replay            `json:"replay,omitempty"`
	Branches    *Branches          `json:"branches,omitempty"`
	Memory      *Memory            `json:"memory,omitempty"`
	Subscribers *Subscribers       `json:"subscribers,omitempty"`
	Hostile     *Hostile           `json:"hostile,omitempty"`
	Schedules   *Schedules         `json:"schedules,omitempty"`
	Cluster     *Cluster           `json:"cluster,omitempty"`
	PGFloor     *Floor             `json:"pg_floor,omitempty"`

	Targets []Target `json:"targets"`
	Notes   []string `json:"notes,omitempty"`
}

// Machine describes where the figures come from.
type Machine struct {
	CPUs        int     `json:"cpus"`
	CPUModel    string  `json:"cpu_model,omitempty"`
	MemTotalKB  int64   `json:"mem_total_kb,omitempty"`
	Kernel      string  `json:"kernel,omitempty"`
	GoVersion   string  `json:"go_version"`
	LoadStart   float64 `json:"load_avg_1m_start"`
	LoadEnd     float64 `json:"load_avg_1m_end"`
	LoadStart5m float64 `json:"load_avg_5m_start"`
	LoadEnd5m   float64 `json:"load_avg_5m_end"`
}

// ModelCfg is how the scripted model answered.
type ModelCfg struct {
	TTFTMs       float64 `json:"ttft_ms"`
	ChunkDelayMs float64 `json:"chunk_delay_ms"`
	AnswerDeltas int     `json:"answer_deltas"`
}

type BinaryInfo struct {
	Path      string `json:"path"`
	SizeBytes int64  `json:"size_bytes"`
}

type Startup struct {
	Runs []float64 `json:"runs_ms"`
	Dist Dist      `json:"dist"`
}

// Latency is phase 1: a turn through the server against the same model
// requests made directly.
type Latency struct {
	Plain LatencyPair `json:"plain"`
	Tool  LatencyPair `json:"tool"`
}

type LatencyPair struct {
	Direct  Dist `json:"direct"`  // the model requests of the turn, made directly
	Agentik Dist `json:"agentik"` // POST message → end event on SSE
	// Added is Agentik minus Direct at the same percentile.
	AddedP50Ms float64 `json:"added_p50_ms"`
	AddedP99Ms float64 `json:"added_p99_ms"`
	// Pairwise is the distribution of (turn − its own direct replay).
	Pairwise Dist `json:"pairwise_added"`
	// Ack is POST message → 202: the user message committed.
	Ack Dist `json:"ack"`
	// ServerCPUPerTurnMs is the server's CPU time per turn (see ConcurrencyLevel).
	ServerCPUPerTurnMs float64 `json:"server_cpu_per_turn_ms"`
}

type ConcurrencyLevel struct {
	Conversations int     `json:"conversations"`
	Seconds       float64 `json:"seconds"`
	Turns         int     `json:"turns"`
	TurnsPerSec   float64 `json:"turns_per_sec"`
	Latency       Dist    `json:"latency"`
	Errors        int     `json:"errors"`
	// ServerCPUPerTurnMs is the server process's CPU time over the whole
	// level (warm-up included) divided by every turn it completed: a figure
	// that, unlike turns/s, holds when other work shares the machine.
	ServerCPUPerTurnMs float64 `json:"server_cpu_per_turn_ms"`
	// DirectTurnsPerSec is the floor measured right after the level: as
	// many clients making the level's model requests directly (the model
	// called without the runtime), model calls per second; OfDirect is
	// TurnsPerSec ÷ DirectTurnsPerSec.
	DirectTurnsPerSec float64 `json:"direct_turns_per_sec,omitempty"`
	OfDirect          float64 `json:"of_direct,omitempty"`
}

type Relay struct {
	Clients        int     `json:"clients"`
	DeltasSent     int     `json:"deltas_sent"`
	DeliveredMin   int     `json:"delivered_min"`
	DeliveredTotal int64   `json:"delivered_total"`
	Seconds        float64 `json:"seconds"`
	// DeltasPerSec is deltas delivered to all clients together per second.
	DeltasPerSec float64 `json:"deltas_per_sec"`
	// PerClientDeltasPerSec is one client's rate (the median client).
	PerClientDeltasPerSec float64 `json:"per_client_deltas_per_sec"`
	// ModelDeltasPerSec is how fast the model alone streams the same answer.
	ModelDeltasPerSec float64 `json:"model_deltas_per_sec,omitempty"`
}

type LengthPoint struct {
	Messages    int     `json:"messages"`
	SeedSeconds float64 `json:"seed_seconds"`
	StartupMs   float64 `json:"startup_ms"`
	FirstTurnMs float64 `json:"first_turn_ms"`
	Latency     Dist    `json:"latency"`
}

type Replay struct {
	Events      int     `json:"events"`
	Dist        Dist    `json:"dist"`
	ServerCPUMs float64 `json:"server_cpu_ms,omitempty"` // server CPU time per replay (the client's parsing is not in it)
}

type Memory struct {
	IdleRSSKB          int64   `json:"idle_rss_kb"`
	IdleAnonKB         int64   `json:"idle_rss_anon_kb,omitempty"` // of IdleRSSKB: the heap, stacks and runtime
	IdleFileKB         int64   `json:"idle_rss_file_kb,omitempty"` // of IdleRSSKB: the binary's pages mapped
	WarmRSSKB          int64   `json:"warm_rss_kb"`                // after a few turns
	IdleConversations  int     `json:"idle_conversations"`
	RSSWithConvsKB     int64   `json:"rss_with_conversations_kb"`
	PerConversationKB  float64 `json:"per_conversation_kb"`
	SSEClients         int     `json:"sse_clients"`
	RSSWithClientsKB   int64   `json:"rss_with_clients_kb"`
	PerSSEClientKB     float64 `json:"per_sse_client_kb"`
	RSSAfterBurstKB    int64   `json:"rss_after_relay_kb,omitempty"`
	WSClients          int     `json:"ws_clients,omitempty"`
	RSSWithWSClientsKB int64   `json:"rss_with_ws_clients_kb,omitempty"`
	PerWSClientKB      float64 `json:"per_ws_client_kb,omitempty"`
}

// Subscribers is what idle SSE subscribers cost once an answer has been
// through their buffers.
type Subscribers struct {
	Clients        int     `json:"clients"`
	Deltas         int     `json:"deltas"`
	SettleSeconds  float64 `json:"settle_seconds"`
	IdleRSSKB      int64   `json:"idle_rss_kb"`
	ConnectedRSSKB int64   `json:"connected_rss_kb"`
	AfterRSSKB     int64   `json:"after_rss_kb"`
	AboveIdleMiB   float64 `json:"above_idle_mib"`
	// What of the growth is pages of the binary's own file (RssFile:
	// code first run while serving, shared and reclaimable) rather than
	// memory the process allocated (RssAnon).
	FileAboveIdleMiB float64 `json:"file_above_idle_mib"`
	AnonAboveIdleMiB float64 `json:"anon_above_idle_mib"`
}

// Hostile is what hostile callers made the real binary do (issue 44), each
// part on a fresh server with its default settings and two principals'
// tokens. Descriptor counts are the entries of /proc/<pid>/fd; peak memory
// is VmHWM, the process's high-water mark since it started.
type Hostile struct {
	SlowBodies *SlowBodies `json:"slow_bodies,omitempty"`
	MCPBomb    *MCPBomb    `json:"mcp_bomb,omitempty"`
	Metadata   *BigPayload `json:"metadata,omitempty"`           // a REST message's context.metadata
	Approval   *BigPayload `json:"approval_arguments,omitempty"` // an approval's edited arguments
	IRC        *IRCFlood   `json:"irc_flood,omitempty"`
}

// SlowBodies: clients that send headers announcing ContentLength bytes,
// SentBytes of them, then nothing, watched for WindowSeconds. Times are
// from the last byte sent.
type SlowBodies struct {
	Clients       int         `json:"clients"`
	ContentLength int         `json:"content_length"`
	SentBytes     int         `json:"sent_bytes"`
	WindowSeconds float64     `json:"window_seconds"`
	Routes        []SlowRoute `json:"routes"`
	Answered      int         `json:"answered"`
	Answer        Dist        `json:"answer"`
	Closed        int         `json:"closed"` // the client saw EOF (or a reset)
	Close         Dist        `json:"close"`
	FDsIdle       int         `json:"fds_idle"`
	FDsPeak       int         `json:"fds_peak"`
	FDsEnd        int         `json:"fds_end"`   // every client done or the window over, the clients still connected
	FDsAfter      int         `json:"fds_after"` // after the clients hung up
}

type SlowRoute struct {
	Route    string      `json:"route"` // "GET /health"
	What     string      `json:"what"`
	Clients  int         `json:"clients"`
	Answered int         `json:"answered"`
	Statuses map[int]int `json:"statuses"` // status → answers
	Answer   Dist        `json:"answer"`
	Closed   int         `json:"closed"`
	Close    Dist        `json:"close"`
}

// MCPBomb: a tools/call whose arguments hold an array of Elements numbers.
type MCPBomb struct {
	Path        string    `json:"path"`
	Elements    int       `json:"elements"`
	BodyBytes   int       `json:"body_bytes"`
	RSSBeforeKB int64     `json:"rss_before_kb"`
	HWMBeforeKB int64     `json:"hwm_before_kb"`
	One         BombRound `json:"one"`
	Four        BombRound `json:"four"`
	RSSAfterKB  int64     `json:"rss_after_kb"`
}

// BombRound is Requests sent at once.
type BombRound struct {
	Requests int      `json:"requests"`
	Statuses []int    `json:"statuses"`
	Codes    []string `json:"codes"` // the JSON-RPC error code of each answer, "" for none
	Ms       float64  `json:"ms"`    // until the last answer
	HWMKB    int64    `json:"hwm_kb"`
	First    string   `json:"first"` // the start of the first answer
}

// BigPayload is one request carrying Bytes where a small value belongs.
type BigPayload struct {
	Bytes       int    `json:"bytes"`
	Status      int    `json:"status"`
	Code        string `json:"code,omitempty"` // the error code of the answer
	RSSBeforeKB int64  `json:"rss_before_kb"`
	HWMBeforeKB int64  `json:"hwm_before_kb"`
	HWMAfterKB  int64  `json:"hwm_after_kb"`
	RSSAfterKB  int64  `json:"rss_after_kb"`
}

// IRCFlood: Connections from From that never register, classified a second
// after the last connected: kept open (Accepted), refused with an ERROR
// line, or closed without a word; then a login from Other.
type IRCFlood struct {
	Connections     int            `json:"connections"`
	From            string         `json:"from"`
	Accepted        int            `json:"accepted"`
	Refused         int            `json:"refused"`
	Reasons         map[string]int `json:"reasons,omitempty"`
	ClosedSilently  int            `json:"closed_silently"`
	FDsIdle         int            `json:"fds_idle"`
	FDsPeak         int            `json:"fds_peak"`
	FDsAfter        int            `json:"fds_after"`
	Other           string         `json:"other"`
	OtherRegistered bool           `json:"other_registered"`
	OtherReply      string         `json:"other_reply"`
}

// Target is one published goal and whether this run met it.
type Target struct {
	Issue   string  `json:"issue"`
	Name    string  `json:"name"`
	Goal    string  `json:"goal"`
	Value   float64 `json:"value"`
	Unit    string  `json:"unit"`
	Met     bool    `json:"met"`
	Missing bool    `json:"missing,omitempty"` // the phase did not run
}
