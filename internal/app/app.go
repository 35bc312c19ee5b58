// Package app wires an arbiter from its configuration: the store, the
// tools, the model provider, the turn engine and the HTTP channel, through
// small kind -> constructor switches. It is shared by the arbiter command
// and by end-to-end tests; it holds no behaviour of its own.
package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/arbiterhq/arbiter/channel/httpapi"
	"github.com/arbiterhq/arbiter/channel/mcpserver"
	"github.com/arbiterhq/arbiter/channel/telegram"
	"github.com/arbiterhq/arbiter/channel/webchat"
	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/internal/config"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/observe"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/store/sqlitestore"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/contentidea"
	"github.com/arbiterhq/arbiter/tool/knowledge"
	"github.com/arbiterhq/arbiter/tool/taskboard"
	"github.com/arbiterhq/arbiter/turn"
)

// App is a wired arbiter: engine, channels and the backends they share.
type App struct {
	Config *config.Config
	Engine *turn.Engine
	// HTTP serves the API, /metrics and (when built in) the web chat.
	HTTP http.Handler
	// Metrics is nil when metrics are off.
	Metrics *observe.Metrics
	// Telegram is nil unless channels.telegram is configured; Run starts it.
	Telegram *telegram.Channel
	// State, Locker and Journal are the configured backends; SQLite is the
	// embedded file (the state itself by default, the board's tables, and
	// the default journal).
	State   store.State
	Locker  store.Locker
	Journal store.Journal
	SQLite  *sqlitestore.Store
	Board   *taskboard.Board // nil when the task board is off
	Keys    []httpapi.Key
	// LocalKey is set for the local setup (no configuration file).
	LocalKey string
	// HasModel is false when no model provider is configured.
	HasModel bool
	Logger   *slog.Logger

	backends *backends
}

// Close releases the store.
func (a *App) Close() error { return a.backends.close() }

// Run runs the background channels (Telegram) until ctx ends.
func (a *App) Run(ctx context.Context) error {
	if a.Telegram == nil {
		<-ctx.Done()
		return nil
	}
	return a.Telegram.Run(ctx)
}

// Options are what a caller may inject instead of the real world.
type Options struct {
	Getenv func(string) string // default os.Getenv
	LogOut io.Writer           // default io.Discard
	// Model replaces the configured providers (tests use a scripted one).
	Model llm.Provider
	// Record writes every provider exchange as cassettes into this
	// directory; Replay answers provider calls from the cassettes in this
	// directory, with no network.
	Record, Replay string
	Now            func() time.Time
	NewID          func() string
	// Sleep replaces the provider chain's retry wait (tests use a fake
	// clock).
	Sleep func(ctx context.Context, d time.Duration) error
}

// LocalConfig is the zero-configuration setup: one tenant, one user, every
// tool, the task board, and a key created on first start. ARBITER_LISTEN,
// ARBITER_LANGUAGE (en, ru), ARBITER_TIMEZONE and ARBITER_USER_NAME adjust it.
func LocalConfig(getenv func(string) string) *config.Config {
	lang := getenv("ARBITER_LANGUAGE")
	if lang != "ru" {
		lang = "en"
	}
	zone := getenv("ARBITER_TIMEZONE")
	if _, err := time.LoadLocation(zone); err != nil || zone == "" {
		zone = "UTC"
	}
	name := getenv("ARBITER_USER_NAME")
	if name == "" {
		name = "Local User"
	}
	listen := getenv("ARBITER_LISTEN")
	if listen == "" {
		listen = "127.0.0.1:8080"
	}
	return &config.Config{
		Listen: listen,
		Store:  config.Store{Kind: "sqlite", Path: filepath.Join("data", "arbiter.db")},
		Tenants: []config.Tenant{{
			ID: "local", Timezone: zone, Language: lang,
			Roles: map[string]config.Role{"owner": {Tools: []string{"*"}}},
			Users: []config.User{{ID: "local", Name: name, Role: "owner"}},
		}},
		Tools: config.Tools{Taskboard: &config.Taskboard{}},
	}
}

// Build wires everything from cfg. Relative store paths are relative to
// the working directory.
func Build(cfg *config.Config, opts Options) (*App, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if opts.LogOut == nil {
		opts.LogOut = io.Discard
	}
	logger := newLogger(cfg.Log, opts.LogOut)
	a := &App{Config: cfg, Logger: logger}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:8080"
	}
	if cfg.PublicURL == "" {
		cfg.PublicURL = "http://" + cfg.Listen
	}
	b, err := openBackends(cfg, opts)
	if err != nil {
		return nil, err
	}
	a.backends = b
	a.State, a.Locker, a.Journal, a.SQLite = b.state, b.locker, b.journal, b.sqlite
	st := b.sqlite
	fail := func(err error) (*App, error) {
		b.close()
		return nil, err
	}

	tenants := map[string]turn.Tenant{}
	members := map[string][]taskboard.Member{}
	for _, t := range cfg.Tenants {
		roles := map[string]turn.Role{}
		for name, r := range t.Roles {
			roles[name] = turn.Role{Tools: r.Tools}
		}
		tenants[t.ID] = turn.Tenant{ID: t.ID, Timezone: t.Timezone, Language: t.Language, AssistantName: t.AssistantName, Roles: roles, Strategy: t.Strategy}
		for _, u := range t.Users {
			members[t.ID] = append(members[t.ID], taskboard.Member{ID: u.ID, Name: u.Name})
			for _, k := range u.Keys {
				a.Keys = append(a.Keys, httpapi.Key{Token: config.ResolveToken(k, getenv), Identity: identity(t, u, k.Scopes)})
			}
		}
	}
	if len(cfg.Tenants) == 1 && cfg.Tenants[0].ID == "local" && len(a.Keys) == 0 {
		dir := "data"
		if cfg.Store.Path != "" {
			dir = filepath.Dir(cfg.Store.Path)
		}
		key, err := localKey(dir)
		if err != nil {
			return fail(err)
		}
		a.LocalKey = key
		t, u := cfg.Tenants[0], cfg.Tenants[0].Users[0]
		a.Keys = append(a.Keys, httpapi.Key{Token: key, Identity: identity(t, u, []string{"read", "write:safe", "write:full"})})
	}

	var tools []tool.Tool
	var sources []tool.ContextSource
	var links []tool.LinkReader
	if tb := cfg.Tools.Taskboard; tb != nil && !tb.Disabled {
		extra := map[string][]taskboard.Member{}
		for tenant, ms := range tb.Members {
			for _, m := range ms {
				extra[tenant] = append(extra[tenant], taskboard.Member{ID: m.ID, Name: m.Name})
			}
		}
		confirm := confirmMap(tb.Confirm)
		board, err := taskboard.New(taskboard.Config{
			DB:           st.DB(),
			Columns:      tb.Columns,
			Members:      func(tenant string) []taskboard.Member { return members[tenant] },
			ExtraMembers: extra,
			Confirm:      confirm,
			BaseURL:      cfg.PublicURL,
			Now:          opts.Now,
			NewID:        opts.NewID,
		})
		if err != nil {
			return fail(fmt.Errorf("task board: %w", err))
		}
		a.Board = board
		tools = append(tools, board.Tools()...)
		sources = append(sources, board)
		links = append(links, board)
	}
	if tr := cfg.Tools.Trello; tr != nil {
		tc, err := newTrello(cfg, tr, getenv, opts)
		if err != nil {
			return fail(err)
		}
		tools = append(tools, tc.Tools()...)
		sources = append(sources, tc)
		links = append(links, tc)
	}
	if cal := cfg.Tools.Calendar; cal != nil {
		c, err := newCalendar(cfg, cal, st, getenv, opts)
		if err != nil {
			return fail(err)
		}
		tools = append(tools, c.Tools()...)
		sources = append(sources, c)
	}
	if m := cfg.Tools.MCP; m != nil && len(m.Servers) > 0 {
		mcpTools, mcpSources, closers, err := connectMCP(m, getenv, logger)
		if err != nil {
			return fail(err)
		}
		b.closers = append(b.closers, closers...)
		tools = append(tools, mcpTools...)
		sources = append(sources, mcpSources...)
	}
	if k := cfg.Tools.Knowledge; k != nil {
		kb, err := knowledge.New(knowledge.Config{DB: st.DB(), Now: opts.Now, Confirm: confirmMap(k.Confirm)})
		if err != nil {
			return fail(fmt.Errorf("knowledge base: %w", err))
		}
		tools = append(tools, kb.Tools()...)
	}
	if ci := cfg.Tools.ContentIdeas; ci != nil {
		ideas, err := contentidea.New(contentidea.Config{DB: st.DB(), Platforms: ci.Platforms, Now: opts.Now, Confirm: confirmMap(ci.Confirm)})
		if err != nil {
			return fail(fmt.Errorf("content ideas: %w", err))
		}
		tools = append(tools, ideas.Tools()...)
	}
	for _, h := range cfg.Tools.HTTP {
		t, err := newHTTPTool(h, getenv)
		if err != nil {
			return fail(err)
		}
		tools = append(tools, t)
	}
	registry, err := tool.NewRegistry(tools...)
	if err != nil {
		return fail(err)
	}

	prices := map[string]llm.Price{}
	for k, v := range defaultPrices {
		prices[k] = v
	}
	for k, v := range cfg.Prices {
		prices[k] = llm.Price{InputPerMTok: v.Input, OutputPerMTok: v.Output, CachedInputPerMTok: v.CachedInput}
	}
	models := cfg.Models
	if len(models) == 0 {
		models = EnvModels(getenv)
	}
	var secrets []string
	for _, m := range models {
		if k := config.ResolveAPIKey(m, getenv); k != "" {
			secrets = append(secrets, k)
		}
		if p := config.Presets[m.Kind]; p.KeyEnv != "" && getenv(p.KeyEnv) != "" {
			secrets = append(secrets, getenv(p.KeyEnv))
		}
	}
	client, err := providerClient(opts, secrets)
	if err != nil {
		return fail(err)
	}
	strategies, strategy, err := buildStrategies(cfg, models, prices, modelSetup{getenv: getenv, client: client, notice: opts.LogOut}, opts)
	if err != nil {
		return fail(err)
	}
	model := strategies[strategy]
	if opts.Model != nil {
		model, strategies = opts.Model, nil
	}
	a.HasModel = model != nil
	commands := map[string]turn.Command{"/tasks": {Tool: "list_my_tasks"}}
	for name, c := range cfg.Commands {
		commands[name] = turn.Command{Tool: c.Tool, Args: c.Args}
	}
	observer, err := a.observability(cfg, b)
	if err != nil {
		return fail(err)
	}
	a.Engine, err = turn.New(turn.Config{
		State: b.state, Locker: b.locker, Journal: b.journal,
		Tools: registry, Context: sources, Links: links, Model: model, Strategy: strategy, Strategies: strategies,
		InvalidFallback: cfg.Retry.InvalidFallback,
		Prices:          prices, Tenants: tenants,
		Memory:       turn.MemoryPolicy{Window: cfg.Memory.Window, TTL: time.Duration(cfg.Memory.TTL), Pause: time.Duration(cfg.Memory.Pause)},
		PendingTTL:   time.Duration(cfg.Confirmation.TTL),
		ModelTimeout: time.Duration(cfg.Limits.ModelTimeout),
		MaxTokens:    cfg.Limits.MaxTokens,
		TurnTimeout:  time.Duration(cfg.Limits.TurnTimeout),
		Commands:     commands,
		Now:          opts.Now,
		NewID:        opts.NewID,
		Logger:       logger,
		Observe:      observer,
	})
	if err != nil {
		return fail(err)
	}
	api, err := httpapi.New(httpapi.Config{
		Handler:      a.Engine,
		Keys:         a.Keys,
		Turn:         journalLookup(b.journal),
		Turns:        journalList(b.journal),
		MaxBodyBytes: cfg.Limits.MaxBodyBytes,
		Logger:       logger,
	})
	if err != nil {
		return fail(err)
	}
	mux := http.NewServeMux()
	if tg := cfg.Channels.Telegram; tg != nil {
		ch, err := a.newTelegram(cfg, tg, getenv)
		if err != nil {
			return fail(err)
		}
		a.Telegram = ch
		path := tg.WebhookPath
		if path == "" {
			path = telegram.DefaultWebhookPath
		}
		mux.Handle("POST "+path, ch)
	}
	if m := cfg.Channels.MCP; m != nil {
		h, closeAll, err := mcpserver.HTTPHandler(mcpserver.Config{Handler: a.Engine, Name: "arbiter",
			Logger: logger, ConfirmTimeout: time.Duration(m.ConfirmTimeout)}, MCPKeys(a.Keys))
		if err != nil {
			return fail(err)
		}
		b.closers = append(b.closers, func() error { closeAll(); return nil })
		path := m.Path
		if path == "" {
			path = DefaultMCPPath
		}
		mux.Handle(path, h)
	}
	mux.Handle("/v1/", api)
	mux.Handle("/healthz", api)
	mux.Handle("/", webchat.Handler())
	if a.Metrics != nil {
		mux.Handle("GET /metrics", a.Metrics.Handler())
	}
	a.HTTP = mux
	return a, nil
}

// DefaultMCPPath is where channels.mcp serves MCP unless its path says.
const DefaultMCPPath = "/mcp"

// MCPKeys are the API keys as the MCP server takes them.
func MCPKeys(keys []httpapi.Key) []mcpserver.Key {
	out := make([]mcpserver.Key, len(keys))
	for i, k := range keys {
		out[i] = mcpserver.Key{Token: k.Token, Identity: k.Identity}
	}
	return out
}

// observability sets up metrics and traces and returns the engine's
// observer of finished turns.
func (a *App) observability(cfg *config.Config, b *backends) (func(*turn.Trace), error) {
	var observers []func(*turn.Trace)
	if m := cfg.Observability.Metrics; m == nil || *m {
		a.Metrics = observe.NewMetrics(prometheus.NewRegistry())
		observers = append(observers, a.Metrics.Observe)
	}
	tracing, shutdown, err := observe.NewTracing(context.Background(), observe.Config{
		Exporter: cfg.Observability.TracesExporter, CaptureContent: cfg.Observability.CaptureContent,
	})
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	b.closers = append(b.closers, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return shutdown(ctx)
	})
	if tracing.Enabled() {
		observers = append(observers, tracing.Observe)
	}
	return observe.Observer(observers...), nil
}

func confirmMap(m map[string]string) map[string]tool.Confirm {
	out := make(map[string]tool.Confirm, len(m))
	for action, policy := range m {
		out[action] = tool.Confirm(policy)
	}
	return out
}

func identity(t config.Tenant, u config.User, scopes []string) chat.Identity {
	id := chat.Identity{TenantID: t.ID, UserID: u.ID, Name: u.Name, Role: u.Role, Timezone: u.Timezone, Language: u.Language}
	for _, s := range scopes {
		id.Scopes = append(id.Scopes, chat.Scope(s))
	}
	if id.Name == "" {
		id.Name = u.ID
	}
	return id
}

func journalLookup(j store.Journal) func(ctx context.Context, tenant, id string) (json.RawMessage, error) {
	return func(ctx context.Context, tenant, id string) (json.RawMessage, error) {
		rec, err := j.GetTurn(ctx, tenant, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil, httpapi.ErrTurnNotFound
		}
		if err != nil {
			return nil, err
		}
		return rec.Trace, nil
	}
}

// journalList adapts a journal that can list turns to the API's list.
func journalList(j store.Journal) func(ctx context.Context, tenant string, q httpapi.TurnQuery) ([]httpapi.TurnSummary, error) {
	lister, ok := j.(store.TurnLister)
	if !ok {
		return nil
	}
	return func(ctx context.Context, tenant string, q httpapi.TurnQuery) ([]httpapi.TurnSummary, error) {
		recs, err := lister.ListTurns(ctx, tenant, store.TurnFilter{
			Chat: q.ConversationID, UserID: q.UserID, Status: q.Status, Provider: q.Provider, Before: q.Before, Limit: q.Limit,
		})
		if err != nil {
			return nil, err
		}
		out := make([]httpapi.TurnSummary, len(recs))
		for i, r := range recs {
			sum := httpapi.TurnSummary{TurnID: r.TurnID, ConversationID: r.Chat, UserID: r.UserID, Route: r.Route,
				Status: r.Status, StartedAt: r.StartedAt, DurationMS: r.DurationMS, Providers: []string{}}
			seen := map[string]bool{}
			for _, c := range r.LLMCalls {
				sum.CostUSD += c.CostUSD
				if c.Provider != "" && !seen[c.Provider] {
					seen[c.Provider] = true
					sum.Providers = append(sum.Providers, c.Provider)
				}
			}
			out[i] = sum
		}
		return out, nil
	}
}

// localKey reads the local setup's API key, creating it on first start.
func localKey(dir string) (string, error) {
	path := filepath.Join(dir, "local-api-key")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= 16 {
		return strings.TrimSpace(string(b)), nil
	}
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	key := "ak_local_" + hex.EncodeToString(raw[:])
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write local API key: %w", err)
	}
	return key, nil
}

func newLogger(c config.Log, out io.Writer) *slog.Logger {
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
