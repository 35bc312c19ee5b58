// Package mcpserver offers arbiter's native tools to Model Context Protocol
// clients (editors, other agents): one MCP tool per tool of the caller's
// catalog, with its risk as annotations.
//
// A tools/call is not run here. It becomes one turn of the engine carrying a
// chat.Call, so it passes the same guards as a model's proposal — catalog,
// schema, rights, confirmation — and is journaled like any turn. When the
// engine asks for confirmation, the human is asked through the client's
// elicitation with the text the server rendered from the stored action; a
// client that cannot ask gets a refusal and nothing runs. A running tool's
// progress and questions reach the client as chat.Live. Annotations are
// advisory for clients; the guards stay in the engine.
package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/tool"
)

// Channel is the chat.Inbound.Channel of every turn this package starts.
const Channel = "mcp"

// DefaultConfirmTimeout bounds the wait for the human's answer to a
// confirmation when Config.ConfirmTimeout is zero.
const DefaultConfirmTimeout = 5 * time.Minute

// Keys of a tool's _meta that carry arbiter's own policy, for clients that
// want more than the standard hints.
const (
	MetaRisk    = "arbiter/risk"
	MetaConfirm = "arbiter/confirm"
)

// Handler is what the server needs of the engine; *turn.Engine satisfies it.
type Handler interface {
	chat.Handler
	// Catalog returns the specs of the tools the identity may run.
	Catalog(id chat.Identity) []tool.Spec
}

// Config configures a Server.
type Config struct {
	Handler Handler
	// Identity is who every call runs as: the API key's user and scopes.
	Identity chat.Identity
	// Name and Version describe the server to clients; defaults "arbiter"
	// and "dev".
	Name, Version string
	// Logger gets the server's and the SDK's logs; default discards.
	Logger *slog.Logger
	// ConfirmTimeout bounds the wait for the human's answer to a
	// confirmation; an unanswered action is cancelled. Zero means
	// DefaultConfirmTimeout.
	ConfirmTimeout time.Duration
}

// Server is an MCP server over one identity's catalog. Safe for concurrent
// use; several sessions may share it.
type Server struct {
	cfg    Config
	mcp    *mcp.Server
	logger *slog.Logger
	// prefix makes conversation ids unique across processes sharing a
	// store, so a new process never meets an old call's pending action.
	prefix string
	seq    atomic.Uint64

	mu     sync.Mutex
	parked map[string]*parked
	closed bool
}

// New lists the identity's catalog once (it is static per process) and
// builds the MCP server with one tool per spec.
func New(cfg Config) (*Server, error) {
	if cfg.Handler == nil {
		return nil, errors.New("mcpserver: no handler")
	}
	if cfg.Identity.TenantID == "" || cfg.Identity.UserID == "" {
		return nil, errors.New("mcpserver: the identity needs a tenant and a user")
	}
	if cfg.Name == "" {
		cfg.Name = "arbiter"
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.ConfirmTimeout <= 0 {
		cfg.ConfirmTimeout = DefaultConfirmTimeout
	}
	var raw [6]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:    cfg,
		logger: cfg.Logger,
		prefix: "mcp:" + hex.EncodeToString(raw[:]) + ":",
		parked: map[string]*parked{},
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: cfg.Name, Version: cfg.Version}, &mcp.ServerOptions{
		Logger: cfg.Logger,
		// Declared even for an empty catalog, so clients list and see none.
		HasTools: true,
	})
	for _, spec := range cfg.Handler.Catalog(cfg.Identity) {
		t, err := mcpTool(spec, cfg.Identity.Language)
		if err == nil {
			err = s.add(t)
		}
		if err != nil {
			s.logger.Warn("mcp: tool not offered", "tool", spec.Name, "error", err)
		}
	}
	return s, nil
}

// MCP returns the SDK server, for transports (stdio, streamable HTTP).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Run serves one session on t until the client leaves or ctx ends, then
// cancels the actions still waiting for an answer.
// The end of ctx is a normal stop, not an error.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	defer s.Close()
	ss, err := s.mcp.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		ss.Close()
		<-done
		return nil
	}
}

// Close cancels every action still waiting for the human's answer, so none
// outlives the server, and refuses to wait for new ones.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	waiting := make([]*parked, 0, len(s.parked))
	for token, p := range s.parked {
		delete(s.parked, token)
		p.timer.Stop()
		waiting = append(waiting, p)
	}
	s.mu.Unlock()
	for _, p := range waiting {
		s.cancelPending(context.Background(), p.chat, p.id)
	}
}

// add registers t; the SDK panics on schemas it cannot take, which must
// cost one tool, not the server.
func (s *Server) add(t *mcp.Tool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	name := t.Name
	s.mcp.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return s.call(ctx, name, req), nil
	})
	return nil
}

// mcpTool describes spec as an MCP tool: the raw input schema, the risk as
// hints, and the risk and confirmation policy in _meta.
func mcpTool(spec tool.Spec, lang string) (*mcp.Tool, error) {
	// Titles in the key's user's language, as the chat shows them.
	spec.Title = spec.TitleIn(lang)
	schema := spec.InputSchema
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	var top struct {
		Type any `json:"type"`
	}
	if err := json.Unmarshal(schema, &top); err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	if top.Type != "object" {
		return nil, fmt.Errorf("input schema has type %v; MCP tools take an object", top.Type)
	}
	confirm := spec.Confirm
	if confirm == "" {
		confirm = tool.ConfirmNever
	}
	return &mcp.Tool{
		Name:        spec.Name,
		Title:       spec.Title,
		Description: spec.Description,
		InputSchema: schema,
		Annotations: annotations(spec),
		Meta:        mcp.Meta{MetaRisk: string(spec.Risk), MetaConfirm: string(confirm)},
	}, nil
}

// annotations maps arbiter's risk onto the MCP hints. An unknown risk gets
// the most cautious hints.
func annotations(spec tool.Spec) *mcp.ToolAnnotations {
	a := &mcp.ToolAnnotations{Title: spec.Title, IdempotentHint: spec.Idempotent}
	switch spec.Risk {
	case tool.RiskRead:
		a.ReadOnlyHint = true
	case tool.RiskWriteSafe:
		a.DestructiveHint, a.OpenWorldHint = ptr(false), ptr(false)
	default:
		a.DestructiveHint, a.OpenWorldHint = ptr(true), ptr(true)
	}
	return a
}

func ptr[T any](v T) *T { return &v }
