package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/arbiterhq/arbiter/channel/httpapi"
	"github.com/arbiterhq/arbiter/channel/webchat"
	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/store/sqlitestore"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn"
)

// Kinds are the constructors Build may use, each under the kind name a
// configuration gives: store.kind, journal.kind, models[].kind, the keys
// of tools and channels, assistants' modes. Builtin returns the ones of this module; a
// program adds its own (or those of arbiter's integration modules) to the
// maps before Build. A configuration that names a kind the tables lack is
// refused by Check with the line of the name.
type Kinds struct {
	States   map[string]StateKind
	Journals map[string]JournalKind
	Models   map[string]ModelKind
	Tools    map[string]ToolKind
	// ToolNames are the names of the tools each tool kind offers, for
	// Check (see ToolNamesKind); a kind without one is checked at Build.
	ToolNames map[string]ToolNamesKind
	Channels  map[string]ChannelKind
	// Modes are the assistant modes (assistants.*.mode); Builtin gives
	// turn/mode/builtin's. DefaultMode is the mode of an assistant that
	// names none (turn.Config.DefaultMode).
	Modes       turn.Modes
	DefaultMode turn.ModeName
	// ModeSettings read an assistant's settings for its mode, into the
	// mode's own type (turn.Assistant.Settings): a mode the program
	// registers from its settings section (assistants.<name>.settings);
	// the built-in modes from their fields of the assistant's section,
	// with no settings section. A mode without one takes none.
	ModeSettings map[turn.ModeName]ModeSettingsKind
	// Observers see every finished turn (metrics, traces); each runs
	// whatever the configuration says, including nothing.
	Observers []ObserverKind
}

// StateKind opens the conversation state and its locker (store.kind).
type StateKind func(ctx context.Context, env *Env) (store.State, store.Locker, error)

// JournalKind opens the journal (journal.kind).
type JournalKind func(ctx context.Context, env *Env) (store.Journal, error)

// ModelKind is a model kind of a provider package: its defaults and how
// to make a provider of a configured model.
type ModelKind struct {
	Preset llm.Preset
	// Prices are list prices of the models the kind usually serves.
	Prices llm.Prices
	New    func(m Model) (llm.Provider, error)
}

// Model is one configured model with its preset applied: what a provider
// constructor needs.
type Model struct {
	// Name is the provider label (journal, blocking group).
	Name, BaseURL, APIKey, Model string
	Output                       llm.OutputMode
	Protocol                     llm.Protocol
	// Timeout bounds a call that is not streamed; Stream bounds a
	// streamed one; NoStream says the endpoint cannot stream.
	Timeout  time.Duration
	Stream   llm.StreamLimits
	NoStream bool
	// Images says the model accepts images (config Model.Images, else
	// the preset's).
	Images bool
	// HTTPClient is nil for the provider's own, or the recording or
	// replaying client.
	HTTPClient *http.Client
	AuthHeader string
	Headers    map[string]string
}

// ToolKind builds the tools of one section of tools.
type ToolKind func(ctx context.Context, env *Env, section Section) (ToolSet, error)

// ToolSet is what a tool kind contributes.
type ToolSet struct {
	Tools   []tool.Tool
	Context []tool.ContextSource // live facts before every model call
	// LinkRoutes answer a question about a card with its link, read
	// without a model (the task boards' "what is this task").
	LinkRoutes []turn.LinkRoute
	// LinkHosts are the hosts the tools' replies link to with parameters
	// (an event's link with its id in the query); replies may keep those.
	LinkHosts []string
	// Commands are the slash commands the kind's tools answer without a
	// model (the task board's "/tasks"), with their lines in /help; the
	// configuration's commands may replace them. Reads are read-only
	// endpoints of the HTTP API over the kind's data (GET /v1/board), and
	// Pages the web app's views of them, each with its navigation entry.
	// None of them exists when the kind is not configured.
	Commands map[string]turn.Command
	Reads    []httpapi.Read
	Pages    []webchat.Page
}

// ChannelKind builds one section of channels, on the engine (env.Engine).
type ChannelKind func(ctx context.Context, env *Env, section Section) (Channel, error)

// Channel is what a channel kind contributes: HTTP routes on the server's
// listener and, when it has one, a loop that runs until its context ends.
type Channel struct {
	Routes map[string]http.Handler // ServeMux patterns
	Run    func(ctx context.Context) error
}

// ModeSettingsKind reads an assistant's settings as its mode takes them
// (turn.Assistant.Settings): called for every assistant of its mode, it
// decodes the settings section (ModeSection.Decode, which names the line
// of a field the type lacks; nothing when there is none), or reads the
// assistant's own fields, as the built-in modes do.
type ModeSettingsKind func(s ModeSection) (any, error)

// ModeSection is what a mode's settings are read from: the assistant's
// settings section (Node nil when it has none), the rest of the
// assistant's section, and the folder of the file (for the paths in it).
type ModeSection struct {
	Section
	Assistant config.Assistant
	Dir       string
}

// ObserverKind sets up an observer of finished turns.
type ObserverKind func(ctx context.Context, env *Env) (Observer, error)

// Observer sees every finished turn; Routes are served (e.g. /metrics).
type Observer struct {
	Observe func(t *turn.Trace)
	Routes  map[string]http.Handler
}

// Section is one section of tools or channels: its kind name and, for a
// kind the config package does not describe, its YAML to decode.
type Section struct {
	Kind string
	// Node is the section's YAML for a kind of config.Tools.Extra or
	// config.Channels.Extra; nil for the kinds config describes (read
	// them from env.Config) and for a Config built in code.
	Node *yaml.Node
}

// Decode decodes the section into v, refusing fields v lacks; an error
// names the line where the section starts (for a section of a file).
func (s Section) Decode(v any) error {
	if s.Node == nil {
		return nil
	}
	raw, err := yaml.Marshal(s.Node)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		where := s.Kind
		if s.Node.Line > 0 {
			where = fmt.Sprintf("line %d: %s", s.Node.Line, s.Kind)
		}
		return fmt.Errorf("%s: %s", where, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	return nil
}

// SectionOf makes, in Go, the section of a tool or channel kind that the
// config package does not describe — what a configuration file would hold
// under tools.<kind> or channels.<kind> — for a Config built in code:
//
//	cfg.Tools.Extra = map[string]yaml.Node{}
//	cfg.Tools.Extra["shout"], err = server.SectionOf(shoutSettings{Volume: 3})
//
// v is the kind's settings (a struct with yaml tags, or a map) and must
// encode as a mapping; the kind reads it back with Section.Decode, the
// same as a file's.
func SectionOf(v any) (yaml.Node, error) {
	var n yaml.Node
	if err := n.Encode(v); err != nil {
		return yaml.Node{}, fmt.Errorf("section of %T: %w", v, err)
	}
	if n.Kind != yaml.MappingNode {
		return yaml.Node{}, fmt.Errorf("section of %T: a section is a mapping of settings, not a %s", v, nodeKind(n.Kind))
	}
	return n, nil
}

func nodeKind(k yaml.Kind) string {
	switch k {
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "single value"
	}
	return "document"
}

// Env is what kind constructors are given. It is filled as Build goes:
// Engine and Keys are set before channels are built.
type Env struct {
	Config *config.Config
	// Listen and PublicURL are the configuration's, defaults applied.
	Listen, PublicURL string
	Getenv            func(string) string
	Now               func() time.Time // nil: time.Now
	NewID             func() string    // nil: random ids
	Logger            *slog.Logger
	// SQLite is the embedded file: the state (kind sqlite), the tables of
	// embedded tools, and the default journal.
	SQLite *sqlitestore.Store
	// State is the opened state backend, for channels with a durable inbox.
	State  store.State
	Engine *turn.Engine
	Keys   []httpapi.Key

	closers      []func() error
	noStoreClaim bool // Options.NoStoreClaim
}

// OnClose registers f to run when the server closes, after what was
// registered later.
func (e *Env) OnClose(f func() error) { e.closers = append(e.closers, f) }

func (e *Env) close() error {
	var errs []error
	for i := len(e.closers) - 1; i >= 0; i-- {
		errs = append(errs, e.closers[i]())
	}
	e.closers = nil
	return errors.Join(errs...)
}
