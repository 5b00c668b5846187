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
	Concurrency []ConcurrencyLevel `json:"concurrency,omitempty"`
	Relay       []Relay            `json:"relay,omitempty"`
	Length      []LengthPoint      `json:"length,omitempty"`
	Replay      *Replay            `json:"replay,omitempty"`
	Memory      *Memory            `json:"memory,omitempty"`
	Subscribers *Subscribers       `json:"subscribers,omitempty"`

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
