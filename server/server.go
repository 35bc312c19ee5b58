// Package server builds a running arbiter from a configuration and kind
// tables: the stores, the tools, the model chains, the turn engine, the
// HTTP API with the web chat, and the channels. It is what `arbiter serve`
// runs, and what a program of its own runs to embed arbiter with tools,
// channels, providers or stores of its own (see examples/embed):
//
//	kinds := server.Builtin()
//	kinds.Tools["shout"] = shoutKind
//	srv, err := server.Build(cfg, kinds, server.Options{})
//	...
//	err = srv.ListenAndServe(ctx)
//
// Where to add things: a tool kind in Kinds.Tools (a tool.Tool, or
// tool.Func for a Go function), a channel in Kinds.Channels (it calls
// Env.Engine, a chat.Handler), a model kind in Kinds.Models (an
// llm.Provider), a store in Kinds.States / Kinds.Journals (passing
// store/storetest). Builtin holds the kinds of this module; the heavier
// integrations (Redis, PostgreSQL, Anthropic, MCP, OpenTelemetry, Google
// Calendar) come from their own modules, added by cmd/arbiter.
//
// Build never changes the configuration it is given.
package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/arbiterhq/arbiter/channel/httpapi"
	"github.com/arbiterhq/arbiter/channel/webchat"
	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/media"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/taskboard"
	"github.com/arbiterhq/arbiter/turn"
)

// Server is a built arbiter: the engine, its HTTP handler and channels,
// and the backends they share.
type Server struct {
	Config *config.Config
	Engine *turn.Engine
	// HTTP serves the API, the web chat, the channels' and observers'
	// routes.
	HTTP http.Handler
	// State, Locker and Journal are the opened backends.
	State   store.State
	Locker  store.Locker
	Journal store.Journal
	Keys    []httpapi.Key
	// LocalKey is set for the local setup (LocalConfig).
	LocalKey string
	// HasModel is false when no model provider is configured; ModelSetup
	// says how one is.
	HasModel   bool
	ModelSetup turn.ModelSetup
	// Listen and PublicURL are the configuration's, defaults applied.
	Listen, PublicURL string
	Logger            *slog.Logger

	// board is the embedded task board, nil when it is off; like the
	// embedded file (env.SQLite) it stays off the public surface: callers
	// reach the stores through State and Journal.
	board *taskboard.Board

	env  *Env
	runs []func(ctx context.Context) error
}

// Options are what a program may set besides the configuration.
type Options struct {
	Getenv func(string) string // default os.Getenv
	LogOut io.Writer           // logs and notices; default io.Discard
	// Model replaces the configured providers (tests use a scripted one).
	Model llm.Provider
	// Record writes every provider exchange as cassettes into this
	// directory; Replay answers provider calls from the cassettes in this
	// directory, with no network.
	Record, Replay string
	// Transport carries the providers' requests instead of the network
	// (recorded when Record is set): a program that answers for the
	// models, such as a scripted fake recording a suite's recordings.
	Transport http.RoundTripper
	Now       func() time.Time
	NewID     func() string
	// Sleep replaces the provider chain's retry wait (tests use a fake
	// clock).
	Sleep func(ctx context.Context, d time.Duration) error
	// NoPages says this process serves no web pages (arbiter chat, arbiter
	// mcp): links the tools print name public_url when it is configured
	// (another process serves them) and are left out otherwise.
	NoPages bool
	// NoStoreClaim opens the embedded file without claiming it for this
	// process (see ErrStoreInUse): for a test whose second server stands
	// for another process started after the first one died. A program
	// never sets it; configure store.reader for a process that only reads.
	NoStoreClaim bool
}

// Load reads a configuration file and checks it against kinds (see Check),
// reporting every mistake of both in one error (config.Errors, in the
// order of their lines).
func Load(path string, kinds Kinds) (*config.Config, error) {
	cfg, problems, err := config.Read(path, os.Getenv)
	if err != nil {
		return nil, err
	}
	var more config.Errors
	if err := Check(cfg, kinds); err != nil {
		more = err.(config.Errors)
	}
	if all := config.Merge(problems, more); len(all) > 0 {
		return nil, all
	}
	return cfg, nil
}

// Check reports, with their lines, the kinds cfg names that kinds lack
// (assistants' modes among them) and the references to tools that no
// configured kind offers (a command, a role's or an assistant's tools, a
// preflight read, a router's tools, a board's confirm policies). Its error
// is a config.Errors.
func Check(cfg *config.Config, kinds Kinds) error {
	var errs config.Errors
	unknown := func(path, what, kind string, known []string) {
		errs = append(errs, cfg.Problem(path, "unknown %s %q (one of: %s)%s", what, kind, joinSorted(known), config.DidYouMean(kind, known)))
	}
	if k := orDefault(cfg.Store.Kind, "sqlite"); kinds.States[k] == nil {
		unknown("store.kind", "store kind", k, slices.Collect(maps.Keys(kinds.States)))
	}
	if k := orDefault(cfg.Journal.Kind, "sqlite"); kinds.Journals[k] == nil {
		unknown("journal.kind", "journal kind", k, slices.Collect(maps.Keys(kinds.Journals)))
	}
	for i, m := range cfg.Models {
		if _, ok := kinds.Models[m.Kind]; !ok && m.Kind != "" {
			unknown(fmt.Sprintf("models[%d].kind", i), "model kind", m.Kind, slices.Collect(maps.Keys(kinds.Models)))
		}
	}
	for _, name := range toolSections(cfg) {
		if kinds.Tools[name] == nil {
			unknown("tools."+name, "tool kind", name, slices.Collect(maps.Keys(kinds.Tools)))
		}
	}
	for _, name := range channelSections(cfg) {
		if kinds.Channels[name] == nil {
			unknown("channels."+name, "channel kind", name, slices.Collect(maps.Keys(kinds.Channels)))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Assistants)) {
		if m := turn.ModeName(cfg.Assistants[name].Mode); m != "" && kinds.Modes[m] == nil {
			unknown("assistants."+name+".mode", "mode", string(m), kinds.Modes.Names())
		} else if problem := checkSettingsSection(cfg, name, kinds); problem != "" {
			errs = append(errs, problem)
		}
	}
	errs = append(errs, checkToolRefs(cfg, kinds)...)
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// checkSettingsSection decodes assistant name's settings section, if it
// has one, and returns what is wrong with it: a mode that reads none, or
// what its kind refused.
func checkSettingsSection(cfg *config.Config, name string, kinds Kinds) string {
	a := cfg.Assistants[name]
	if a.Settings.Kind == 0 {
		return ""
	}
	mode := orDefault(a.Mode, string(kinds.DefaultMode))
	kind := kinds.ModeSettings[turn.ModeName(mode)]
	if kind == nil {
		return cfg.Problem("assistants."+name+".settings", "mode %s takes no settings section", mode)
	}
	if _, err := kind(ModeSection{Section: settingsSection(name, a), Assistant: a, Dir: cfg.Dir}); err != nil {
		return err.Error()
	}
	return ""
}

// Build opens the backends, builds the tools, models, engine and channels
// of cfg with kinds, and returns the server, ready to serve. Relative
// store paths are relative to the working directory. Close releases what
// it opened.
func Build(cfg *config.Config, kinds Kinds, opts Options) (*Server, error) {
	if err := Check(cfg, kinds); err != nil {
		return nil, err
	}
	env := newEnv(cfg, opts)
	s := &Server{Config: cfg, Logger: env.Logger, Listen: env.Listen, PublicURL: env.PublicURL, env: env}
	if err := s.build(kinds, opts); err != nil {
		env.close()
		return nil, err
	}
	return s, nil
}

func newEnv(cfg *config.Config, opts Options) *Env {
	env := &Env{Config: cfg, Getenv: opts.Getenv, Now: opts.Now, NewID: opts.NewID, noStoreClaim: opts.NoStoreClaim}
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	if opts.LogOut == nil {
		opts.LogOut = io.Discard
	}
	env.Logger = newLogger(cfg.Log, opts.LogOut)
	env.Listen = orDefault(cfg.Listen, "127.0.0.1:8080")
	env.PublicURL = orDefault(cfg.PublicURL, "http://"+env.Listen)
	if opts.NoPages && cfg.PublicURL == "" {
		env.PublicURL = ""
	}
	return env
}

func (s *Server) build(kinds Kinds, opts Options) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	env, cfg := s.env, s.Config
	if err := s.openStores(ctx, kinds); err != nil {
		return err
	}
	if err := s.buildKeys(); err != nil {
		return err
	}
	tools, err := buildTools(ctx, env, kinds)
	if err != nil {
		return err
	}
	registry, err := tool.NewRegistry(tools.Tools...)
	if err != nil {
		return err
	}
	if err := checkBuiltRefs(cfg, registry); err != nil {
		return err
	}
	for _, h := range cfg.Tools.HTTP {
		if len(h.Chip) > 0 {
			if err := registry.SetChip(h.Name, tool.Localized(h.Chip)); err != nil {
				return err
			}
		}
	}
	for _, c := range tools.Context {
		if b, ok := c.(*taskboard.Board); ok {
			s.board = b
		}
	}
	models, err := buildModels(cfg, kinds, env, opts)
	if err != nil {
		return err
	}
	if opts.Model != nil {
		models.model, models.strategies = opts.Model, nil
	}
	s.HasModel, s.ModelSetup = models.model != nil, models.setup
	observers, routes, err := buildObservers(ctx, env, kinds)
	if err != nil {
		return err
	}
	tc, err := engineConfig(cfg, env, registry, tools, models, kinds, observers)
	if err != nil {
		return err
	}
	tc.Locker, tc.Journal, tc.Modes, tc.DefaultMode = s.Locker, s.Journal, kinds.Modes, kinds.DefaultMode
	s.Engine, err = turn.New(tc)
	if err != nil {
		return err
	}
	env.Engine = s.Engine
	return s.serveHTTP(ctx, kinds, tools, routes)
}

// openStores opens the embedded file, then the configured state and
// journal (the file itself unless another kind is configured).
func (s *Server) openStores(ctx context.Context, kinds Kinds) error {
	env, cfg := s.env, s.Config
	path := cfg.Store.Path
	if orDefault(cfg.Store.Kind, "sqlite") != "sqlite" {
		// The state is elsewhere: the file keeps the embedded tools' tables
		// and the default journal.
		path = orDefault(cfg.Journal.Path, filepath.Join("data", "journal.db"))
	}
	st, err := openSQLite(orDefault(path, filepath.Join("data", "arbiter.db")), env)
	if err != nil {
		return err
	}
	env.SQLite = st
	env.OnClose(st.Close)
	s.State, s.Locker, err = kinds.States[orDefault(cfg.Store.Kind, "sqlite")](ctx, env)
	if err != nil {
		return fmt.Errorf("open %s store: %w", orDefault(cfg.Store.Kind, "sqlite"), err)
	}
	env.State = s.State
	s.Journal, err = kinds.Journals[orDefault(cfg.Journal.Kind, "sqlite")](ctx, env)
	if err != nil {
		return fmt.Errorf("open %s journal: %w", orDefault(cfg.Journal.Kind, "sqlite"), err)
	}
	return nil
}

// buildKeys turns the configured users' keys into API keys; the local
// setup gets one created on first start.
func (s *Server) buildKeys() error {
	env, cfg := s.env, s.Config
	for _, t := range cfg.Tenants {
		for _, u := range t.Users {
			for _, k := range u.Keys {
				env.Keys = append(env.Keys, httpapi.Key{Token: config.ResolveToken(k, env.Getenv), Identity: Identity(t, u, k.Scopes)})
			}
		}
	}
	if len(cfg.Tenants) == 1 && cfg.Tenants[0].ID == LocalTenant && len(env.Keys) == 0 && len(cfg.Tenants[0].Users) > 0 {
		dir := "data"
		if cfg.Store.Path != "" {
			dir = filepath.Dir(cfg.Store.Path)
		}
		key, err := localKey(dir)
		if err != nil {
			return err
		}
		s.LocalKey = key
		t := cfg.Tenants[0]
		env.Keys = append(env.Keys, httpapi.Key{Token: key, Identity: Identity(t, t.Users[0], []string{"read", "write:safe", "write:full"})})
	}
	s.Keys = env.Keys
	return nil
}

// buildTools runs the tool kind of every configured section, in the order
// toolSections gives.
func buildTools(ctx context.Context, env *Env, kinds Kinds) (ToolSet, error) {
	var all ToolSet
	for _, name := range toolSections(env.Config) {
		sec := Section{Kind: name}
		if n, ok := env.Config.Tools.Extra[name]; ok {
			sec.Node = &n
		}
		set, err := kinds.Tools[name](ctx, env, sec)
		if err != nil {
			return ToolSet{}, fmt.Errorf("tools.%s: %w", name, err)
		}
		all.Tools = append(all.Tools, set.Tools...)
		all.Context = append(all.Context, set.Context...)
		all.LinkRoutes = append(all.LinkRoutes, set.LinkRoutes...)
		all.LinkHosts = append(all.LinkHosts, set.LinkHosts...)
		all.Reads = append(all.Reads, set.Reads...)
		all.Pages = append(all.Pages, set.Pages...)
		for name, c := range set.Commands {
			if all.Commands == nil {
				all.Commands = map[string]turn.Command{}
			}
			all.Commands[name] = c
		}
	}
	return all, nil
}

func buildObservers(ctx context.Context, env *Env, kinds Kinds) (func(*turn.Trace), map[string]http.Handler, error) {
	var observe []func(*turn.Trace)
	routes := map[string]http.Handler{}
	for _, k := range kinds.Observers {
		o, err := k(ctx, env)
		if err != nil {
			return nil, nil, err
		}
		if o.Observe != nil {
			observe = append(observe, o.Observe)
		}
		maps.Copy(routes, o.Routes)
	}
	switch len(observe) {
	case 0:
		return nil, routes, nil
	case 1:
		return observe[0], routes, nil
	}
	return func(t *turn.Trace) {
		for _, o := range observe {
			o(t)
		}
	}, routes, nil
}

// modeSettings are assistant name's settings as its mode takes them
// (turn.Assistant.Settings), as the mode's kind in kinds.ModeSettings
// reads them; nil for a mode without one. The configuration's checks and
// Check have refused a mode's fields on another and a section no kind
// reads.
func modeSettings(name string, a config.Assistant, dir string, kinds Kinds) (any, error) {
	kind := kinds.ModeSettings[turn.ModeName(orDefault(a.Mode, string(kinds.DefaultMode)))]
	if kind == nil {
		return nil, nil
	}
	return kind(ModeSection{Section: settingsSection(name, a), Assistant: a, Dir: dir})
}

// settingsSection is assistant name's settings section (Node nil when it
// has none).
func settingsSection(name string, a config.Assistant) Section {
	s := Section{Kind: "assistants." + name + ".settings"}
	if a.Settings.Kind != 0 {
		s.Node = &a.Settings
	}
	return s
}

func engineConfig(cfg *config.Config, env *Env, registry *tool.Registry, tools ToolSet, m models, kinds Kinds, observe func(*turn.Trace)) (turn.Config, error) {
	assistants := map[string]turn.Assistant{}
	for name, a := range cfg.Assistants {
		prompt, err := a.LoadPrompt(cfg.Dir)
		if err != nil {
			return turn.Config{}, fmt.Errorf("assistant %s: %w", name, err)
		}
		settings, err := modeSettings(name, a, cfg.Dir, kinds)
		if err != nil {
			return turn.Config{}, fmt.Errorf("assistant %s: %w", name, err)
		}
		assistants[name] = turn.Assistant{Prompt: prompt, Tools: a.Tools, Mode: turn.ModeName(a.Mode), Settings: settings,
			LiveContext: turn.LiveContextPolicy(a.LiveContext), MaxTokens: a.MaxTokens, Receipts: a.Receipts,
			Memory:    turn.MemoryPolicy{Window: a.Memory.Window, TTL: time.Duration(a.Memory.TTL), Pause: time.Duration(a.Memory.Pause)},
			Lifetimes: lifetimes(a.Lifetimes)}
	}
	tenants := map[string]turn.Tenant{}
	for _, t := range cfg.Tenants {
		roles := map[string]turn.Role{}
		for name, r := range t.Roles {
			roles[name] = turn.Role{Tools: r.Tools}
		}
		tenants[t.ID] = turn.Tenant{ID: t.ID, Timezone: t.Timezone, Language: t.Language, AssistantName: t.AssistantName, Roles: roles, Strategy: t.Strategy, Assistant: t.Assistant}
	}
	commands := maps.Clone(tools.Commands)
	if commands == nil {
		commands = map[string]turn.Command{}
	}
	for name, c := range cfg.Commands {
		commands[name] = turn.Command{Tool: c.Tool, Args: c.Args}
	}
	return turn.Config{
		State: env.State,
		Tools: registry, Context: tools.Context, LinkRoutes: tools.LinkRoutes, LinkHosts: linkHosts(env.PublicURL, cfg.LinkHosts, tools.LinkHosts),
		Model: m.model, Strategy: m.strategy, Strategies: m.strategies,
		InvalidFallback: cfg.Retry.InvalidFallback,
		Prices:          m.prices, Unpriced: m.unpriced, Tenants: tenants, Assistants: assistants, UnconfirmableOutcomes: cfg.UnconfirmableOutcomes,
		Memory:       turn.MemoryPolicy{Window: cfg.Memory.Window, TTL: time.Duration(cfg.Memory.TTL), Pause: time.Duration(cfg.Memory.Pause)},
		Lifetimes:    lifetimes(cfg.Lifetimes),
		PendingTTL:   time.Duration(cfg.Confirmation.TTL),
		ApprovalTTL:  time.Duration(cfg.Confirmation.ApprovalTTL),
		ReadBack:     turn.ReadBackPolicy{Attempts: cfg.Confirmation.ReadBack.Attempts, Wait: time.Duration(cfg.Confirmation.ReadBack.Wait)},
		ModelTimeout: time.Duration(cfg.Limits.ModelTimeout),
		MaxTokens:    cfg.Limits.MaxTokens,
		TurnTimeout:  time.Duration(cfg.Limits.TurnTimeout),
		Media:        mediaLimits(cfg.Limits),
		Commands:     commands,
		ModelSetup:   m.setup,
		Now:          env.Now,
		NewID:        env.NewID,
		Logger:       env.Logger,
		Observe:      observe,
		RedactionKey: redactionKey(env, cfg),
	}, nil
}

// serveHTTP builds the API, the channels and the handler serving them.
func (s *Server) serveHTTP(ctx context.Context, kinds Kinds, tools ToolSet, routes map[string]http.Handler) error {
	env, cfg := s.env, s.Config
	var approvals chat.Approver
	if _, ok := env.State.(store.Actions); ok {
		approvals = s.Engine
		s.runs = append(s.runs, s.resumeActions)
	}
	if _, _, on := s.retention(); on && len(s.pruners()) > 0 {
		s.runs = append(s.runs, s.prune)
	}
	apiCfg := httpapi.Config{
		Handler:      s.Engine,
		Keys:         env.Keys,
		Turn:         httpapi.JournalTurn(s.Journal),
		Turns:        httpapi.JournalTurns(s.Journal),
		Approvals:    approvals,
		MaxBodyBytes: cfg.Limits.MaxBodyBytes,
		MaxFileBytes: cfg.Limits.MaxFileBytes,
		Reads:        tools.Reads,
		Logger:       env.Logger,
	}
	api, err := httpapi.New(apiCfg)
	if err != nil {
		return err
	}
	app, err := webchat.New(tools.Pages...)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	for _, name := range channelSections(cfg) {
		sec := Section{Kind: name}
		if n, ok := cfg.Channels.Extra[name]; ok {
			sec.Node = &n
		}
		ch, err := kinds.Channels[name](ctx, env, sec)
		if err != nil {
			return fmt.Errorf("channels.%s: %w", name, err)
		}
		for pattern, h := range ch.Routes {
			mux.Handle(pattern, h)
		}
		if ch.Run != nil {
			s.runs = append(s.runs, ch.Run)
		}
	}
	for pattern, h := range routes {
		mux.Handle(pattern, h)
	}
	mux.Handle("/v1/", api)
	mux.Handle("/healthz", api)
	mux.Handle("/", app)
	s.HTTP = mux
	return nil
}

// Close releases the stores, sessions and exporters, in reverse order of
// opening.
func (s *Server) Close() error { return s.env.close() }

// resumeInterval is how often approved actions a stopped process left are
// looked for.
const resumeInterval = 30 * time.Second

// resumeActions carries out, at start and then every resumeInterval,
// the approved actions whose process stopped before they finished.
func (s *Server) resumeActions(ctx context.Context) error {
	for {
		if n, err := s.Engine.ResumeActions(ctx); err != nil {
			s.env.Logger.Warn("resume approved actions", "resumed", n, "err", err)
		} else if n > 0 {
			s.env.Logger.Info("resumed approved actions", "resumed", n)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(resumeInterval):
		}
	}
}

// Run runs the channels' loops (Telegram polling or its inbox) until ctx
// ends; with none it just waits.
func (s *Server) Run(ctx context.Context) error {
	if len(s.runs) == 0 {
		<-ctx.Done()
		return nil
	}
	errc := make(chan error, len(s.runs))
	for _, run := range s.runs {
		go func() { errc <- run(ctx) }()
	}
	var errs []error
	for range s.runs {
		if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ListenAndServe serves HTTP on the configured address and runs the
// channels until ctx ends, then lets turns in flight finish (up to 30 s).
// ready, when set, is called with the address once listening.
func (s *Server) ListenAndServe(ctx context.Context, ready func(addr net.Addr)) error {
	ln, err := net.Listen("tcp", s.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.Listen, err)
	}
	srv := &http.Server{
		Handler:           s.HTTP,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	go func() {
		if err := s.Run(ctx); err != nil {
			errc <- fmt.Errorf("channels: %w", err)
		}
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Identity is the identity of user u of tenant t with scopes.
func Identity(t config.Tenant, u config.User, scopes []string) chat.Identity {
	id := chat.Identity{TenantID: t.ID, UserID: u.ID, Name: u.Name, Role: u.Role, Timezone: u.Timezone, Language: u.Language}
	if id.Timezone == "" {
		id.Timezone = t.Timezone // what the engine would use: clients can show the same
	}
	id.Language = chat.Language(id.Language, t.Language)
	for _, sc := range scopes {
		id.Scopes = append(id.Scopes, chat.Scope(sc))
	}
	if id.Name == "" {
		id.Name = u.ID
	}
	if u.Google != nil {
		id.Connected = append(id.Connected, "google")
	}
	if u.Trello != nil {
		id.Connected = append(id.Connected, "trello")
	}
	return id
}

// newLogger is the configured handler writing to out; with out io.Discard
// (no LogOut) it is slog's discarding handler, so that no line is
// formatted only to be thrown away: a program embedding the engine pays
// nothing for the log it did not ask for.
func newLogger(c config.Log, out io.Writer) *slog.Logger {
	if out == io.Discard {
		return slog.New(slog.DiscardHandler)
	}
	level := slog.LevelInfo
	switch c.Level {
	case "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(out, opts))
	}
	return slog.New(slog.NewTextHandler(out, opts))
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// linkHosts are the hosts replies may link to with parameters: the
// server's own (public_url), the configuration's link_hosts and the tools'.
func linkHosts(publicURL string, configured, tools []string) []string {
	var hosts []string
	if u, err := url.Parse(publicURL); err == nil && u.Hostname() != "" {
		hosts = append(hosts, u.Hostname())
	}
	return append(append(hosts, configured...), tools...)
}

// DefaultRedactionKeyEnv names the environment variable of the key of the
// redacted fields' hashes unless redaction.key_env names another.
const DefaultRedactionKeyEnv = "ARBITER_REDACTION_KEY"

// redactionKey is the deployment's key of the redacted fields' hashes,
// from the environment; nil (the engine makes a random one, logged here)
// when it is unset and a tool redacts something.
func redactionKey(env *Env, cfg *config.Config) []byte {
	name := cmp.Or(cfg.Redaction.KeyEnv, DefaultRedactionKeyEnv)
	if key := env.Getenv(name); key != "" {
		return []byte(key)
	}
	for _, h := range cfg.Tools.HTTP {
		if len(h.Redact) > 0 {
			env.Logger.Warn("no redaction key: the redacted fields' hashes are keyed by a random key of this process", "env", name)
			break
		}
	}
	return nil
}

// mediaLimits are the configured bounds of attached files.
func mediaLimits(l config.Limits) media.Limits {
	return media.Limits{MaxImageBytes: l.MaxImageBytes, MaxPDFBytes: l.MaxPDFBytes, MaxPDFPages: l.MaxPDFPages, MaxPDFRunes: l.MaxPDFChars}
}
