// Package turntest builds engines for tests and plays txtar transcripts.
//
// New wires a turn.Config to what a test wants around an engine: an
// embedded SQLite store in the test's temporary directory (closed when the
// test ends), a scripted model (llm/llmtest), and, when asked, a fake
// clock the engine and the store share, so that a lock's or an approval's
// time can pass in an instant. The test states only what it is about —
// tools, assistants, tenants, limits — and keeps the rest of turn.Config
// for itself: any field it sets is left as it set it. Decide and Say
// write the scripted model's decisions in the engine's JSON protocol.
//
// Transcripts runs every *.txtar of a directory through a
// player and holds what it writes to the archive's "want" section, byte
// for byte; Script reads a script's lines verb by verb and Args their
// key=value pairs, for the players of turn's goldens and the examples.
package turntest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/store/sqlitestore"
	"github.com/arbiterhq/arbiter/store/storetest"
	"github.com/arbiterhq/arbiter/turn"
	"github.com/arbiterhq/arbiter/turn/mode/builtin"
)

// Start is where a clock from NewClock starts: a Monday morning, the same
// in every run, so transcripts that show times do not change.
var Start = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// NewClock returns a fake clock reading Start until it is moved.
func NewClock() *storetest.Clock { return storetest.NewClock(Start) }

// TB is what the kit asks of a test; *testing.T and *testing.B are one.
type TB interface {
	Helper()
	Fatal(args ...any)
	TempDir() string
	Cleanup(func())
}

// Engine is an engine under test with what it was built on.
type Engine struct {
	*turn.Engine
	T     TB
	Store *sqlitestore.Store
	// Model is the scripted model the engine calls, unless WithModel gave
	// it another (then Model is still made, and unused).
	Model *llmtest.Scripted
	// Clock is the fake clock of the engine and its store; nil for the
	// real one.
	Clock *storetest.Clock
}

// Option changes how New builds.
type Option func(*build)

type build struct {
	clock    *storetest.Clock
	store    *sqlitestore.Store
	model    llm.Provider
	setModel bool
}

// WithClock puts the engine and its store on clock c.
func WithClock(c *storetest.Clock) Option { return func(b *build) { b.clock = c } }

// WithStore builds on st, an open store, instead of a fresh one: a second
// engine over the same conversations and journal.
func WithStore(st *sqlitestore.Store) Option { return func(b *build) { b.store = st } }

// WithModel gives the engine model instead of the scripted one; nil
// builds an engine with no model at all.
func WithModel(model llm.Provider) Option {
	return func(b *build) { b.model, b.setModel = model, true }
}

// New builds the engine of cfg, failing the test if turn.New refuses it.
func New(t TB, cfg turn.Config, opts ...Option) *Engine {
	t.Helper()
	e, err := Build(t, cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// Build is New that hands back turn.New's error, for tests of
// configurations the engine must refuse.
func Build(t TB, cfg turn.Config, opts ...Option) (*Engine, error) {
	t.Helper()
	var b build
	for _, o := range opts {
		o(&b)
	}
	e := &Engine{T: t, Model: llmtest.NewScripted(), Clock: b.clock, Store: b.store}
	var now func() time.Time
	if b.clock != nil {
		now = b.clock.Now
	}
	if e.Store == nil {
		e.Store = OpenStore(t, now)
	}
	if cfg.State == nil {
		cfg.State = e.Store
	}
	if cfg.Locker == nil {
		cfg.Locker = e.Store
	}
	if cfg.Journal == nil {
		cfg.Journal = e.Store
	}
	switch {
	case b.setModel:
		cfg.Model = b.model
	case cfg.Model == nil:
		cfg.Model = e.Model
	}
	if cfg.Modes == nil {
		cfg.Modes = builtin.Modes()
	}
	if cfg.DefaultMode == "" && cfg.Modes[builtin.DefaultMode] != nil {
		cfg.DefaultMode = builtin.DefaultMode
	}
	if cfg.Now == nil && now != nil {
		cfg.Now = now
	}
	eng, err := turn.New(cfg)
	e.Engine = eng
	return e, err
}

// OpenStore opens an embedded store in the test's temporary directory on
// clock now (nil: the real one) and closes it when the test ends.
func OpenStore(t TB, now func() time.Time) *sqlitestore.Store {
	t.Helper()
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "turn.db"), sqlitestore.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Send runs one turn, failing the test if the engine returns an error.
func (e *Engine) Send(in chat.Inbound) chat.Outbound {
	e.T.Helper()
	out, err := e.HandleTurn(context.Background(), in)
	if err != nil {
		e.T.Fatal(err)
	}
	return out
}

// Turn reads turn id of tenant from the engine's journal and decodes its
// trace into trace (nil: not decoded).
func (e *Engine) Turn(tenant, id string, trace any) store.TurnRecord {
	e.T.Helper()
	return ReadTurn(e.T, e.Store, tenant, id, trace)
}

// ReadTurn reads turn id of tenant from j and decodes its trace into trace
// (nil: not decoded), failing the test if either fails.
func ReadTurn(t TB, j store.Journal, tenant, id string, trace any) store.TurnRecord {
	t.Helper()
	rec, err := j.GetTurn(context.Background(), tenant, id)
	if err != nil {
		t.Fatal(err)
	}
	if trace != nil {
		if err := json.Unmarshal(rec.Trace, trace); err != nil {
			t.Fatal(err)
		}
	}
	return rec
}

// Decision is the text of a decision in the JSON protocol to call tool
// with args (JSON) and say nothing.
func Decision(tool, args string) string {
	return `{"say":"","tool":"` + tool + `","args":` + args + `,"done":false,"newTopic":false,"buttons":[]}`
}

// Decide is a scripted model's reply: Decision(tool, args).
func Decide(tool, args string) llmtest.Reply { return llmtest.Text(Decision(tool, args)) }

// Say is a scripted model's reply in the JSON protocol: say text, call
// nothing.
func Say(text string) llmtest.Reply {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(text)
	return llmtest.Text(`{"say":` + strings.TrimSuffix(b.String(), "\n") + `,"tool":null,"args":null,"done":false,"newTopic":false,"buttons":[]}`)
}
