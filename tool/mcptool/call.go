package mcptool

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/tool"
)

// Outcomes recorded in AuditRecord.Outcome and Data.audit.outcome.
const (
	OutcomeOK             = "ok"
	OutcomeToolError      = "tool_error"      // the tool ran and reported isError
	OutcomeInvalidOutput  = "invalid_output"  // structured content does not fit the outputSchema
	OutcomeTimeout        = "timeout"         // cancelled by our timeout; the server may have acted
	OutcomeCancelled      = "cancelled"       // the caller's context ended
	OutcomeRateLimited    = "rate_limited"    // refused by a token bucket; nothing was sent
	OutcomeInvalidArgs    = "invalid_args"    // refused by the input schema; nothing was sent
	OutcomeNotPermitted   = "not_permitted"   // the caller's role may not run the tool
	OutcomeUnknownTool    = "unknown_tool"    // not (or no longer) a visible tool
	OutcomeUnavailable    = "unavailable"     // no session; nothing was sent
	OutcomeRefused        = "refused"         // the server answered with a protocol error
	OutcomeTransportError = "transport_error" // the connection failed mid-call; outcome unknown
)

// AuditRecord describes one call, refused ones included.
type AuditRecord struct {
	Server     string        `json:"server"`
	Tool       string        `json:"tool"` // the server's name for the tool
	TenantID   string        `json:"tenant_id"`
	UserID     string        `json:"user_id"`
	ArgsSHA256 string        `json:"args_sha256"` // of the canonical (key-sorted) arguments
	Start      time.Time     `json:"start"`
	Duration   time.Duration `json:"duration"`
	Status     tool.Status   `json:"status"`
	Outcome    string        `json:"outcome"`
	Progress   int           `json:"progress"` // progress notifications received
}

// Progress is one progress notification of a call in flight.
type Progress struct {
	Server   string
	Tool     string
	Caller   tool.Caller
	Progress float64
	Total    float64 // zero when unknown
	Message  string
	At       time.Time
}

// maxProgress bounds the progress updates kept in a result (the latest).
const maxProgress = 20

type progressEntry struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

type progressLog struct {
	server, tool string
	caller       tool.Caller
	// session is the call's (nil outside a turn); ended closes when the
	// call's context ends, which also ends what it asked.
	session tool.Session
	ended   <-chan struct{}
	mu      sync.Mutex
	entries []progressEntry
	count   int
	done    bool // the call returned: later notifications are dropped
}

// finish ends the log: it returns what was received, and no update
// reaches the channel after it returns.
func (p *progressLog) finish() ([]progressEntry, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = true
	return append([]progressEntry(nil), p.entries...), p.count
}

func (s *Server) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if req == nil || req.Params == nil {
		return
	}
	tok, ok := req.Params.ProgressToken.(string)
	if !ok {
		return
	}
	v, ok := s.progress.Load(tok)
	if !ok {
		return // unknown token or a call that already returned
	}
	pl := v.(*progressLog)
	e := progressEntry{Progress: req.Params.Progress, Total: req.Params.Total, Message: cleanText(req.Params.Message, 200)}
	// Held while the update is passed on (both receivers must not block),
	// so none arrives after the call returned and its trace was sealed.
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.done {
		return
	}
	pl.count++
	pl.entries = append(pl.entries, e)
	if len(pl.entries) > maxProgress {
		pl.entries = pl.entries[len(pl.entries)-maxProgress:]
	}
	if pl.session != nil {
		pl.session.Progress(chat.Progress{Done: e.Progress, Total: e.Total, Message: e.Message})
	}
	if s.cfg.OnProgress != nil {
		s.cfg.OnProgress(Progress{Server: pl.server, Tool: pl.tool, Caller: pl.caller,
			Progress: e.Progress, Total: e.Total, Message: e.Message, At: s.cfg.Now()})
	}
}

// contentItem is one content block of a result, as evidence: text in
// full, binary data described rather than included.
type contentItem struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	MIMEType string `json:"mime_type,omitempty"`
	Bytes    int    `json:"bytes,omitempty"`
	URI      string `json:"uri,omitempty"`
	Name     string `json:"name,omitempty"`
}

type auditData struct {
	ArgsSHA256 string `json:"args_sha256"`
	DurationMS int64  `json:"duration_ms"`
	Outcome    string `json:"outcome"`
}

// resultData is the Data of every result of this package.
type resultData struct {
	Server          string          `json:"server"`
	Tool            string          `json:"tool"`
	Content         []contentItem   `json:"content,omitempty"`
	Structured      json.RawMessage `json:"structured,omitempty"`
	Problems        []tool.Problem  `json:"problems,omitempty"`
	Progress        []progressEntry `json:"progress,omitempty"`
	ProgressDropped int             `json:"progress_dropped,omitempty"`
	Limit           string          `json:"limit,omitempty"` // "user" or "tool" for rate_limited
	RetryAfterMS    int64           `json:"retry_after_ms,omitempty"`
	// Text and OriginalBytes replace Content and Structured when the
	// data was cut to the size limit.
	Text          string    `json:"text,omitempty"`
	Truncated     bool      `json:"truncated,omitempty"`
	OriginalBytes int       `json:"original_bytes,omitempty"`
	Audit         auditData `json:"audit"`
}

// invocation is one call in progress.
type invocation struct {
	s      *Server
	tg     *target
	caller tool.Caller
	args   []byte
	start  time.Time
	data   resultData
}

// invoke runs one call of tg for call.Caller with call.Args. It never
// returns a Go error: every outcome is a Result.
func (s *Server) invoke(ctx context.Context, tg *target, call tool.Call) tool.Result {
	args := []byte(call.Args)
	if len(bytes.TrimSpace(args)) == 0 {
		args = []byte("{}")
	}
	inv := &invocation{s: s, tg: tg, caller: call.Caller, args: args, start: s.cfg.Now()}
	inv.data = resultData{Server: s.cfg.Name, Tool: tg.info.Name, Audit: auditData{ArgsSHA256: argsHash(args)}}

	if s.isClosed() {
		return inv.fail(OutcomeUnavailable, "the MCP server connection is closed; nothing was sent")
	}
	if !roleAllowed(tg.roles, call.Caller.Role) {
		return inv.fail(OutcomeNotPermitted, "this tool is not available to the caller's role; nothing was sent")
	}
	if err := tg.input.Validate(tg.info.Resolved, args); err != nil {
		var ae *tool.ArgsError
		if errors.As(err, &ae) {
			inv.data.Problems = ae.Problems
		}
		return inv.fail(OutcomeInvalidArgs, err.Error()+"; nothing was sent")
	}
	if limit, after := s.limiter.allow(call.Caller.TenantID+"\x00"+call.Caller.UserID, s.cfg.RateLimits.PerUser,
		tg.info.Name, tg.rate, s.cfg.Now()); limit != "" {
		inv.data.Limit = limit
		inv.data.RetryAfterMS = max(after.Milliseconds(), 1)
		return inv.fail(OutcomeRateLimited, fmt.Sprintf("rate limited (%s limit); retry after %s; nothing was sent", limit, after.Round(time.Millisecond)))
	}
	sess := s.current()
	if sess == nil {
		return inv.fail(OutcomeUnavailable, "the MCP server is not connected (reconnecting); nothing was sent")
	}

	token := s.cfg.Name + "-" + strconv.FormatUint(s.nextToken.Add(1), 10)
	cctx, cancel := context.WithTimeout(ctx, tg.spec.Timeout)
	defer cancel()
	pl := &progressLog{server: s.cfg.Name, tool: tg.info.Name, caller: call.Caller, session: call.Session, ended: cctx.Done()}
	s.progress.Store(token, pl)
	defer s.progress.Delete(token)
	params := &mcp.CallToolParams{Name: tg.info.Name, Arguments: json.RawMessage(args)}
	params.SetProgressToken(token)
	res, err := sess.CallTool(cctx, params)
	inv.data.Progress, inv.data.ProgressDropped = pl.finish()
	inv.data.ProgressDropped -= len(inv.data.Progress)

	if err != nil {
		var werr *jsonrpc.Error
		switch {
		case cctx.Err() != nil && ctx.Err() == nil, errors.Is(ctx.Err(), context.DeadlineExceeded):
			return inv.fail(OutcomeTimeout, fmt.Sprintf("timed out after %s; the server was told to cancel but may already have acted", tg.spec.Timeout))
		case ctx.Err() != nil:
			return inv.fail(OutcomeCancelled, "cancelled; the server was told to cancel but may already have acted")
		case errors.As(err, &werr):
			return inv.fail(OutcomeRefused, "the server refused the call: "+cleanText(werr.Message, 300))
		default:
			s.log.Warn("mcp call failed on the connection", "tool", tg.info.Name, "err", err)
			s.dropSession(sess)
			return inv.fail(OutcomeTransportError, "the connection to the MCP server failed during the call; its outcome is unknown")
		}
	}
	return inv.finish(res)
}

// finish turns a CallToolResult into a Result.
func (inv *invocation) finish(res *mcp.CallToolResult) tool.Result {
	if res == nil {
		return inv.fail(OutcomeRefused, "the server returned no result")
	}
	inv.data.Content = contentItems(res.Content)
	text := joinText(inv.data.Content)
	if res.IsError {
		msg := "the tool reported an error"
		if text != "" {
			msg += ": " + cleanText(text, 300)
		}
		return inv.result(tool.StatusError, OutcomeToolError, msg, "")
	}
	var structured []byte
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			inv.data.Content = nil
			return inv.result(tool.StatusError, OutcomeInvalidOutput, "the structured content cannot be encoded", "")
		}
		structured = b
	}
	if inv.tg.output != nil {
		if structured == nil {
			return inv.result(tool.StatusError, OutcomeInvalidOutput, "the tool declares an output schema but returned no structured content", "")
		}
		if problems := validateOutput(inv.tg.output, structured); len(problems) > 0 {
			inv.data.Problems = problems
			inv.data.Content = nil // the text usually mirrors the invalid structure
			return inv.result(tool.StatusError, OutcomeInvalidOutput, "the structured content does not match the tool's output schema", "")
		}
	}
	inv.data.Structured = structured
	if text == "" && structured != nil {
		text = string(structured)
	}
	return inv.result(tool.StatusOK, OutcomeOK, "", cleanText(text, 1000))
}

func (inv *invocation) fail(outcome, msg string) tool.Result {
	return inv.result(tool.StatusError, outcome, msg, "")
}

// result encodes the data under the size cap, records the audit and
// builds the Result.
func (inv *invocation) result(status tool.Status, outcome, errMsg, text string) tool.Result {
	end := inv.s.cfg.Now()
	dur := end.Sub(inv.start)
	inv.data.Audit.DurationMS = dur.Milliseconds()
	inv.data.Audit.Outcome = outcome
	progress := len(inv.data.Progress) + inv.data.ProgressDropped
	data := capData(inv.data, inv.tg.spec.MaxResultBytes)
	if inv.s.cfg.Audit != nil {
		inv.s.cfg.Audit(AuditRecord{
			Server: inv.s.cfg.Name, Tool: inv.tg.info.Name, TenantID: inv.caller.TenantID, UserID: inv.caller.UserID,
			ArgsSHA256: inv.data.Audit.ArgsSHA256, Start: inv.start, Duration: dur, Status: status,
			Outcome: outcome, Progress: progress,
		})
	}
	return tool.Result{Status: status, Data: data, Text: text, Error: errMsg, Source: inv.tg.info.Resolved, ObservedAt: end}
}

// capData encodes d within limit bytes. Too large data keeps its
// metadata, loses content and structure, and carries as much of the text
// as fits.
func capData(d resultData, limit int) json.RawMessage {
	b := mustJSON(d)
	if len(b) <= limit {
		return b
	}
	text := joinText(d.Content)
	if text == "" && len(d.Structured) > 0 {
		text = string(d.Structured)
	}
	cut := resultData{Server: d.Server, Tool: d.Tool, Problems: d.Problems, Limit: d.Limit,
		RetryAfterMS: d.RetryAfterMS, Truncated: true, OriginalBytes: len(b), Audit: d.Audit}
	if n := len(d.Progress); n > 0 {
		cut.Progress = d.Progress[n-1:]
		cut.ProgressDropped = d.ProgressDropped + n - 1
	}
	if len(cut.Problems) > 5 {
		cut.Problems = cut.Problems[:5]
	}
	base := len(mustJSON(cut))
	budget := limit - base - 8
	for budget > 0 {
		cut.Text = cutUTF8(text, budget)
		if b := mustJSON(cut); len(b) <= limit {
			return b
		}
		budget = budget * 3 / 4 // escapes made it longer; try less
	}
	cut.Text = ""
	return mustJSON(cut)
}

func mustJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte(`{"error":"result cannot be encoded"}`)
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && !isRuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

func contentItems(content []mcp.Content) []contentItem {
	out := make([]contentItem, 0, len(content))
	for _, c := range content {
		switch c := c.(type) {
		case *mcp.TextContent:
			out = append(out, contentItem{Type: "text", Text: c.Text})
		case *mcp.ImageContent:
			out = append(out, contentItem{Type: "image", MIMEType: c.MIMEType, Bytes: len(c.Data)})
		case *mcp.AudioContent:
			out = append(out, contentItem{Type: "audio", MIMEType: c.MIMEType, Bytes: len(c.Data)})
		case *mcp.ResourceLink:
			out = append(out, contentItem{Type: "resource_link", URI: c.URI, Name: c.Name, MIMEType: c.MIMEType})
		case *mcp.EmbeddedResource:
			it := contentItem{Type: "resource"}
			if r := c.Resource; r != nil {
				it.URI, it.MIMEType, it.Text, it.Bytes = r.URI, r.MIMEType, r.Text, len(r.Blob)
			}
			out = append(out, it)
		case nil:
		default:
			out = append(out, contentItem{Type: "unsupported"})
		}
	}
	return out
}

func joinText(items []contentItem) string {
	var parts []string
	for _, it := range items {
		if it.Type == "text" && it.Text != "" {
			parts = append(parts, it.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// validateOutput checks structured content against an output schema and
// returns the failures.
func validateOutput(schema *jsonschema.Schema, structured []byte) []tool.Problem {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(structured))
	if err != nil {
		return []tool.Problem{{Message: "structured content is not valid JSON"}}
	}
	err = schema.Validate(doc)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []tool.Problem{{Message: err.Error()}}
	}
	var out []tool.Problem
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := ""
			for _, part := range e.InstanceLocation {
				loc += "/" + tool.PointerToken(part)
			}
			out = append(out, tool.Problem{Location: loc, Message: e.ErrorKind.LocalizedString(printer)})
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return out
}

var printer = message.NewPrinter(language.English)

// argsHash is the SHA-256 of the arguments re-encoded with sorted keys, so
// equal arguments hash equally whatever their key order.
func argsHash(args []byte) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	canon := args
	if dec.Decode(&v) == nil {
		if b, err := json.Marshal(v); err == nil {
			canon = b
		}
	}
	h := sha256.Sum256(canon)
	return hex.EncodeToString(h[:])
}
