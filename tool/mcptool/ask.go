package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/tool"
)

// DefaultAskTimeout bounds the wait for the user's answer to a sampling or
// elicitation request.
const DefaultAskTimeout = 60 * time.Second

// SampleRequest is a server's sampling/createMessage request, approved by
// the user, as the engine's model is asked to complete it.
type SampleRequest struct {
	Server       string
	Caller       tool.Caller
	SystemPrompt string
	Messages     []SampleMessage
	MaxTokens    int
	Temperature  float64
}

// SampleMessage is one message of a SampleRequest; content other than
// text is described, not passed.
type SampleMessage struct {
	Role string // "user" or "assistant"
	Text string
}

// SampleResult is the model's completion of a SampleRequest.
type SampleResult struct {
	Text  string
	Model string
}

// Answer values of the questions this package asks.
const (
	choiceAccept  = "accept"
	choiceDecline = "decline"
	choiceCancel  = "cancel"
	choiceSkip    = "skip"
)

// maxFields bounds the fields of a form the user is asked one by one.
const maxFields = 20

// errRejected is the protocol's answer to a sampling request the user
// did not approve (code -1, as the specification's example).
var errRejected = &jsonrpc.Error{Code: -1, Message: "the user rejected the sampling request"}

// callFor finds the call a server's request belongs to: the call whose
// progress token the request carries, or else the only call in flight. A
// request that cannot be tied to exactly one call is refused: asking the
// wrong user would be worse than asking nobody.
func (s *Server) callFor(token any) *progressLog {
	if tok, ok := token.(string); ok {
		if v, ok := s.progress.Load(tok); ok {
			return v.(*progressLog)
		}
	}
	var only *progressLog
	n := 0
	s.progress.Range(func(_, v any) bool {
		only = v.(*progressLog)
		n++
		return n < 2
	})
	if n != 1 {
		return nil
	}
	return only
}

// ask shows q to the user of call pl and waits, bounded by AskTimeout,
// the call itself and the server's request (hctx).
func (s *Server) ask(hctx context.Context, pl *progressLog, q chat.Question) (chat.Answer, error) {
	if pl.session == nil {
		return chat.Answer{}, chat.ErrNoLive
	}
	ctx, cancel := s.whileCalling(hctx, pl, s.cfg.AskTimeout)
	defer cancel()
	return pl.session.Ask(ctx, q)
}

// whileCalling is a context of the server's request hctx that also ends
// with call pl, and after timeout.
func (s *Server) whileCalling(hctx context.Context, pl *progressLog, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(hctx, timeout)
	go func() {
		select {
		case <-pl.ended:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// onSample handles sampling/createMessage: the user sees the request and
// approves or declines it; only then does the engine's model complete it.
func (s *Server) onSample(hctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	p := req.Params
	if p == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing params"}
	}
	pl := s.callFor(p.GetProgressToken())
	if pl == nil {
		s.log.Warn("mcp sampling request refused: it cannot be tied to one call")
		return nil, errRejected
	}
	sr := SampleRequest{Server: s.cfg.Name, Caller: pl.caller, SystemPrompt: p.SystemPrompt,
		MaxTokens: int(p.MaxTokens), Temperature: p.Temperature}
	for _, m := range p.Messages {
		if m == nil {
			continue
		}
		items := contentItems([]mcp.Content{m.Content})
		text := joinText(items)
		if text == "" && len(items) > 0 {
			text = "[" + items[0].Type + "]"
		}
		sr.Messages = append(sr.Messages, SampleMessage{Role: string(m.Role), Text: text})
	}
	lang := pl.caller.Language
	a, err := s.ask(hctx, pl, chat.Question{
		Text: fmt.Sprintf(txt(lang, txtSampling), s.cfg.Name, pl.tool, sr.MaxTokens, samplingExcerpt(sr)),
		Choices: []chat.Button{
			{Label: txt(lang, txtAllow), Value: choiceAccept},
			{Label: txt(lang, txtDecline), Value: choiceDecline},
		},
	})
	if err != nil || a.Choice != choiceAccept {
		s.log.Info("mcp sampling request not approved", "tool", pl.tool, "choice", a.Choice, "err", err)
		return nil, errRejected
	}
	sample := s.cfg.Sample
	if sample == nil {
		sample = sessionSampler(pl.session)
	}
	sctx, cancel := s.whileCalling(hctx, pl, s.cfg.Timeout)
	defer cancel()
	res, err := sample(sctx, sr)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the model could not answer"}
	}
	return &mcp.CreateMessageResult{Content: &mcp.TextContent{Text: res.Text}, Model: res.Model,
		Role: "assistant", StopReason: "endTurn"}, nil
}

// maxSampleTokens caps what a server's sampling request may spend of the
// model, whatever it asks for.
const maxSampleTokens = 1000

// sessionSampler answers approved sampling requests with the model of the
// call's session — the turn's, so the call is journaled and costed there.
func sessionSampler(session tool.Session) func(ctx context.Context, req SampleRequest) (SampleResult, error) {
	return func(ctx context.Context, req SampleRequest) (SampleResult, error) {
		var p llm.Provider
		if session != nil {
			p = session.Model()
		}
		if p == nil {
			return SampleResult{}, errors.New("no model is configured")
		}
		var msgs []llm.Message
		if req.SystemPrompt != "" {
			msgs = append(msgs, llm.Message{Role: llm.RoleSystem, Content: req.SystemPrompt})
		}
		for _, m := range req.Messages {
			role := llm.RoleUser
			if m.Role == "assistant" {
				role = llm.RoleAssistant
			}
			msgs = append(msgs, llm.Message{Role: role, Content: m.Text})
		}
		limit := req.MaxTokens
		if limit <= 0 || limit > maxSampleTokens {
			limit = maxSampleTokens
		}
		resp, err := p.Complete(ctx, llm.Request{Messages: msgs, MaxTokens: limit, Temperature: req.Temperature, Operation: "mcp_sampling"})
		if err != nil {
			return SampleResult{}, err
		}
		return SampleResult{Text: resp.Text, Model: resp.Model}, nil
	}
}

// samplingExcerpt is what the user reads of a sampling request.
func samplingExcerpt(sr SampleRequest) string {
	var b strings.Builder
	if sr.SystemPrompt != "" {
		b.WriteString("[system] " + cleanText(sr.SystemPrompt, 300) + "\n")
	}
	for _, m := range sr.Messages {
		b.WriteString("[" + m.Role + "] " + cleanText(m.Text, 600) + "\n")
	}
	return cutUTF8(strings.TrimRight(b.String(), "\n"), 1500)
}

// onElicit handles elicitation/create. A URL is shown, never opened; a
// form is approved first and then filled one field at a time. Whatever
// goes wrong — no channel, no answer in time, a request that cannot be
// tied to one call — ends as decline or cancel, never as made-up input.
func (s *Server) onElicit(hctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	p := req.Params
	if p == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing params"}
	}
	pl := s.callFor(p.GetProgressToken())
	if pl == nil {
		s.log.Warn("mcp elicitation refused: it cannot be tied to one call")
		return &mcp.ElicitResult{Action: choiceDecline}, nil
	}
	lang := pl.caller.Language
	endChoices := []chat.Button{{Label: txt(lang, txtDecline), Value: choiceDecline}, {Label: txt(lang, txtCancel), Value: choiceCancel}}
	if p.Mode == "url" {
		a, err := s.ask(hctx, pl, chat.Question{
			Text:    fmt.Sprintf(txt(lang, txtURL), s.cfg.Name, pl.tool, cleanText(p.Message, 500), cleanText(p.URL, 2000)),
			Choices: append([]chat.Button{{Label: txt(lang, txtDone), Value: choiceAccept}}, endChoices...),
		})
		return &mcp.ElicitResult{Action: outcome(a, err)}, nil
	}
	form, err := parseForm(p.RequestedSchema)
	if err != nil || len(form.fields) > maxFields {
		s.log.Warn("mcp elicitation declined: a form this channel cannot show", "tool", pl.tool, "err", err)
		return &mcp.ElicitResult{Action: choiceDecline}, nil
	}
	names := make([]string, len(form.fields))
	for i, f := range form.fields {
		names[i] = f.title
	}
	a, err := s.ask(hctx, pl, chat.Question{
		Text:    fmt.Sprintf(txt(lang, txtForm), s.cfg.Name, pl.tool, cleanText(p.Message, 500), strings.Join(names, ", ")),
		Choices: append([]chat.Button{{Label: txt(lang, txtFill), Value: choiceAccept}}, endChoices...),
	})
	if action := outcome(a, err); action != choiceAccept {
		return &mcp.ElicitResult{Action: action}, nil
	}
	content := map[string]any{}
	for _, f := range form.fields {
		v, action := s.askField(hctx, pl, f)
		if action != choiceAccept {
			return &mcp.ElicitResult{Action: action}, nil
		}
		if v != nil {
			content[f.name] = v
		}
	}
	return &mcp.ElicitResult{Action: choiceAccept, Content: content}, nil
}

// outcome maps an answer to an elicitation action: no answer is cancel.
func outcome(a chat.Answer, err error) string {
	if err != nil {
		return choiceCancel
	}
	switch a.Choice {
	case choiceAccept, choiceDecline:
		return a.Choice
	}
	return choiceCancel
}

// field is one property of an elicitation form.
type field struct {
	name, title, description string
	typ                      string // string, number, integer, boolean, array
	options                  []string
	required                 bool
	def                      any
	schema                   json.RawMessage
}

type form struct{ fields []field }

// parseForm reads the flat object schema of a form request (the SDK has
// checked that it is flat and typed). Fields come in name order: the
// order on the wire is lost in decoding.
func parseForm(schema any) (form, error) {
	raw, err := json.Marshal(schema)
	if err != nil {
		return form{}, err
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return form{}, err
	}
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	var f form
	for name, prop := range s.Properties {
		var p struct {
			Type        string                   `json:"type"`
			Title       string                   `json:"title"`
			Description string                   `json:"description"`
			Enum        []string                 `json:"enum"`
			OneOf       []struct{ Const string } `json:"oneOf"`
			Items       struct {
				Enum  []string                 `json:"enum"`
				AnyOf []struct{ Const string } `json:"anyOf"`
			} `json:"items"`
			Default any `json:"default"`
		}
		if err := json.Unmarshal(prop, &p); err != nil {
			return form{}, fmt.Errorf("field %s: %w", name, err)
		}
		fd := field{name: name, title: cleanText(p.Title, 80), description: cleanText(p.Description, 300), typ: p.Type,
			options: p.Enum, required: required[name], def: p.Default, schema: prop}
		if fd.title == "" {
			fd.title = cleanText(name, 80)
		}
		for _, o := range p.OneOf {
			fd.options = append(fd.options, o.Const)
		}
		if p.Type == "array" {
			fd.options = p.Items.Enum
			for _, o := range p.Items.AnyOf {
				fd.options = append(fd.options, o.Const)
			}
		}
		f.fields = append(f.fields, fd)
	}
	sort.Slice(f.fields, func(i, j int) bool { return f.fields[i].name < f.fields[j].name })
	return f, nil
}

// maxFieldTries bounds how often one field is asked again after an answer
// that does not fit.
const maxFieldTries = 3

// askField asks for one field until the answer fits its schema. It
// returns the value (nil for a skipped field) and accept, or the action
// that ends the form.
func (s *Server) askField(hctx context.Context, pl *progressLog, f field) (any, string) {
	lang := pl.caller.Language
	schema, err := compileOutput(f.schema)
	if err != nil {
		return nil, choiceDecline
	}
	text := "«" + f.title + "»"
	if f.description != "" {
		text += ": " + f.description
	}
	if f.def != nil {
		text += "\n" + fmt.Sprintf(txt(lang, txtDefault), fmt.Sprint(f.def))
	}
	q := chat.Question{Text: text}
	switch {
	case f.typ == "boolean":
		q.Choices = []chat.Button{{Label: txt(lang, txtTrue), Value: "=true"}, {Label: txt(lang, txtFalse), Value: "=false"}}
	case f.typ == "array":
		q.FreeText = true
		q.Text += "\n" + fmt.Sprintf(txt(lang, txtPickSeveral), strings.Join(f.options, ", "))
	case len(f.options) > 0 && len(f.options) <= 10:
		for _, o := range f.options {
			q.Choices = append(q.Choices, chat.Button{Label: cleanText(o, 40), Value: "=" + o})
		}
	default:
		q.FreeText = true
		if len(f.options) > 0 {
			q.Text += "\n" + fmt.Sprintf(txt(lang, txtPickOne), strings.Join(f.options, ", "))
		}
	}
	if !f.required {
		q.Choices = append(q.Choices, chat.Button{Label: txt(lang, txtSkip), Value: choiceSkip})
	}
	q.Choices = append(q.Choices, chat.Button{Label: txt(lang, txtCancel), Value: choiceCancel})
	base := q.Text
	for try := 0; try < maxFieldTries; try++ {
		a, err := s.ask(hctx, pl, q)
		if err != nil {
			return nil, choiceCancel
		}
		var raw string
		switch {
		case a.Choice == choiceSkip && !f.required:
			return nil, choiceAccept
		case strings.HasPrefix(a.Choice, "="):
			raw = strings.TrimPrefix(a.Choice, "=")
		case a.Choice == "" && q.FreeText:
			raw = strings.TrimSpace(a.Text)
		default:
			return nil, choiceCancel
		}
		v, ok := fieldValue(f, raw)
		if ok {
			b, _ := json.Marshal(v)
			problems := validateOutput(schema, b)
			if len(problems) == 0 {
				return v, choiceAccept
			}
			q.Text = fmt.Sprintf(txt(lang, txtRetry), problems[0].Message) + "\n" + base
			continue
		}
		q.Text = fmt.Sprintf(txt(lang, txtRetry), f.typ) + "\n" + base
	}
	return nil, choiceCancel
}

// fieldValue converts the user's answer to the field's type.
func fieldValue(f field, raw string) (any, bool) {
	switch f.typ {
	case "boolean":
		b, err := strconv.ParseBool(raw)
		return b, err == nil
	case "integer":
		n, err := strconv.ParseInt(raw, 10, 64)
		return n, err == nil
	case "number":
		n, err := strconv.ParseFloat(strings.Replace(raw, ",", ".", 1), 64)
		return n, err == nil
	case "array":
		var out []string
		for _, part := range strings.Split(raw, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
		return out, len(out) > 0
	}
	return raw, raw != ""
}
