// Package httpapi is the HTTP channel: POST /v1/messages runs a turn for the
// caller identified by its bearer key (binding its conversation to a case,
// or closing it, for a key with the scope context:bind), GET /v1/turns/{id} shows a turn's
// record within the caller's tenant, GET /v1/questions and POST
// /v1/questions/{id} show and answer what a running turn asks the caller
// (an MCP server's sampling or elicitation request), GET /v1/approvals and
// POST /v1/approvals/{id} list and decide the actions waiting for the
// caller's role, GET /v1/me tells the caller who they are (language, time
// zone, scopes, the largest message), the configured tools' reads (the
// task board's GET /v1/board and GET /v1/board/cards/{id}) show their
// data, GET /healthz answers liveness.
//
// It turns requests into chat.Inbound and replies into JSON; it knows
// nothing of models, tools or stores beyond the small functions it is given.
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/arbiterhq/arbiter/channel/internal/keyring"
	"github.com/arbiterhq/arbiter/channel/internal/questions"
	"github.com/arbiterhq/arbiter/chat"
)

// DefaultMaxBodyBytes bounds a request body.
const DefaultMaxBodyBytes = 64 << 10

// DefaultMaxFileBytes bounds the body of a message that carries files: a
// 20 MB PDF in base64 and the rest of the message.
const DefaultMaxFileBytes = 28 << 20

// ErrTurnNotFound is what Config.Turn returns for an unknown turn id or a
// turn of another tenant.
var ErrTurnNotFound = errors.New("turn not found")

// Key binds an API token to the identity it authenticates.
type Key struct {
	Token    string
	Identity chat.Identity
}

// Config wires the HTTP channel.
type Config struct {
	Handler chat.Handler
	Keys    []Key
	// Turn returns a turn record (JSON) of tenant, or ErrTurnNotFound.
	Turn func(ctx context.Context, tenant, turnID string) (json.RawMessage, error)
	// Turns lists a tenant's turns, newest first; nil means the journal
	// cannot list (GET /v1/turns answers 501).
	Turns func(ctx context.Context, tenant string, q TurnQuery) ([]TurnSummary, error)
	// Approvals lists and decides actions waiting for approval; nil
	// means none are kept (GET and POST /v1/approvals answer 501).
	Approvals chat.Approver
	// Reads are the read-only endpoints of the configured tools' data
	// (the task board's GET /v1/board); without them those paths are 404.
	Reads        []Read
	MaxBodyBytes int64
	// MaxFileBytes bounds a message body with files (evidence data);
	// what is not file data stays under MaxBodyBytes. Default
	// DefaultMaxFileBytes.
	MaxFileBytes int64
	Logger       *slog.Logger
}

// Server is the HTTP channel. It is an http.Handler, safe for concurrent use.
type Server struct {
	cfg       Config
	keys      *keyring.Ring
	mux       *http.ServeMux
	questions *questions.Board
}

// New builds the channel.
func New(cfg Config) (*Server, error) {
	if cfg.Handler == nil || cfg.Turn == nil {
		return nil, errors.New("httpapi: Handler and Turn are required")
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxFileBytes <= 0 {
		cfg.MaxFileBytes = DefaultMaxFileBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	tokens := make([]string, len(cfg.Keys))
	for i, k := range cfg.Keys {
		tokens[i] = k.Token
	}
	ring, err := keyring.New(tokens)
	if err != nil {
		return nil, fmt.Errorf("httpapi: %w", err)
	}
	s := &Server{cfg: cfg, keys: ring, mux: http.NewServeMux(), questions: questions.New(nil)}
	s.mux.HandleFunc("POST /v1/messages", s.postMessage)
	s.mux.HandleFunc("GET /v1/turns/{id}", s.getTurn)
	s.mux.HandleFunc("GET /v1/turns", s.listTurns)
	s.mux.HandleFunc("GET /v1/questions", s.listQuestions)
	s.mux.HandleFunc("POST /v1/questions/{id}", s.answerQuestion)
	s.mux.HandleFunc("GET /v1/approvals", s.listApprovals)
	s.mux.HandleFunc("POST /v1/approvals/{id}", s.decideApproval)
	s.mux.HandleFunc("GET /v1/me", s.getMe)
	for _, rd := range cfg.Reads {
		if err := s.handleRead(rd); err != nil {
			return nil, err
		}
	}
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if allow := s.allowed(r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not allowed here; use "+strings.Join(allow, " or "))
			return
		}
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
	return s, nil
}

// allowed lists the methods the API serves r's path with.
func (s *Server) allowed(r *http.Request) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "/" && pattern != "" {
			out = append(out, m)
		}
	}
	return out
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, r)
}

func (s *Server) authenticate(r *http.Request) (chat.Identity, bool) {
	i, ok := s.keys.Find(keyring.Bearer(r))
	if !ok {
		return chat.Identity{}, false
	}
	return s.cfg.Keys[i].Identity, true
}

// caller authenticates the request, answering 401 when it cannot.
func (s *Server) caller(w http.ResponseWriter, r *http.Request) (chat.Identity, bool) {
	id, ok := s.authenticate(r)
	if !ok {
		writeError(w, http.StatusUnauthorized, "unauthorized", "missing or unknown bearer token")
	}
	return id, ok
}

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request) {
	id, ok := s.caller(w, r)
	if !ok {
		return
	}
	body := &countingReader{r: http.MaxBytesReader(w, r.Body, max(s.cfg.MaxBodyBytes, s.cfg.MaxFileBytes))}
	req, err := DecodeMessage(body)
	if err == nil && body.n-req.fileBytes() > s.cfg.MaxBodyBytes {
		err = &http.MaxBytesError{Limit: s.cfg.MaxBodyBytes} // files may be large, the rest may not
	}
	if err != nil {
		s.writeBodyError(w, err)
		return
	}
	if (len(req.Context) > 0 || req.CloseCase) && !id.HasScope(chat.ScopeContextBind) {
		writeError(w, http.StatusForbidden, "forbidden", "binding a conversation to a case (context, close_case) needs a key with the scope context:bind")
		return
	}
	in := chat.Inbound{
		Identity:  id,
		Chat:      req.ConversationID,
		MessageID: req.MessageID,
		Text:      req.Text,
		Button:    req.Button,
		Evidence:  req.evidence(),
		Case:      req.Context,
		CloseCase: req.CloseCase,
		Client:    req.Client,
		Channel:   "http",
	}
	live := httpLive{board: s.questions, owner: questionOwner(id), conversation: req.ConversationID}
	if wantsStream(r) {
		s.streamTurn(w, r, in, live)
		return
	}
	in.Live = live
	out, err := s.cfg.Handler.HandleTurn(r.Context(), in)
	if err != nil {
		status, code, msg := s.turnError(in, err)
		if status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		writeError(w, status, code, msg)
		return
	}
	writeJSON(w, http.StatusOK, replyBody(out))
}

// turnError is the answer to a turn that returned no reply.
func (s *Server) turnError(in chat.Inbound, err error) (status int, code, msg string) {
	if errors.Is(err, chat.ErrCaseConflict) {
		return http.StatusConflict, "case_conflict", err.Error()
	}
	// No reply was possible (lock wait, store down); nothing was
	// committed for this message, so a retry is safe.
	s.cfg.Logger.Warn("turn failed", "tenant", in.Identity.TenantID, "user", in.Identity.UserID, "conversation", in.Chat, "err", err)
	return http.StatusServiceUnavailable, "unavailable", "the message could not be processed now; retry with the same message_id"
}

// replyBody is a reply as the API shows it: lists empty, never null.
func replyBody(out chat.Outbound) chat.Outbound {
	if out.Buttons == nil {
		out.Buttons = []chat.Button{}
	}
	if out.Executed == nil {
		out.Executed = []chat.Execution{}
	}
	if out.Actions == nil {
		out.Actions = []chat.ActionLine{}
	}
	if out.Approvals == nil {
		out.Approvals = []chat.ApprovalRef{}
	}
	return out
}

func (s *Server) getTurn(w http.ResponseWriter, r *http.Request) {
	id, ok := s.caller(w, r)
	if !ok {
		return
	}
	turnID := r.PathValue("id")
	rec, err := s.cfg.Turn(r.Context(), id.TenantID, turnID)
	if err == nil && !id.HasScope(chat.ScopeTurnsReadAll) {
		// Another user's turn reads as missing, as another tenant's does.
		var owner struct {
			UserID string `json:"user_id"`
		}
		if json.Unmarshal(rec, &owner) != nil || owner.UserID != id.UserID {
			err = ErrTurnNotFound
		}
	}
	switch {
	case errors.Is(err, ErrTurnNotFound):
		writeError(w, http.StatusNotFound, "not_found", "no turn "+turnID)
	case err != nil:
		s.cfg.Logger.Warn("read turn", "turn", turnID, "err", err)
		writeUnavailable(w, "the journal is unavailable; retry later")
	default:
		if !id.HasScope(chat.ScopeTurnsReadAll) {
			rec = hideReasoning(rec)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(rec)
	}
}

// writeBodyError answers a body that could not be read: 413 over the
// size limit, else 400 with the reason.
func (s *Server) writeBodyError(w http.ResponseWriter, err error) {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", "request body is larger than "+strconv.FormatInt(s.cfg.MaxBodyBytes, 10)+
			" bytes (with files in evidence data: "+strconv.FormatInt(s.cfg.MaxFileBytes, 10)+" bytes)")
		return
	}
	writeError(w, http.StatusBadRequest, "bad_request", err.Error())
}

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	var b errorBody
	b.Error.Code, b.Error.Message = code, msg
	writeJSON(w, status, b)
}

// writeUnavailable answers 503 with msg: a store the answer needs failed,
// and a retry a second later may find it back.
func writeUnavailable(w http.ResponseWriter, msg string) {
	w.Header().Set("Retry-After", "1")
	writeError(w, http.StatusServiceUnavailable, "unavailable", msg)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
