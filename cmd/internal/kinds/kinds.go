// Package kinds is the table of every kind the arbiter command carries:
// the server's built-in ones plus the integrations that live in modules of
// their own — Redis state, PostgreSQL journal, Anthropic models, MCP tools
// and channel, Google Calendar, Prometheus metrics and OpenTelemetry
// traces. It holds no behaviour of those integrations, only how a
// configuration section becomes one.
package kinds

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/oauth2"

	"github.com/arbiterhq/arbiter/channel/httpapi"
	"github.com/arbiterhq/arbiter/channel/mcpserver"
	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/anthropic"
	"github.com/arbiterhq/arbiter/observe"
	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/store/pgjournal"
	"github.com/arbiterhq/arbiter/store/redisstore"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/calendar"
	"github.com/arbiterhq/arbiter/tool/calendar/google"
	"github.com/arbiterhq/arbiter/tool/mcptool"
)

// All returns the server's built-in kinds plus the integrations, in fresh
// maps.
func All() server.Kinds {
	k := server.Builtin()
	k.States["redis"] = redisState
	k.Journals["postgres"] = postgresJournal
	for name, p := range anthropic.Presets {
		k.Models[name] = server.ModelKind{Preset: p, Prices: anthropic.Prices, New: newAnthropic}
	}
	k.Tools["mcp"] = mcpTools
	k.ToolNames["mcp"] = mcpToolNames
	k.Tools["calendar"] = server.CalendarKind(server.CalendarBackends{"google": googleCalendar})
	k.Channels["mcp"] = mcpChannel
	k.Observers = append(k.Observers, metrics, tracing)
	return k
}

// mcpToolNames are the universal action mcp and each server's tools,
// which are known only once the server answers (<server>.*).
func mcpToolNames(cfg *config.Config, _ server.Section) []string {
	names := []string{"mcp"}
	for _, s := range cfg.Tools.MCP.Servers {
		names = append(names, s.Name+".*")
	}
	return names
}

func redisState(ctx context.Context, env *server.Env) (store.State, store.Locker, error) {
	c := env.Config
	// A conversation's parts come with their own times (turn.Lifetimes),
	// so no store-wide TTL is set here; execution records, which a
	// resumed action reads, are kept as long as retention keeps them.
	rs, err := redisstore.Open(ctx, redisstore.Options{
		URL: c.Store.URL, Prefix: c.Store.Prefix, Now: env.Now,
		ExecutionTTL: server.ExecutionRetention(c.Retention),
		LockWait:     time.Duration(c.Store.LockWait), LockTTL: time.Duration(c.Store.LockTTL),
	})
	if err != nil {
		return nil, nil, err
	}
	env.OnClose(rs.Close)
	return rs, rs, nil
}

func postgresJournal(ctx context.Context, env *server.Env) (store.Journal, error) {
	pj, err := pgjournal.Open(ctx, pgjournal.Options{URL: env.Config.Journal.URL, Schema: env.Config.Journal.Schema})
	if err != nil {
		return nil, err
	}
	env.OnClose(func() error { pj.Close(); return nil })
	return pj, nil
}

func newAnthropic(m server.Model) (llm.Provider, error) {
	return anthropic.New(anthropic.Config{
		Name: m.Name, BaseURL: m.BaseURL, APIKey: m.APIKey, Model: m.Model,
		Protocol: m.Protocol, Timeout: m.Timeout, Stream: m.Stream, NoStream: m.NoStream, Images: m.Images, HTTPClient: m.HTTPClient, Headers: m.Headers,
	})
}

// googleCalendar is the Google Calendar backend, each user acting with
// their own token.
func googleCalendar(env *server.Env, _ map[string][]calendar.Member) (calendar.Backend, error) {
	type userKey struct{ tenant, user string }
	tokens := map[userKey]string{}
	for _, t := range env.Config.Tenants {
		for _, u := range t.Users {
			if u.Google != nil {
				if tok := env.Getenv(u.Google.TokenEnv); tok != "" {
					tokens[userKey{t.ID, u.ID}] = tok
				}
			}
		}
	}
	return google.New(google.Config{
		BaseURL: env.Config.Tools.Calendar.GoogleBaseURL,
		Tokens: func(tenant, user string) (oauth2.TokenSource, bool) {
			tok, ok := tokens[userKey{tenant, user}]
			if !ok {
				return nil, false
			}
			return google.StaticToken(tok), true
		},
	})
}

// mcpTools connects the configured MCP servers and returns their tools
// (each exposed tool and the universal "mcp" action) and the action as a
// live-context source. A server that cannot be reached at start is logged
// and left out rather than stopping arbiter.
func mcpTools(ctx context.Context, env *server.Env, _ server.Section) (server.ToolSet, error) {
	var servers []*mcptool.Server
	var set server.ToolSet
	for _, sc := range env.Config.Tools.MCP.Servers {
		policy := mcptool.Policy{Trusted: sc.Trusted, DefaultRisk: tool.Risk(sc.DefaultRisk), DefaultConfirm: tool.Confirm(sc.DefaultConfirm), Tools: map[string]mcptool.ToolPolicy{}}
		for pattern, tp := range sc.Tools {
			policy.Tools[pattern] = mcptool.ToolPolicy{Risk: tool.Risk(tp.Risk), Confirm: tool.Confirm(tp.Confirm), Hidden: tp.Hidden,
				Roles: tp.Roles, Title: tp.Title, Timeout: time.Duration(tp.Timeout)}
		}
		cfg := mcptool.ServerConfig{Name: sc.Name, Dir: sc.Dir, Env: sc.Env, InheritEnv: sc.InheritEnv, URL: sc.URL,
			Headers: sc.Headers, Policy: policy, Timeout: time.Duration(sc.Timeout), Logger: env.Logger,
			Sampling: sc.Sampling, Elicitation: sc.Elicitation, AskTimeout: time.Duration(sc.AskTimeout)}
		if len(sc.Command) > 0 {
			cfg.Command, cfg.Args = sc.Command[0], sc.Command[1:]
		}
		if sc.BearerEnv != "" {
			cfg.BearerToken = env.Getenv(sc.BearerEnv)
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		srv, err := mcptool.Connect(cctx, cfg)
		cancel()
		if err != nil {
			env.Logger.Error("MCP server left out: it could not be reached", "server", sc.Name, "err", err)
			continue
		}
		servers = append(servers, srv)
		env.OnClose(srv.Close)
		set.Tools = append(set.Tools, srv.Tools()...)
	}
	if len(servers) == 0 {
		return set, nil
	}
	action, err := mcptool.NewAction(servers...)
	if err != nil {
		return server.ToolSet{}, fmt.Errorf("mcp action: %w", err)
	}
	set.Tools = append(set.Tools, action)
	set.Context = []tool.ContextSource{action}
	return set, nil
}

// MCPPath is where the MCP channel and `arbiter mcp -listen` serve MCP
// unless the configuration says otherwise.
const MCPPath = "/mcp"

// mcpChannel serves the tools to MCP clients on the server's listener,
// each request authenticated by its bearer key.
func mcpChannel(_ context.Context, env *server.Env, _ server.Section) (server.Channel, error) {
	m := env.Config.Channels.MCP
	h, closeAll, err := mcpserver.HTTPHandler(mcpserver.Config{Handler: env.Engine, Name: "arbiter",
		Logger: env.Logger, ConfirmTimeout: time.Duration(m.ConfirmTimeout)}, MCPKeys(env.Keys))
	if err != nil {
		return server.Channel{}, err
	}
	env.OnClose(func() error { closeAll(); return nil })
	path := m.Path
	if path == "" {
		path = MCPPath
	}
	return server.Channel{Routes: map[string]http.Handler{path: h}}, nil
}

// metrics serves Prometheus metrics at /metrics unless they are off.
func metrics(_ context.Context, env *server.Env) (server.Observer, error) {
	if m := env.Config.Observability.Metrics; m != nil && !*m {
		return server.Observer{}, nil
	}
	mt := observe.NewMetrics(prometheus.NewRegistry())
	return server.Observer{Observe: mt.Observe, Routes: map[string]http.Handler{"GET /metrics": mt.Handler()}}, nil
}

// tracing exports OpenTelemetry spans of every turn when configured.
func tracing(_ context.Context, env *server.Env) (server.Observer, error) {
	c := env.Config.Observability
	// The exporter outlives Build: it is not bound to its context.
	tr, shutdown, err := observe.NewTracing(context.Background(), observe.Config{Exporter: c.TracesExporter, CaptureContent: c.CaptureContent})
	if err != nil {
		return server.Observer{}, fmt.Errorf("tracing: %w", err)
	}
	env.OnClose(func() error {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return shutdown(sctx)
	})
	if !tr.Enabled() {
		return server.Observer{}, nil
	}
	return server.Observer{Observe: tr.Observe}, nil
}

// MCPKeys are the API keys as the MCP server takes them.
func MCPKeys(keys []httpapi.Key) []mcpserver.Key {
	out := make([]mcpserver.Key, len(keys))
	for i, k := range keys {
		out[i] = mcpserver.Key{Token: k.Token, Identity: k.Identity}
	}
	return out
}
