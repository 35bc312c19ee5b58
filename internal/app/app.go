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
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/channel/httpapi"
	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/internal/config"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/openaicompat"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/store/sqlitestore"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/taskboard"
	"github.com/arbiterhq/arbiter/turn"
)

// App is a wired arbiter: engine, channels and the backends they share.
type App struct {
	Config *config.Config
	Engine *turn.Engine
	HTTP   *httpapi.Server
	Store  *sqlitestore.Store
	Board  *taskboard.Board // nil when the task board is off
	Keys   []httpapi.Key
	// LocalKey is set for the local setup (no configuration file).
	LocalKey string
	// HasModel is false when no model provider is configured.
	HasModel bool
	Logger   *slog.Logger
}

// Close releases the store.
func (a *App) Close() error { return a.Store.Close() }

// Options are what a caller may inject instead of the real world.
type Options struct {
	Getenv func(string) string // default os.Getenv
	LogOut io.Writer           // default io.Discard
	// Model replaces the configured provider (tests use a scripted one).
	Model llm.Provider
	Now   func() time.Time
	NewID func() string
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

// defaultPrices are list prices in US dollars per million tokens, used for
// the journal's cost estimate unless the config gives its own.
var defaultPrices = map[string]llm.Price{
	"gpt-oss-20b":  {InputPerMTok: 0.07, OutputPerMTok: 0.30},
	"gpt-oss-120b": {InputPerMTok: 0.15, OutputPerMTok: 0.60},
	"gpt-4.1-mini": {InputPerMTok: 0.40, OutputPerMTok: 1.60},
	"gpt-4o-mini":  {InputPerMTok: 0.15, OutputPerMTok: 0.60},
}

// EnvModels derives the model from the environment when the config names
// none: OPENAI_API_KEY (+ OPENAI_BASE_URL, ARBITER_MODEL), else
// FIREWORKS_API_KEY with gpt-oss-20b.
func EnvModels(getenv func(string) string) []config.Model {
	if key := getenv("OPENAI_API_KEY"); key != "" {
		base := getenv("OPENAI_BASE_URL")
		if base == "" {
			base = "https://api.openai.com/v1"
		}
		model := getenv("ARBITER_MODEL")
		if model == "" {
			model = "gpt-4.1-mini"
		}
		return []config.Model{{Name: "openai", Kind: "openai", BaseURL: base, Model: model, APIKey: key}}
	}
	if key := getenv("FIREWORKS_API_KEY"); key != "" {
		model := getenv("ARBITER_MODEL")
		if model == "" {
			model = "accounts/fireworks/models/gpt-oss-20b"
		}
		return []config.Model{{Name: "fireworks", Kind: "openai", BaseURL: "https://api.fireworks.ai/inference/v1", Model: model, APIKey: key, Output: "json_schema"}}
	}
	return nil
}

// newProvider is the kind -> constructor map for models.
func newProvider(m config.Model, getenv func(string) string) (llm.Provider, error) {
	switch m.Kind {
	case "openai":
		return openaicompat.New(openaicompat.Config{
			Name:    m.Name,
			BaseURL: m.BaseURL,
			APIKey:  config.ResolveAPIKey(m, getenv),
			Model:   m.Model,
			Output:  llm.OutputMode(m.Output),
			Timeout: time.Duration(m.Timeout),
		})
	}
	return nil, fmt.Errorf("model %s: unknown kind %q", m.Name, m.Kind)
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
	path := cfg.Store.Path
	if path == "" {
		path = filepath.Join("data", "arbiter.db")
	}
	st, err := sqlitestore.Open(path, sqlitestore.Options{ConversationTTL: time.Duration(cfg.Memory.TTL), Now: opts.Now})
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	a.Store = st
	fail := func(err error) (*App, error) {
		st.Close()
		return nil, err
	}

	tenants := map[string]turn.Tenant{}
	members := map[string][]taskboard.Member{}
	for _, t := range cfg.Tenants {
		roles := map[string]turn.Role{}
		for name, r := range t.Roles {
			roles[name] = turn.Role{Tools: r.Tools}
		}
		tenants[t.ID] = turn.Tenant{ID: t.ID, Timezone: t.Timezone, Language: t.Language, AssistantName: t.AssistantName, Roles: roles}
		for _, u := range t.Users {
			members[t.ID] = append(members[t.ID], taskboard.Member{ID: u.ID, Name: u.Name})
			for _, k := range u.Keys {
				a.Keys = append(a.Keys, httpapi.Key{Token: config.ResolveToken(k, getenv), Identity: identity(t, u, k.Scopes)})
			}
		}
	}
	if len(cfg.Tenants) == 1 && cfg.Tenants[0].ID == "local" && len(a.Keys) == 0 {
		key, err := localKey(filepath.Dir(path))
		if err != nil {
			return fail(err)
		}
		a.LocalKey = key
		t, u := cfg.Tenants[0], cfg.Tenants[0].Users[0]
		a.Keys = append(a.Keys, httpapi.Key{Token: key, Identity: identity(t, u, []string{"read", "write:safe", "write:full"})})
	}

	var tools []tool.Tool
	var sources []tool.ContextSource
	if tb := cfg.Tools.Taskboard; tb != nil && !tb.Disabled {
		extra := map[string][]taskboard.Member{}
		for tenant, ms := range tb.Members {
			for _, m := range ms {
				extra[tenant] = append(extra[tenant], taskboard.Member{ID: m.ID, Name: m.Name})
			}
		}
		confirm := map[string]tool.Confirm{}
		for action, policy := range tb.Confirm {
			confirm[action] = tool.Confirm(policy)
		}
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
	}
	registry, err := tool.NewRegistry(tools...)
	if err != nil {
		return fail(err)
	}

	models := cfg.Models
	if len(models) == 0 {
		models = EnvModels(getenv)
	}
	model := opts.Model
	if model == nil && len(models) > 0 {
		if model, err = newProvider(models[0], getenv); err != nil {
			return fail(err)
		}
	}
	a.HasModel = model != nil
	prices := map[string]llm.Price{}
	for k, v := range defaultPrices {
		prices[k] = v
	}
	for k, v := range cfg.Prices {
		prices[k] = llm.Price{InputPerMTok: v.Input, OutputPerMTok: v.Output}
	}
	commands := map[string]turn.Command{"/tasks": {Tool: "list_my_tasks"}}
	for name, c := range cfg.Commands {
		commands[name] = turn.Command{Tool: c.Tool, Args: c.Args}
	}
	a.Engine, err = turn.New(turn.Config{
		State: st, Locker: st, Journal: st,
		Tools: registry, Context: sources, Model: model, Strategy: cfg.Strategy,
		Prices: prices, Tenants: tenants,
		Memory:       turn.MemoryPolicy{Window: cfg.Memory.Window, TTL: time.Duration(cfg.Memory.TTL), Pause: time.Duration(cfg.Memory.Pause)},
		PendingTTL:   time.Duration(cfg.Confirmation.TTL),
		ModelTimeout: time.Duration(cfg.Limits.ModelTimeout),
		MaxTokens:    cfg.Limits.MaxTokens,
		TurnTimeout:  time.Duration(cfg.Limits.TurnTimeout),
		Commands:     commands,
		Now:          opts.Now,
		NewID:        opts.NewID,
		Logger:       logger,
	})
	if err != nil {
		return fail(err)
	}
	a.HTTP, err = httpapi.New(httpapi.Config{
		Handler:      a.Engine,
		Keys:         a.Keys,
		Turn:         journalLookup(st),
		MaxBodyBytes: cfg.Limits.MaxBodyBytes,
		Logger:       logger,
	})
	if err != nil {
		return fail(err)
	}
	return a, nil
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
