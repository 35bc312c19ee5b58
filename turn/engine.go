// Package turn is the turn engine: Engine.HandleTurn takes one inbound
// message through a fixed pipeline — route, lock, dedupe, load memory,
// the deterministic routes, then the assistant's mode (see Mode: it
// assembles the prompt, asks the model and takes what it proposes through
// the guards, with the Turn handle), reply, journal — one step per file.
// The engine names no mode but the default's name: Config.Modes gives
// them, arbiter's own from package turn/mode/builtin (each a package
// under turn/mode). The model only proposes; every step after it is
// server code that may refuse what it proposed.
//
// The engine returns the reply and never calls back into a channel. It
// depends on the contracts in chat, llm, tool and store, never on a concrete
// backend, provider or channel.
package turn

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/media"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn/internal/gate"
)

// Defaults of Config, as in the seed system.
const (
	DefaultWindow         = 16
	DefaultMemoryTTL      = 30 * time.Minute
	DefaultPause          = 10 * time.Minute
	DefaultPendingTTL     = 10 * time.Minute
	DefaultModelTimeout   = 40 * time.Second
	DefaultMaxTokens      = 1000
	DefaultContextTimeout = 3 * time.Second
	DefaultTurnTimeout    = 90 * time.Second
	DefaultStrategy       = "balanced"
	// DefaultLanguage is chat.DefaultLanguage: replies are in it when
	// neither the user nor the tenant names a language (chat.Language).
	DefaultLanguage = chat.DefaultLanguage
)

// Role names the tools a role may be shown; patterns are exact names or
// globs ("*", "list_*").
type Role struct {
	Tools []string
}

// Tenant is one isolated customer: its users' roles, time zone, language.
type Tenant struct {
	ID            string
	Timezone      string // IANA name; default UTC
	Language      string // one of chat.Languages; default DefaultLanguage (chat.Language)
	AssistantName string
	Roles         map[string]Role
	// Strategy names the entry of Config.Strategies that decides this
	// tenant's turns; empty means Config.Strategy.
	Strategy string
	// Assistant names the entry of Config.Assistants this tenant's turns
	// run under; empty means the default one (Config.DefaultMode, no
	// settings).
	Assistant string
}

// MemoryPolicy bounds what the model sees of a conversation.
type MemoryPolicy struct {
	// Window is how many messages (including the current one) go to the
	// model; zero means DefaultWindow.
	Window int
	// TTL is the hard age limit of a remembered message; zero means
	// DefaultMemoryTTL.
	TTL time.Duration
	// Pause is the silence after which a conversation starts afresh; zero
	// means DefaultPause.
	Pause time.Duration
}

// Command is a deterministic route: a slash command that runs a tool with
// fixed arguments and no model call.
type Command struct {
	Tool string
	Args string // JSON object; empty means {}
	// Help is the command's line in /help, by language; empty, the
	// tool's title.
	Help tool.Localized
}

// Config wires an Engine. Zero values are the documented defaults; State,
// Locker, Journal and Tools are required.
type Config struct {
	State   store.State
	Locker  store.Locker
	Journal store.Journal
	Tools   *tool.Registry
	// Context sources are asked for live facts before every model call.
	Context []tool.ContextSource
	// LinkRoutes are the deterministic "what is this task" routes the
	// tool kinds bring (the task boards'), each with its phrases and the
	// reader of its links; none, no route.
	LinkRoutes []LinkRoute
	// LinkHosts are the hosts a reply may link to with parameters (the
	// server's own, the integrations'); links elsewhere lose their query
	// and images from elsewhere are removed (see links.go).
	LinkHosts []string
	// Model decides free-text turns; nil means no model is configured and
	// free text gets a reply saying so. A provider that is llm.TurnScoped
	// (a chain) gets a fresh view per turn.
	Model llm.Provider
	// Strategy names Model in the journal ("balanced").
	Strategy string
	// Strategies are other named providers (chains) tenants may choose.
	Strategies map[string]llm.Provider
	// InvalidFallback: when a model's output is still invalid after its
	// repair, ask the next model of the chain as well. Off by default:
	// trying models until something parses hides broken prompts.
	InvalidFallback bool
	// Prices by model name, for the journal's cost estimate. Unpriced
	// names providers whose models cost what no price list says (a
	// self-hosted or custom endpoint): their calls are "cost unknown".
	Prices   llm.Prices
	Unpriced map[string]bool
	Tenants  map[string]Tenant
	// Assistants are the named profiles tenants choose (Tenant.Assistant).
	Assistants map[string]Assistant
	// Modes are the modes an assistant may name (Assistant.Mode);
	// required. Package turn/mode/builtin has arbiter's own.
	Modes Modes
	// DefaultMode is the mode of an assistant that names none, and of
	// the assistant a tenant without one runs under (builtin.DefaultMode
	// for the built-in modes); it may be left out when Modes holds one.
	DefaultMode ModeName
	Memory      MemoryPolicy
	// Lifetimes are how long the conversation's state beside the memory
	// is kept: its case, its offers and the modes' slots.
	Lifetimes Lifetimes
	// Media bounds what is read of attached files: a PDF's size, pages
	// and characters, a picture's size (zero fields: media's defaults).
	Media      media.Limits
	PendingTTL time.Duration
	// ApprovalTTL is how long an action waits for its approvers; zero
	// means DefaultApprovalTTL.
	ApprovalTTL time.Duration
	// ReadBack bounds how an approved write that may have happened is
	// read back from its system while that system cannot answer.
	ReadBack ReadBackPolicy
	// Sleep waits d, or until ctx ends (its error then); default a timer.
	// Tests inject it, with Now, so waiting takes no time.
	Sleep func(ctx context.Context, d time.Duration) error
	// ModelTimeout bounds one plain model request including the retries
	// and fallbacks a provider chain may make inside it; each provider
	// bounds its own calls (60 s by default for a plain call). A streamed
	// request, whose answer someone watches arrive, is bounded by the
	// turn's timeout and the provider's stream limits instead.
	ModelTimeout time.Duration
	MaxTokens    int
	Temperature  float64
	// ContextTimeout bounds each live-context source.
	ContextTimeout time.Duration
	// TurnTimeout bounds the work after the lock is granted; that work is
	// not canceled when the caller goes away, so side effects and their
	// records complete together.
	TurnTimeout time.Duration
	// Commands are slash commands that run a tool without a model (the
	// task board's "/tasks"), besides the built-in /start, /help, /reset
	// and /cancel; a command whose tool is not registered is dropped.
	Commands map[string]Command
	// ModelSetup is named in the reply to a message while no model is
	// configured.
	ModelSetup ModelSetup
	Now        func() time.Time
	NewID      func() string
	Logger     *slog.Logger
	// Observe, when set, is called once per turn with its final trace,
	// after the turn is committed and journaled (metrics, tracing). It
	// must not keep or modify the trace, and should return quickly.
	Observe func(t *Trace)
	// RedactionKey keys the hashes that stand in the journal and the
	// traces for the values of the fields tools redact (tool.Spec.Redact);
	// nil: a random key made by New, so hashes are comparable only within
	// one process's life.
	RedactionKey []byte

	// UnconfirmableOutcomes are outcomes no tool confirms (intent's
	// names, or a tool's own): a reply asserting one always goes to a
	// person.
	UnconfirmableOutcomes []string
}

// Engine runs turns. It is safe for concurrent use.
type Engine struct {
	cfg Config
	// journalInState: the state backend is also the journal, so a turn's
	// record is committed with its state in one transaction.
	journalInState bool
	catalogs       sync.Map // catalogKey -> *catalog
	zones          sync.Map // name -> *time.Location
	// claims are the registered tools' outcomes (gate.CompileClaims).
	claims *gate.Claims
	// slots are the slots the modes keep, by name (see SlotKeeper).
	slots map[string]ModeSlot
}

// New validates cfg, fills defaults and returns an Engine.
func New(cfg Config) (*Engine, error) {
	if cfg.State == nil || cfg.Locker == nil || cfg.Journal == nil {
		return nil, errors.New("turn: State, Locker and Journal are required")
	}
	if cfg.Tools == nil {
		var err error
		if cfg.Tools, err = tool.NewRegistry(); err != nil {
			return nil, err
		}
	}
	cfg.fillDefaults()
	for id, t := range cfg.Tenants {
		if _, err := time.LoadLocation(t.Timezone); err != nil {
			return nil, fmt.Errorf("tenant %s: time zone %q: %w", id, t.Timezone, err)
		}
	}
	cfg.Assistants = maps.Clone(cfg.Assistants)
	if len(cfg.Modes) == 0 {
		return nil, errors.New("turn: Config.Modes is empty: give it the modes assistants may name (turn/mode/builtin.Modes for the built-in ones)")
	}
	cfg.Modes = maps.Clone(cfg.Modes)
	if err := checkAssistants(&cfg); err != nil {
		return nil, err
	}
	if err := checkLifetimes(&cfg); err != nil {
		return nil, err
	}
	if err := checkBasis(cfg.Tools); err != nil {
		return nil, err
	}
	if len(cfg.RedactionKey) == 0 {
		cfg.RedactionKey = make([]byte, 32)
		_, _ = rand.Read(cfg.RedactionKey)
	}
	claims, err := gate.CompileClaims(cfg.Tools, cfg.UnconfirmableOutcomes)
	if err != nil {
		return nil, err
	}
	j, ok := cfg.State.(store.Journal)
	return &Engine{cfg: cfg, journalInState: ok && j == cfg.Journal, claims: claims, slots: modeSlots(cfg.Modes)}, nil
}

// fillDefaults sets c's zero values to the documented defaults, and drops
// the commands whose tool this deployment lacks.
func (c *Config) fillDefaults() {
	orDefault(&c.Memory.Window, DefaultWindow)
	orDefault(&c.Memory.TTL, DefaultMemoryTTL)
	orDefault(&c.Memory.Pause, DefaultPause)
	c.Lifetimes = c.Lifetimes.withDefaults()
	orDefault(&c.PendingTTL, DefaultPendingTTL)
	orDefault(&c.ApprovalTTL, DefaultApprovalTTL)
	orDefault(&c.ModelTimeout, DefaultModelTimeout)
	orDefault(&c.MaxTokens, DefaultMaxTokens)
	orDefault(&c.ContextTimeout, DefaultContextTimeout)
	orDefault(&c.TurnTimeout, DefaultTurnTimeout)
	if c.Strategy == "" {
		c.Strategy = DefaultStrategy
	}
	c.Commands = maps.Clone(c.Commands)
	for name, cmd := range c.Commands {
		if _, ok := c.Tools.Lookup(cmd.Tool); !ok {
			delete(c.Commands, name) // a command for a tool this deployment lacks
		}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Sleep, c.ReadBack = sleepOr(c.Sleep), c.ReadBack.withDefaults()
	if c.NewID == nil {
		c.NewID = newID
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// orDefault sets *v to def when it is zero or negative: a limit, a TTL or
// a timeout left out means its default, never "none".
func orDefault[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// newID returns a time-ordered random id: 12 hex digits of milliseconds,
// then 16 of randomness.
func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	ms := strconv.FormatInt(time.Now().UnixMilli(), 16)
	return ms + hex.EncodeToString(b[:])
}

// state is everything one turn knows and decides, passed from step to
// step: grouped by concern, each group with its own lifetime in the turn.
type state struct {
	// detached is the caller's context without its cancellation, which
	// the turn's work and its commit run under.
	detached context.Context
	route    route
	lease    store.Lease
	arrival
	caller
	held
	progress
	outputs
	trace Trace
}

// arrival is the message as it came, and when.
type arrival struct {
	in chat.Inbound
	// resume is the decided action this turn carries out, or "".
	resume string
	key    chat.ConversationKey
	id     string
	start  time.Time
	now    time.Time
	// received is when the message arrived (chat.Inbound.ReceivedAt).
	received time.Time
	// images are the pictures that came with the message, by index of
	// in.Evidence; addedImages the same by index of added (see media.go).
	images      map[int]llm.Image
	addedImages map[int]llm.Image
}

// caller is who the turn answers and under what profile: set before the
// lock, the catalog and the model once the turn runs.
type caller struct {
	tenant Tenant
	// assistant is the profile the turn runs under; memory its memory
	// policy (the engine's, with the assistant's own values).
	assistant Assistant
	memory    MemoryPolicy
	loc       *time.Location
	lang      string
	cat       *catalog
	// model decides this turn, under the strategy's name.
	model    llm.Provider
	strategy string
}

// held is what the conversation held when the turn began: its state,
// waiting action, case, and what an interrupted turn left.
type held struct {
	conv store.Conversation
	// blockMarker is the conversation's marker of data blocks, once read
	// or made (see blockMarker).
	blockMarker string
	pending     *store.PendingAction
	// caseVals is the case the conversation is bound to (see case.go).
	caseVals map[string]string
	claimed  bool // the inbox record of in.MessageID is ours to complete
	// interrupted is the earlier turn that accepted in.MessageID and never
	// completed (its process died), and when it accepted it.
	interrupted   string
	interruptedAt time.Time
	// unfinished are the writes the interrupted turn began, in order.
	unfinished []store.ExecutionRecord
}

// progress is what the turn's steps have done so far that later steps
// count.
type progress struct {
	directWrites int // writes run without confirmation so far (see directKey)
	// viewed are the remembered and new messages the model saw (see
	// inView); nil when no model was asked.
	viewed [2][]store.Message
	// confirmed are the calls a confirmation ran in this turn: a task
	// that goes on after them counts them.
	confirmed confirmedCalls
	// finishes are the execution records being finished while the turn
	// goes on (see awaitFinishes).
	finishes finishes
}

// finishes are the waits for execution records' finishes under way. A
// mode's calls may run in parallel, hence the lock.
type finishes struct {
	mu    sync.Mutex
	waits []func()
}

func (f *finishes) add(wait func()) {
	f.mu.Lock()
	f.waits = append(f.waits, wait)
	f.mu.Unlock()
}

// awaitFinishes waits for the records the turn's writes are finishing:
// before the commit, so that the commit is queued behind them and the
// reply goes out only once they are durable, and before the turn's
// context ends on any other way out.
func (s *state) awaitFinishes() {
	f := &s.finishes
	f.mu.Lock()
	waits := f.waits
	f.waits = nil
	f.mu.Unlock()
	for _, wait := range waits {
		wait()
	}
}

// outputs are what the turn commits: the reply, memory and the waiting
// action.
type outputs struct {
	out         chat.Outbound
	added       []store.Message // appended to memory at commit
	resetMemory bool            // forget everything, this turn included
	keepLast    bool            // newTopic: keep only the last user message
	putPending  *store.PendingAction
	dropPending bool
	// modelReply: the reply is (or stood in for) the model's own text,
	// which the receipts follow (see receipts.go).
	modelReply bool
	// superseded is the waiting action this message replaced (see
	// supersede.go).
	superseded *store.PendingAction
}

// HandleTurn runs one message through the pipeline. See chat.Handler.
func (e *Engine) HandleTurn(ctx context.Context, in chat.Inbound) (chat.Outbound, error) {
	return e.handleTurn(ctx, in, "")
}

// handleTurn is HandleTurn; resume, when set, is the id of a decided
// action whose turn this is (see resume). It is the engine's own: no
// channel's message can make a turn carry out an action.
func (e *Engine) handleTurn(ctx context.Context, in chat.Inbound, resume string) (chat.Outbound, error) {
	if in.Identity.TenantID == "" || in.Identity.UserID == "" || in.Chat == "" {
		return chat.Outbound{}, errors.New("turn: inbound message without tenant, user or chat")
	}
	s := e.newState(in)
	s.resume = resume
	s.route = classify(in, e.cfg.Commands)
	if resume != "" {
		s.route = route{kind: routeResume}
	}
	s.trace.Route = s.route.name()
	s.trace.step(StepRoute, "", s.start, e.cfg.Now(), "")

	if err := e.lock(ctx, s); err != nil {
		e.journalFailure(s, StepLock, err)
		return chat.Outbound{}, err
	}
	defer s.lease.Release()
	// From here on the caller going away does not stop the turn: a side
	// effect and its record must complete together.
	s.detached = context.WithoutCancel(ctx)
	ctx, cancel := context.WithTimeout(s.detached, e.cfg.TurnTimeout)
	defer cancel()
	defer s.awaitFinishes() // before cancel: the finishes run under ctx
	if err := e.checkCase(ctx, s); err != nil {
		e.cfg.Logger.Warn("message refused", "turn", s.id, "err", err)
		return chat.Outbound{}, err
	}

	if dup, err := e.dedupe(ctx, s); err != nil || dup {
		if err != nil {
			e.journalFailure(s, StepDedupe, err)
			return chat.Outbound{}, err
		}
		s.trace.Route, s.trace.Status = RouteDuplicate, StatusOK
		s.trace.Notes = append(s.trace.Notes, "redelivery of message "+s.in.MessageID+", answered by turn "+s.out.TurnID)
		e.writeJournal(ctx, s)
		return s.out, nil
	}
	if err := e.loadMemory(ctx, s); err != nil {
		e.journalFailure(s, StepLoadMemory, err)
		return chat.Outbound{}, err
	}
	e.bindCase(s)
	if err := e.loadInterrupted(ctx, s); err != nil {
		e.journalFailure(s, StepLoadInterrupted, err)
		return chat.Outbound{}, err
	}
	if e.expandButton(s) {
		e.run(ctx, s)
		e.noteSuperseded(s)
	}
	e.receipts(ctx, s)
	keepLongButtons(s)
	retireOffer(s)
	e.updateMemory(s)
	if err := e.commit(ctx, s); err != nil {
		e.journalFailure(s, StepCommit, err)
		return chat.Outbound{}, err
	}
	return s.out, nil
}

func (e *Engine) newState(in chat.Inbound) *state {
	now := e.cfg.Now()
	s := &state{arrival: arrival{in: in, key: in.Key(), id: e.cfg.NewID(), start: now, now: now, received: in.ReceivedAt}}
	s.in.Evidence, s.images = readAttachments(in.Evidence, e.cfg.Media)
	if s.received.IsZero() {
		s.received = now // before the lock wait: when the message reached the engine
	}
	s.tenant = e.cfg.Tenants[in.Identity.TenantID]
	if s.tenant.ID == "" {
		s.tenant.ID = in.Identity.TenantID
	}
	s.assistant = e.assistantFor(s.tenant)
	s.memory = e.memoryFor(s.assistant)
	s.lang = chat.Language(in.Identity.Language, s.tenant.Language)
	zone := in.Identity.Timezone
	if zone == "" {
		zone = s.tenant.Timezone
	}
	s.loc = e.location(zone)
	s.out.TurnID = s.id
	s.trace = Trace{TurnID: s.id, ConversationID: in.Chat, Tenant: in.Identity.TenantID, UserID: in.Identity.UserID, Channel: in.Channel, MessageID: in.MessageID, StartedAt: now, Evidence: s.in.Evidence,
		Steps: make([]StepTrace, 0, 12)} // a turn's steps, allocated once
	return s
}

// providerFor returns the provider deciding a turn of tenant t, as a
// per-turn view when it keeps per-turn state, and its strategy name.
func (e *Engine) providerFor(t Tenant) (llm.Provider, string) {
	p, name := e.cfg.Model, e.cfg.Strategy
	if alt, ok := e.cfg.Strategies[t.Strategy]; ok && t.Strategy != "" {
		p, name = alt, t.Strategy
	}
	if p == nil {
		return nil, name
	}
	if ts, ok := p.(llm.TurnScoped); ok {
		p = ts.ForTurn()
	}
	return p, name
}

func (e *Engine) location(name string) *time.Location {
	if v, ok := e.zones.Load(name); ok {
		return v.(*time.Location)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		loc = time.UTC
	}
	e.zones.Store(name, loc)
	return loc
}

// run is the part of the pipeline between memory and reply: deterministic
// routes first, the model only for what they leave.
func (e *Engine) run(ctx context.Context, s *state) {
	s.cat = e.catalogFor(s.in.Identity, s.tenant, s.lang)
	if e.finishInterrupted(ctx, s) {
		return
	}
	if e.runResume(ctx, s) {
		return
	}
	if e.runCaseClosed(s) {
		return
	}
	if _, ok := e.modeOf(s.assistant).(MessageTaker); ok && s.route.kind != routeCommand && s.route.kind != routeCall && s.route.kind != routeEmpty {
		if strings.TrimSpace(s.route.input) == "" && len(s.in.Evidence) == 0 {
			e.replyText(s, say(s.lang, txtEmpty), nil)
			return
		}
		e.runMode(ctx, s)
		return
	}
	if e.resolvePending(ctx, s) {
		return
	}
	if e.runChoice(ctx, s) {
		return
	}
	if e.runCommand(ctx, s) {
		return
	}
	if e.runDirectCall(ctx, s) {
		return
	}
	if e.runCardRoute(ctx, s) {
		return
	}
	if s.route.kind == routeEmpty {
		s.route.kind = routeText
		e.replyText(s, say(s.lang, txtEmpty), nil)
		return
	}
	e.runMode(ctx, s)
}

// runMode hands the turn to the assistant's mode, once there is a model
// to ask.
func (e *Engine) runMode(ctx context.Context, s *state) {
	e.recordUserInput(s)
	s.model, s.strategy = e.providerFor(s.tenant)
	if s.model == nil {
		s.trace.Route = RouteNoModel
		e.replyText(s, e.noModelText(s.lang), nil)
		return
	}
	s.trace.Route = RouteModel
	e.modeOf(s.assistant).Run(ctx, &Turn{e: e, s: s})
}
