package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/arbiterhq/arbiter/internal/config"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/mcptool"
	"github.com/arbiterhq/arbiter/turn"
)

// connectMCP connects the configured MCP servers and returns their tools
// (each exposed tool and the universal "mcp" action), the action as a
// live-context source, and what closes the sessions. A server that cannot
// be reached at start is logged and left out rather than stopping arbiter.
func connectMCP(m *config.MCP, getenv func(string) string, logger *slog.Logger) ([]tool.Tool, []tool.ContextSource, []func() error, error) {
	var servers []*mcptool.Server
	var closers []func() error
	var tools []tool.Tool
	for _, sc := range m.Servers {
		policy := mcptool.Policy{Trusted: sc.Trusted, DefaultRisk: tool.Risk(sc.DefaultRisk), DefaultConfirm: tool.Confirm(sc.DefaultConfirm), Tools: map[string]mcptool.ToolPolicy{}}
		for pattern, tp := range sc.Tools {
			policy.Tools[pattern] = mcptool.ToolPolicy{Risk: tool.Risk(tp.Risk), Confirm: tool.Confirm(tp.Confirm), Hidden: tp.Hidden,
				Roles: tp.Roles, Title: tp.Title, Timeout: time.Duration(tp.Timeout)}
		}
		cfg := mcptool.ServerConfig{Name: sc.Name, Dir: sc.Dir, Env: sc.Env, InheritEnv: sc.InheritEnv, URL: sc.URL,
			Headers: sc.Headers, Policy: policy, Timeout: time.Duration(sc.Timeout), Logger: logger,
			Sampling: sc.Sampling, Elicitation: sc.Elicitation, AskTimeout: time.Duration(sc.AskTimeout), Sample: sample}
		if len(sc.Command) > 0 {
			cfg.Command, cfg.Args = sc.Command[0], sc.Command[1:]
		}
		if sc.BearerEnv != "" {
			cfg.BearerToken = getenv(sc.BearerEnv)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		srv, err := mcptool.Connect(ctx, cfg)
		cancel()
		if err != nil {
			logger.Error("MCP server left out: it could not be reached", "server", sc.Name, "err", err)
			continue
		}
		servers = append(servers, srv)
		closers = append(closers, srv.Close)
		tools = append(tools, srv.Tools()...)
	}
	if len(servers) == 0 {
		return nil, nil, closers, nil
	}
	action, err := mcptool.NewAction(servers...)
	if err != nil {
		for _, c := range closers {
			c()
		}
		return nil, nil, nil, fmt.Errorf("mcp action: %w", err)
	}
	return append(tools, action), []tool.ContextSource{action}, closers, nil
}

// maxSampleTokens caps what a server's sampling request may spend of our
// model, whatever it asks for.
const maxSampleTokens = 1000

// sample answers an approved sampling request with the model of the turn
// whose tool call caused it, so the call is journaled and costed there.
func sample(ctx context.Context, req mcptool.SampleRequest) (mcptool.SampleResult, error) {
	p := turn.ModelFrom(ctx)
	if p == nil {
		return mcptool.SampleResult{}, errors.New("no model is configured")
	}
	var msgs []llm.Message
	if req.SystemPrompt != "" {
		msgs = append(msgs, llm.Message{Role: "system", Content: req.SystemPrompt})
	}
	for _, m := range req.Messages {
		role := "user"
		if m.Role == "assistant" {
			role = "assistant"
		}
		msgs = append(msgs, llm.Message{Role: role, Content: m.Text})
	}
	limit := req.MaxTokens
	if limit <= 0 || limit > maxSampleTokens {
		limit = maxSampleTokens
	}
	resp, err := p.Complete(ctx, llm.Request{Messages: msgs, MaxTokens: limit, Temperature: req.Temperature, Operation: "mcp_sampling"})
	if err != nil {
		return mcptool.SampleResult{}, err
	}
	return mcptool.SampleResult{Text: resp.Text, Model: resp.Model}, nil
}
