package turn

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/decision"
	"github.com/arbiterhq/arbiter/internal/jsonstr"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/store"
)

// journalTimeout bounds journal and commit writes that run after the
// caller may have gone.
const journalTimeout = 5 * time.Second

// Trace is the full record of one turn, as GET /v1/turns/{id} shows it: it
// reconstructs what the model proposed and what the server decided.
type Trace struct {
	TurnID         string    `json:"turn_id"`
	ConversationID string    `json:"conversation_id"`
	Tenant         string    `json:"tenant"`
	UserID         string    `json:"user_id"`
	Channel        string    `json:"channel,omitempty"`
	MessageID      string    `json:"message_id,omitempty"`
	Route          Route     `json:"route"`
	Status         Status    `json:"status"`
	StartedAt      time.Time `json:"started_at"`
	DurationMS     int64     `json:"duration_ms"`
	LockWaitMS     int64     `json:"lock_wait_ms"`
	Fence          int64     `json:"fence"`
	MemoryMessages int       `json:"memory_messages"`
	PromptMessages int       `json:"prompt_messages"`
	// PromptBytes is the size of the prompt's text; StablePrefixBytes how
	// much of it, from the start, repeats the conversation's previous
	// prompt (what a provider's prompt cache can reuse).
	PromptBytes       int                  `json:"prompt_bytes"`
	StablePrefixBytes int                  `json:"stable_prefix_bytes"`
	StablePrefixRatio float64              `json:"stable_prefix_ratio"`
	Evidence          []chat.Evidence      `json:"evidence,omitempty"`
	Context           []ContextSourceTrace `json:"context_sources,omitempty"`
	LLMCalls          []store.LLMCall      `json:"llm_calls"`
	// DecidedBy is the provider and exact model whose answer the turn used.
	DecidedBy *DecidedBy `json:"decided_by,omitempty"`
	CostUSD   float64    `json:"cost_usd"`
	// CostUnknown: a model call of the turn has no known price, so
	// CostUSD is a lower bound ("cost unknown" rather than a guess).
	CostUnknown bool            `json:"cost_unknown,omitempty"`
	Decision    json.RawMessage `json:"decision"`
	Repair      *RepairTrace    `json:"repair,omitempty"`
	// Sections are the modes' own parts of the record (Turn.RecordSection).
	Sections     Sections           `json:"-"`
	Review       *ReviewTrace       `json:"review,omitempty"`
	Vetoes       []Veto             `json:"vetoes"`
	Confirmation *ConfirmationTrace `json:"confirmation,omitempty"`
	// Approvals are the actions waiting for approvers that this turn
	// proposed or carried out.
	Approvals []ApprovalTrace  `json:"approvals,omitempty"`
	Executed  []ExecutionTrace `json:"executed"`
	// Progress holds the latest status updates tools reported while they
	// ran; Questions what they asked the user.
	Progress  []chat.Progress  `json:"progress,omitempty"`
	Questions []QuestionTrace  `json:"questions,omitempty"`
	ToolCalls []store.ToolCall `json:"-"`
	Say       string           `json:"say"`
	Steps     StepTraces       `json:"steps"`
	Notes     []string         `json:"notes,omitempty"`
	Error     string           `json:"error,omitempty"`

	mu sync.Mutex
}

// DecidedBy names the model that decided a turn.
type DecidedBy struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
}

// StepTrace is one pipeline step: when it started and how long it took.
type StepTrace struct {
	Name       string    `json:"name"`
	At         time.Time `json:"at"`
	DurationMS int64     `json:"duration_ms"`
	Note       string    `json:"note,omitempty"`
}

// StepTraces are a turn's steps. They encode themselves in one buffer: a
// turn journals a dozen, and time.Time's own encoder allocates for each.
type StepTraces []StepTrace

// MarshalJSON encodes the steps as encoding/json would.
func (st StepTraces) MarshalJSON() ([]byte, error) {
	return st.appendJSON(make([]byte, 0, 2+72*len(st))), nil
}

// appendJSON appends the steps as json.Marshal writes them (strings
// escaped as it escapes them; see recordWriter).
func (st StepTraces) appendJSON(b []byte) []byte {
	if st == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range st {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = jsonstr.AppendMarshaled(b, s.Name)
		b = append(b, `,"at":"`...)
		b = s.At.AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","duration_ms":`...)
		b = strconv.AppendInt(b, s.DurationMS, 10)
		if s.Note != "" {
			b = append(b, `,"note":`...)
			b = jsonstr.AppendMarshaled(b, s.Note)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// ContextSourceTrace is one live-context source's fetch.
type ContextSourceTrace struct {
	Name       string `json:"name"`
	DurationMS int64  `json:"duration_ms"`
	Sections   int    `json:"sections"`
	Error      string `json:"error,omitempty"`
}

// RepairTrace records a broken model output and the repair attempt.
type RepairTrace struct {
	Output         string             `json:"output"`
	Problems       []decision.Problem `json:"problems"`
	Repaired       bool               `json:"repaired"`
	SecondOutput   string             `json:"second_output,omitempty"`
	SecondProblems []decision.Problem `json:"second_problems,omitempty"`
}

// step records that step ran from start to end (engine clock); detail,
// when set, names the tool it was about ("execute:create_task"). It is the
// one timer of the pipeline's steps.
func (t *Trace) step(step Step, detail string, start, end time.Time, note string) {
	name := string(step)
	if detail != "" {
		name = stepNames.name(step, detail)
	}
	t.mu.Lock()
	t.Steps = append(t.Steps, StepTrace{Name: name, At: start, DurationMS: end.Sub(start).Milliseconds(), Note: note})
	t.mu.Unlock()
}

// stepNames interns "step:detail": details are the configuration's tools,
// operations and rules, so every turn names the same few steps, and a name
// made once per process saves a string per step of every turn.
var stepNames = stepNameCache{names: make(map[[2]string]string)}

// The cache is bounded in entries and in their length (a validation step
// names whatever tool the model proposed); other names are made per step.
const (
	maxStepNames      = 1024
	maxStepDetailSize = 64
)

type stepNameCache struct {
	mu    sync.RWMutex
	names map[[2]string]string
}

func (c *stepNameCache) name(step Step, detail string) string {
	key := [2]string{string(step), detail}
	c.mu.RLock()
	name, ok := c.names[key]
	c.mu.RUnlock()
	if ok {
		return name
	}
	name = string(step) + ":" + detail
	c.mu.Lock()
	if len(c.names) < maxStepNames && len(detail) <= maxStepDetailSize {
		c.names[key] = name
	}
	c.mu.Unlock()
	return name
}

func (t *Trace) addSource(c ContextSourceTrace) {
	t.mu.Lock()
	t.Context = append(t.Context, c)
	t.mu.Unlock()
}

// commit writes the turn's state changes in one atomic step, guarded by the
// lease's fence: a holder that lost its lock cannot overwrite a newer turn.
// When the state backend is also the journal, the turn record goes into the
// same transaction; otherwise it is appended right after.
func (e *Engine) commit(ctx context.Context, s *state) error {
	s.awaitFinishes()
	select {
	case <-s.lease.Lost():
		return fmt.Errorf("commit turn %s of %s: %w", s.id, s.key, store.ErrFenced)
	default:
	}
	if p := s.putPending; p != nil {
		// The action is shown from this moment on: a typed "yes" that
		// arrived earlier was not an answer to it (see resolvePending).
		p.CreatedAt = e.cfg.Now()
		p.ExpiresAt = p.CreatedAt.Add(e.cfg.PendingTTL)
		s.out.Pending.ExpiresAt = p.ExpiresAt
	}
	// The commit is the turn's last use of the lock: the journal record
	// that may follow belongs to this turn alone.
	c := store.Commit{Key: s.key, Fence: s.lease.Fence(), Conversation: &s.conv, DropPending: s.dropPending,
		PutPending: s.putPending, Release: true}
	if s.claimed {
		reply, err := json.Marshal(s.out)
		if err != nil {
			return fmt.Errorf("encode reply of turn %s: %w", s.id, err)
		}
		c.MessageID, c.Reply = s.in.MessageID, reply
	}
	if s.trace.Status == "" {
		s.trace.Status = StatusOK
	}
	rec, err := e.record(s)
	if err != nil {
		return err
	}
	if e.journalInState {
		c.Turn = &rec
	}
	cctx, cancel := context.WithTimeout(s.detachedFrom(ctx), journalTimeout)
	defer cancel()
	if err := e.cfg.State.Commit(cctx, c); err != nil {
		return fmt.Errorf("commit turn %s of %s: %w", s.id, s.key, err)
	}
	if !e.journalInState {
		e.appendRecord(cctx, s, rec)
	}
	e.logTurn(s)
	return nil
}

// detachedFrom is ctx without its cancellation: the turn's own detached
// context when it has one (made once a turn).
func (s *state) detachedFrom(ctx context.Context) context.Context {
	if s.detached != nil {
		return s.detached
	}
	return context.WithoutCancel(ctx)
}

// journalFailure records a turn that could not produce a reply.
func (e *Engine) journalFailure(s *state, stage Step, err error) {
	s.trace.Status = FailedAt(stage)
	s.trace.Error = err.Error()
	e.writeJournal(context.Background(), s)
}

// writeJournal appends the turn record on its own (failures, duplicates).
func (e *Engine) writeJournal(ctx context.Context, s *state) {
	rec, err := e.record(s)
	if err != nil {
		e.cfg.Logger.Error("encode turn trace", "turn", s.id, "err", err)
		return
	}
	cctx, cancel := context.WithTimeout(s.detachedFrom(ctx), journalTimeout)
	defer cancel()
	e.appendRecord(cctx, s, rec)
	e.logTurn(s)
}

// appendRecord writes a turn record. A journal failure does not undo the
// turn (its effects are committed); it is logged loudly.
func (e *Engine) appendRecord(ctx context.Context, s *state, rec store.TurnRecord) {
	if err := e.cfg.Journal.AppendTurn(ctx, rec); err != nil {
		e.cfg.Logger.Error("journal turn", "turn", s.id, "err", err)
	}
}

// record finalizes the trace and builds the journal row.
func (e *Engine) record(s *state) (store.TurnRecord, error) {
	t := &s.trace
	t.DurationMS = e.cfg.Now().Sub(s.start).Milliseconds()
	if t.Vetoes == nil {
		t.Vetoes = []Veto{}
	}
	if t.Executed == nil {
		t.Executed = []ExecutionTrace{}
	}
	if t.LLMCalls == nil {
		t.LLMCalls = []store.LLMCall{}
	}
	if t.Decision == nil {
		t.Decision = json.RawMessage("null")
	}
	redact := e.redactTrace(t)
	raw, err := t.encode()
	if err != nil {
		return store.TurnRecord{}, fmt.Errorf("encode trace of turn %s: %w", s.id, err)
	}
	if redact != nil {
		raw = []byte(redact.Replace(string(raw)))
	}
	return store.TurnRecord{
		TurnID: s.id, Tenant: s.key.Tenant, Chat: s.key.Chat, UserID: s.key.User,
		Route: string(t.Route), Status: string(t.Status), StartedAt: s.start, DurationMS: t.DurationMS,
		LLMCalls: t.LLMCalls, ToolCalls: t.ToolCalls, Trace: raw,
	}, nil
}

// logTurn writes the one log line per turn, joinable with the journal on
// the turn id, and hands the trace to the observer.
func (e *Engine) logTurn(s *state) {
	if e.cfg.Observe != nil {
		e.cfg.Observe(&s.trace)
	}
	if !e.cfg.Logger.Enabled(context.Background(), slog.LevelInfo) {
		return
	}
	t := &s.trace
	// Typed attributes: no value is boxed on a line written every turn.
	// The line shows what the service's operators read first: how long
	// the turn waited for its lock, how long it took, and whether the
	// provider chain fell back — and to which model that decided.
	var decided string
	if t.DecidedBy != nil {
		decided = t.DecidedBy.Provider + "/" + t.DecidedBy.Model
	}
	e.cfg.Logger.LogAttrs(context.Background(), slog.LevelInfo, "turn", slog.String("turn", s.id), slog.String("tenant", s.key.Tenant),
		slog.String("chat", s.key.Chat), slog.String("user", s.key.User), slog.String("route", string(t.Route)),
		slog.String("status", string(t.Status)), slog.Int64("lock_wait_ms", t.LockWaitMS), slog.Int64("duration_ms", t.DurationMS),
		slog.Int("llm_calls", len(t.LLMCalls)), slog.Bool("fallback", fellBack(t.LLMCalls)), slog.String("decided_by", decided),
		slog.Int("executed", len(t.Executed)))
}

// fellBack reports whether a model call of the turn went to a fallback
// (another provider or model after the first failed).
func fellBack(calls []store.LLMCall) bool {
	return slices.ContainsFunc(calls, func(c store.LLMCall) bool { return c.Attempt == llm.AttemptFallback })
}
