package llm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arbiterhq/arbiter/internal/wait"
)

// Defaults of ChainConfig.
const (
	DefaultRetryDelay = 2 * time.Second
	DefaultCoolDown   = 5 * time.Minute
)

// ChainEntry is one model of a chain.
type ChainEntry struct {
	Provider Provider
	// Group names the account the model belongs to: an error of the
	// account (auth, billing) blocks every entry of the group. Empty means
	// Provider.Name().
	Group string
}

// ChainConfig configures a Chain. Zero values are the documented defaults.
type ChainConfig struct {
	// Strategy names the chain ("balanced"); it is Name().
	Strategy string
	Entries  []ChainEntry
	// RetryDelay is the wait before the first model's one retry after a
	// transient error; default DefaultRetryDelay (2 s, as in the seed
	// system). A longer Retry-After from the provider wins.
	RetryDelay time.Duration
	// CoolDown is how long a blocked group stays blocked for every
	// conversation of this instance; default DefaultCoolDown. Negative
	// means blocks last only for the rest of the turn.
	CoolDown time.Duration
	// Breaker holds the blocked groups; chains of one instance share one
	// so a provider blocked by any strategy is skipped by all. Nil means a
	// breaker of the chain's own.
	Breaker *Breaker
	// Now and Sleep are injected by tests; defaults time.Now and a timer
	// that honours ctx.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

// Breaker remembers which provider groups are blocked and until when. The
// zero value is ready; safe for concurrent use.
type Breaker struct {
	mu      sync.Mutex
	blocked map[string]time.Time
}

// Blocked reports whether group is blocked at now, and until when.
func (b *Breaker) Blocked(group string, now time.Time) (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	until, ok := b.blocked[group]
	if !ok {
		return time.Time{}, false
	}
	if !now.Before(until) {
		delete(b.blocked, group) // cool-down over: try it again
		return time.Time{}, false
	}
	return until, true
}

// Block blocks group until the given time (extending, never shortening, a
// block already in place).
func (b *Breaker) Block(group string, until time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.blocked == nil {
		b.blocked = map[string]time.Time{}
	}
	if cur, ok := b.blocked[group]; !ok || until.After(cur) {
		b.blocked[group] = until
	}
}

// Chain is the retry and fallback policy over several providers, and is
// itself a Provider. Providers never retry; the chain does:
//
//   - the first model gets one retry, after RetryDelay (or a longer
//     Retry-After), and only on transient errors and rate limits — never
//     when the wait would pass the request's deadline;
//   - auth and billing errors, which are the account's and the same for
//     every request, are never retried and block the model's whole group
//     for the rest of the turn and for CoolDown across turns (a circuit
//     breaker shared by all conversations);
//   - a bad request is this request's own (its content, or a local check
//     that refused it before it was sent): it is not retried and blocks
//     nothing, so one conversation never blocks a provider for the others;
//     the next model is asked, and the attempt's note says so;
//   - content-policy refusals and malformed answers are not retried and
//     block nothing: the next model is asked;
//   - the models are tried in order until one answers;
//   - a streamed request (Request.OnText set) is neither retried nor handed
//     to the next model once a piece of its answer has reached OnText: the
//     error is returned; a model that cannot stream (see Streamer) is
//     called without OnText, which then gets the answer's whole text.
//
// Every attempt, including skipped blocked models, is reported in
// Response.Attempts or, on failure, in the *Error's Attempts. Safe for
// concurrent use.
type Chain struct {
	cfg ChainConfig
}

var _ Provider = (*Chain)(nil)

// NewChain validates cfg and returns a Chain.
func NewChain(cfg ChainConfig) (*Chain, error) {
	if len(cfg.Entries) == 0 {
		return nil, errors.New("llm: a chain needs at least one model")
	}
	for i := range cfg.Entries {
		if cfg.Entries[i].Provider == nil {
			return nil, fmt.Errorf("llm: chain entry %d has no provider", i)
		}
		if cfg.Entries[i].Group == "" {
			cfg.Entries[i].Group = cfg.Entries[i].Provider.Name()
		}
	}
	if cfg.RetryDelay <= 0 {
		cfg.RetryDelay = DefaultRetryDelay
	}
	if cfg.CoolDown == 0 {
		cfg.CoolDown = DefaultCoolDown
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = wait.Sleep
	}
	if cfg.Breaker == nil {
		cfg.Breaker = &Breaker{}
	}
	return &Chain{cfg: cfg}, nil
}

// Name returns the strategy name.
func (c *Chain) Name() string { return c.cfg.Strategy }

// Model returns the first model's name.
func (c *Chain) Model() string { return c.cfg.Entries[0].Provider.Model() }

// Protocol is ProtocolTools when every model of the chain decides by
// native tool calling, else ProtocolJSON: whichever model answers, the
// prompt fits it.
func (c *Chain) Protocol() Protocol {
	for _, e := range c.cfg.Entries {
		if ProtocolOf(e.Provider) != ProtocolTools {
			return ProtocolJSON
		}
	}
	return ProtocolTools
}

// Protocol is the chain's (see Chain.Protocol).
func (t *ChainTurn) Protocol() Protocol { return t.chain.Protocol() }

// Entries returns the chain's models in order.
func (c *Chain) Entries() []ChainEntry { return c.cfg.Entries }

// Complete runs the policy for one request. See Chain.
func (c *Chain) Complete(ctx context.Context, req Request) (Response, error) {
	return c.ForTurn().Complete(ctx, req)
}

// ForTurn returns a view of the chain for one turn: groups blocked during
// the turn stay blocked for its later requests even when CoolDown is
// negative, and Stick/Advance steer a repair request to the model that
// answered. The view is not safe for concurrent use; the chain's breaker
// behind it is shared.
func (c *Chain) ForTurn() Provider {
	return &ChainTurn{chain: c, last: -1} // blocked is made by the first block
}

// TurnScoped is implemented by providers that keep per-turn state; the
// engine calls ForTurn once per turn and uses the result for that turn.
type TurnScoped interface {
	ForTurn() Provider
}

// Sticky is implemented by turn views of a chain. Stick makes the next
// request start at the model that answered last (a repair goes to the same
// model first); Advance makes it start after that model instead and
// reports whether one is left.
type Sticky interface {
	Stick()
	Advance() bool
}

// ChainTurn is a Chain seen from one turn. See Chain.ForTurn.
type ChainTurn struct {
	chain   *Chain
	blocked map[string]bool
	last    int // index of the entry that answered last, -1 if none
	start   int // index the next request starts at
}

var (
	_ Provider = (*ChainTurn)(nil)
	_ Sticky   = (*ChainTurn)(nil)
)

// Name returns the strategy name.
func (t *ChainTurn) Name() string { return t.chain.Name() }

// Model returns the first model's name.
func (t *ChainTurn) Model() string { return t.chain.Model() }

// Stick makes the next request start at the model that answered last.
func (t *ChainTurn) Stick() {
	if t.last >= 0 {
		t.start = t.last
	}
}

// Advance makes the next request start after the model that answered
// last, and reports whether any model is left.
func (t *ChainTurn) Advance() bool {
	if t.last < 0 {
		return false
	}
	t.start = t.last + 1
	return t.start < len(t.chain.cfg.Entries)
}

// Complete runs the chain's policy from the current start model. A
// streamed request (req.OnText set) is retried or handed to the next model
// only while nothing of the answer has reached OnText: once a piece has,
// the failure is returned as it is, since the reader has already seen part
// of an answer that a second model would write differently.
func (t *ChainTurn) Complete(ctx context.Context, req Request) (Response, error) {
	c := t.chain
	var delivered atomic.Bool
	if onText := req.OnText; onText != nil {
		req.OnText = func(text string) {
			if text != "" {
				delivered.Store(true)
				onText(text)
			}
		}
	}
	var attempts []Attempt
	var lastErr error
	first := true
	for i := t.start; i < len(c.cfg.Entries); i++ {
		e := c.cfg.Entries[i]
		kind := AttemptFallback
		if first {
			kind = AttemptFirst
		}
		if until, ok := t.isBlocked(e.Group); ok {
			attempts = append(attempts, Attempt{
				Provider: e.Provider.Name(), Model: e.Provider.Model(), Kind: AttemptSkipped, Started: c.cfg.Now(),
				Err: &Error{Kind: ErrUnavailableKind, Provider: e.Provider.Name(), Model: e.Provider.Model(), Message: blockedMessage(e.Group, until)},
			})
			continue
		}
		first = false
		resp, stop, err := t.callEntry(ctx, i, kind, req, &attempts, &delivered)
		if err == nil {
			return resp, nil
		}
		lastErr = err
		if stop {
			return Response{}, t.fail(err, attempts)
		}
	}
	t.start = 0
	if lastErr == nil {
		lastErr = &Error{Kind: ErrUnavailableKind, Provider: c.Name(), Message: "every model of the chain is blocked"}
	}
	return Response{}, t.fail(lastErr, attempts)
}

// callEntry calls entry i under the policy: once, and for the start model
// once more after a transient error or a rate limit, unless the wait would
// pass the deadline or part of a streamed answer was already delivered.
// Every attempt is appended to attempts; the error is the last one's, and
// stop says the chain must end with it (canceled, or part of the answer
// delivered) rather than ask the next model.
func (t *ChainTurn) callEntry(ctx context.Context, i int, kind string, req Request, attempts *[]Attempt, delivered *atomic.Bool) (resp Response, stop bool, err error) {
	c := t.chain
	e := c.cfg.Entries[i]
	for try := 0; ; try++ {
		var a Attempt
		resp, a, err = t.call(ctx, e, req, kind)
		*attempts = append(*attempts, a)
		last := &(*attempts)[len(*attempts)-1]
		if err == nil {
			t.last, t.start = i, 0
			resp.Attempts = *attempts
			return resp, false, nil
		}
		k := KindOf(err)
		switch {
		case k == ErrCanceled:
			return Response{}, true, err
		case blocks(k):
			t.block(e.Group, last)
		case k == ErrBadRequest:
			last.Note = badRequestNote(err)
		}
		if delivered.Load() {
			last.Note = joinNote(last.Note, "no retry or fallback: part of the answer already reached the reader")
			return Response{}, true, err
		}
		if try > 0 || i != t.start || (k != ErrTransient && k != ErrRateLimited) {
			return Response{}, false, err
		}
		wait := c.cfg.RetryDelay
		var le *Error
		if errors.As(err, &le) && le.RetryAfter > wait {
			wait = le.RetryAfter
		}
		// The deadline is the context's, on the real clock.
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= wait {
			last.Note = fmt.Sprintf("no retry: waiting %s would pass the deadline", wait)
			return Response{}, false, err
		}
		if serr := c.cfg.Sleep(ctx, wait); serr != nil {
			return Response{}, true, serr
		}
		kind = AttemptRetry
	}
}

// joinNote adds b to an attempt's note a.
func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// ErrUnavailableKind marks a model that was not called because its
// provider is blocked.
const ErrUnavailableKind ErrorKind = "blocked"

// blocks reports whether an error of kind k is the account's (the key,
// the bill) rather than one request's, so that it blocks the provider.
func blocks(k ErrorKind) bool {
	return k == ErrAuth || k == ErrBilling
}

// badRequestNote says what the chain did about a bad request: nothing
// beyond this request. One with no HTTP status was refused before it was
// sent.
func badRequestNote(err error) string {
	var le *Error
	if errors.As(err, &le) && le.Status == 0 {
		return "refused before sending (a local check): this request alone, the provider stays open"
	}
	return "bad request: this request alone, the provider stays open"
}

func blockedMessage(group string, until time.Time) string {
	if until.IsZero() {
		return "provider " + group + " is blocked for the rest of this turn"
	}
	return "provider " + group + " is blocked until " + until.UTC().Format(time.RFC3339)
}

func (t *ChainTurn) call(ctx context.Context, e ChainEntry, req Request, kind string) (Response, Attempt, error) {
	c := t.chain
	start := c.cfg.Now()
	// A provider that cannot stream answers in one piece, which OnText
	// then receives whole.
	onText := req.OnText
	if onText != nil && !Streams(e.Provider) {
		req.OnText = nil
	}
	resp, err := e.Provider.Complete(ctx, req)
	if err == nil && onText != nil && req.OnText == nil {
		onText(resp.Text)
	}
	a := Attempt{Provider: e.Provider.Name(), Model: e.Provider.Model(), Kind: kind, Duration: c.cfg.Now().Sub(start), Started: start, Err: err}
	if err == nil {
		if resp.Provider == "" {
			resp.Provider = e.Provider.Name()
		}
		if resp.Model == "" {
			resp.Model = e.Provider.Model()
		}
		a.Provider, a.Model, a.Usage = resp.Provider, resp.Model, resp.Usage
	}
	return resp, a, err
}

func (t *ChainTurn) isBlocked(group string) (time.Time, bool) {
	if t.blocked[group] {
		return time.Time{}, true
	}
	return t.chain.cfg.Breaker.Blocked(group, t.chain.cfg.Now())
}

func (t *ChainTurn) block(group string, a *Attempt) {
	if t.blocked == nil {
		t.blocked = map[string]bool{}
	}
	t.blocked[group] = true
	c := t.chain
	if c.cfg.CoolDown < 0 {
		a.Note = "blocked provider " + group + " for the rest of the turn"
		return
	}
	c.cfg.Breaker.Block(group, c.cfg.Now().Add(c.cfg.CoolDown))
	a.Note = "blocked provider " + group + " for " + c.cfg.CoolDown.String()
}

func (t *ChainTurn) fail(err error, attempts []Attempt) error {
	var le *Error
	if errors.As(err, &le) {
		out := *le
		out.Attempts = attempts
		return &out
	}
	return &Error{Kind: KindOf(err), Provider: t.chain.Name(), Message: err.Error(), Err: err, Attempts: attempts}
}
