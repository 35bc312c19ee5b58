package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbiterhq/arbiter/chat"
)

// Statuses of structuredContent for calls that ran no tool; a call that ran
// one has the executor's status ("ok", "error", "not_found", ...).
const (
	StatusRefused     = "refused"     // the engine refused the call (not granted, invalid arguments, ...)
	StatusDeclined    = "declined"    // the human said no or did not answer
	StatusUnconfirmed = "unconfirmed" // confirmation needed, the client cannot ask for it
	StatusFailed      = "failed"      // the engine could not process the call
)

// confirmKey names the input request that asks for the confirmation, and
// confirmField its one field.
const (
	confirmKey   = "confirm"
	confirmField = "confirm"
)

// mrtrVersion is the first protocol version in which the server may not
// send requests of its own while serving one: input is requested by
// returning it, and the client retries the call with the answers.
const mrtrVersion = "2026-07-28"

// cancelTimeout bounds the turn that cancels a pending action; it runs
// even when the client has gone.
const cancelTimeout = 30 * time.Second

// Texts of results that the engine did not write.
const (
	txtDeclined    = "The user declined; nothing was done."
	txtNoAnswer    = "The user did not confirm in time; nothing was done."
	txtAskFailed   = "The user could not be asked for confirmation (%v); nothing was done."
	txtUnconfirmed = "This action needs the user's confirmation, which this client cannot ask for; nothing was done."
	txtExpired     = "This confirmation is unknown, was already answered or has expired; nothing was done."
	txtNoConfirm   = "This action needs a confirmation that cannot be given here; nothing was done."
	txtFailed      = "arbiter could not process the call: %v. Nothing was committed; retry later."
)

// outcome is the structuredContent of every result.
type outcome struct {
	Status string          `json:"status"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// parked is a pending action waiting for a client that asks the human
// itself and retries the call with the answer (protocol 2026-07-28 on).
type parked struct {
	tool, chat, id string
	timer          *time.Timer
}

// call runs one tools/call as a turn of its own conversation, so parallel
// calls of one client never drop each other's pending confirmation.
func (s *Server) call(ctx context.Context, name string, req *mcp.CallToolRequest) *mcp.CallToolResult {
	lv := s.liveOf(req)
	if req.Params.RequestState != "" || len(req.Params.InputResponses) > 0 {
		return s.resume(ctx, lv, name, req.Params)
	}
	conv := s.prefix + strconv.FormatUint(s.seq.Add(1), 10)
	in := s.inbound(conv)
	args := req.Params.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	in.Call, in.Live = &chat.Call{Tool: name, Args: args}, lv
	out, err := s.cfg.Handler.HandleTurn(ctx, in)
	if err != nil {
		s.logger.Error("mcp: call failed", "tool", name, "conversation", conv, "error", err)
		return failure(StatusFailed, fmt.Sprintf(txtFailed, err))
	}
	if out.Pending == nil {
		return result(out)
	}
	id, ok := pendingID(out.Buttons)
	if !ok {
		return failure(StatusRefused, txtNoConfirm)
	}
	if !canElicit(req.ClientCapabilities()) {
		s.cancelPending(ctx, conv, id)
		return failure(StatusUnconfirmed, txtUnconfirmed)
	}
	ask := &mcp.ElicitParams{Mode: "form", Message: out.Say, RequestedSchema: confirmSchema}
	if req.ProtocolVersion() >= mrtrVersion {
		token, err := s.park(name, conv, id)
		if err != nil {
			s.cancelPending(ctx, conv, id)
			return failure(StatusDeclined, fmt.Sprintf(txtAskFailed, err))
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{confirmKey: ask}, RequestState: token}
	}
	// An older client answers a request of ours within this call.
	actx, cancel := context.WithTimeout(ctx, s.cfg.ConfirmTimeout)
	defer cancel()
	answer, err := req.Session.Elicit(actx, ask)
	if err != nil && actx.Err() != nil && ctx.Err() == nil {
		err = context.DeadlineExceeded
	}
	return s.settle(ctx, lv, conv, id, answer, err)
}

// resume is the retry of a call whose confirmation the client asked for:
// the answer decides the action parked under the request state. The state
// is a random one-time token held here, so a client cannot point an answer
// at another action or answer twice.
func (s *Server) resume(ctx context.Context, lv chat.Live, name string, p *mcp.CallToolParamsRaw) *mcp.CallToolResult {
	s.mu.Lock()
	w, ok := s.parked[p.RequestState]
	if ok {
		delete(s.parked, p.RequestState)
		w.timer.Stop()
	}
	s.mu.Unlock()
	if !ok {
		return failure(StatusDeclined, txtExpired)
	}
	if w.tool != name {
		s.cancelPending(ctx, w.chat, w.id)
		return failure(StatusDeclined, txtExpired)
	}
	answer, _ := p.InputResponses[confirmKey].(*mcp.ElicitResult)
	var err error
	if answer == nil {
		err = errors.New("no answer in the retried call")
	}
	return s.settle(ctx, lv, w.chat, w.id, answer, err)
}

// settle confirms the pending action only on an explicit yes; every other
// answer, an error or silence cancels it.
func (s *Server) settle(ctx context.Context, lv chat.Live, conv, id string, answer *mcp.ElicitResult, askErr error) *mcp.CallToolResult {
	if askErr == nil && answer != nil && answer.Action == "accept" && answer.Content[confirmField] == true {
		in := s.inbound(conv)
		in.Button, in.Live = "confirm:"+id, lv
		out, err := s.cfg.Handler.HandleTurn(ctx, in)
		if err != nil {
			s.logger.Error("mcp: confirmation failed", "conversation", conv, "error", err)
			return failure(StatusFailed, fmt.Sprintf(txtFailed, err))
		}
		if out.Pending != nil {
			// Never a second round of asking for one call.
			s.cancelPending(ctx, conv, id)
			return failure(StatusRefused, txtNoConfirm)
		}
		return result(out)
	}
	s.cancelPending(ctx, conv, id)
	switch {
	case errors.Is(askErr, context.DeadlineExceeded):
		return failure(StatusDeclined, txtNoAnswer)
	case askErr != nil:
		s.logger.Warn("mcp: asking for confirmation failed", "conversation", conv, "error", askErr)
		return failure(StatusDeclined, fmt.Sprintf(txtAskFailed, askErr))
	}
	return failure(StatusDeclined, txtDeclined)
}

// park keeps a pending action for the client's retry and cancels it when
// no answer comes within the confirmation timeout.
func (s *Server) park(tool, conv, id string) (string, error) {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	token := hex.EncodeToString(raw[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", errors.New("the server is closing")
	}
	s.parked[token] = &parked{tool: tool, chat: conv, id: id, timer: time.AfterFunc(s.cfg.ConfirmTimeout, func() {
		s.mu.Lock()
		w, ok := s.parked[token]
		delete(s.parked, token)
		s.mu.Unlock()
		if ok {
			s.cancelPending(context.Background(), w.chat, w.id)
		}
	})}
	return token, nil
}

// cancelPending presses the pending action's "no" in its conversation. It
// outlives a cancelled request: a client that hangs up must not leave the
// action waiting.
func (s *Server) cancelPending(ctx context.Context, conv, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer cancel()
	in := s.inbound(conv)
	in.Button = "cancel:" + id
	if _, err := s.cfg.Handler.HandleTurn(ctx, in); err != nil {
		// The engine's own expiry still ends the action.
		s.logger.Warn("mcp: cancelling a pending action failed", "conversation", conv, "error", err)
	}
}

func (s *Server) inbound(conv string) chat.Inbound {
	return chat.Inbound{Identity: s.cfg.Identity, Chat: conv, Channel: Channel}
}

// result maps a reply that needs no confirmation: an execution, or a
// refusal explained by Say.
func result(out chat.Outbound) *mcp.CallToolResult {
	if len(out.Executed) == 0 {
		return failure(StatusRefused, out.Say)
	}
	ex := out.Executed[len(out.Executed)-1]
	text := out.Say
	if text == "" {
		text = ex.Status
		if ex.Error != "" {
			text += ": " + ex.Error
		}
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: text}},
		StructuredContent: outcome{Status: ex.Status, Result: ex.Result, Error: ex.Error},
		IsError:           ex.Status != "ok",
	}
}

func failure(status, text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: text}},
		StructuredContent: outcome{Status: status, Error: text},
		IsError:           true,
	}
}

// pendingID takes the action's id from its confirm button.
func pendingID(buttons []chat.Button) (string, bool) {
	for _, b := range buttons {
		if id, ok := strings.CutPrefix(b.Value, "confirm:"); ok && id != "" {
			return id, true
		}
	}
	return "", false
}

// canElicit reports whether the client can show a form to its user.
func canElicit(caps *mcp.ClientCapabilities) bool {
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	e := caps.Elicitation
	// Neither mode named means form, as before modes existed.
	return e.Form != nil || e.URL == nil
}

// confirmSchema is the form shown with the server's confirmation text: one
// yes/no field.
var confirmSchema = json.RawMessage(`{"type":"object","properties":{"confirm":{"type":"boolean","title":"Confirm","description":"Run the action described above"}},"required":["confirm"]}`)
