package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/arbiterhq/arbiter/internal/jsonstr"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/internal/wire"
)

// The request body is written here rather than through the SDK's params
// types: the system prompt, the decision schema and the tool catalog are
// the same bytes on every call, so they are encoded once and copied
// afterwards, while the SDK's encoder walks and re-marshals every nested
// level on every call (see BenchmarkEncodeBody). The body is a fresh slice per
// call, never pooled: the HTTP transport may still read a request body
// after the response has arrived. The schema and tool caches keep a
// private copy of what they encoded and compare it on every hit, since
// their keys are identities (a pointer, a backing array) whose contents
// may have changed since.

// encodeBody writes req as a Messages API request body for protocol;
// forced means the decision tool is sent and forced.
func (p *Provider) encodeBody(req *llm.Request, protocol llm.Protocol, forced bool) ([]byte, error) {
	var toolsPart []byte
	var err error
	switch {
	case protocol == llm.ProtocolTools:
		toolsPart, err = p.tools.Get(wire.ToolsKeyOf(req.Tools),
			func(src []llm.ToolDef) bool { return sameTools(src, req.Tools) },
			func() ([]llm.ToolDef, []byte, error) { return p.encodeTools(req.Tools) })
	case forced:
		s := req.Schema
		doc := s.JSON
		if len(doc) == 0 {
			doc = s.Strict
		}
		toolsPart, err = p.schemas.Get(s,
			func(src []byte) bool { return bytes.Equal(src, doc) },
			func() ([]byte, []byte, error) { return p.encodeDecision(doc) })
	}
	if err != nil {
		return nil, err
	}

	b := make([]byte, 0, p.sizeHint.Load()+64)
	b = append(b, `{"model":`...)
	b = append(b, p.modelJSON...)
	b = append(b, `,"max_tokens":`...)
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = p.maxTokens
	}
	b = strconv.AppendInt(b, int64(maxTokens), 10)
	if p.temperature {
		b = append(b, `,"temperature":`...)
		b = strconv.AppendFloat(b, req.Temperature, 'g', -1, 64)
	}

	if err := llm.CheckMessages(req.Messages); err != nil {
		return nil, p.newError(llm.ErrBadRequest, err.Error(), err)
	}
	// System messages, in order, as text blocks; the last one carries the
	// cache breakpoint.
	last := -1
	for i := range req.Messages {
		if m := &req.Messages[i]; m.Role == llm.RoleSystem && !isBlank(m.Content) {
			last = i
		}
	}
	if last >= 0 {
		b = append(b, `,"system":[`...)
		first := true
		for i, m := range req.Messages[:last+1] {
			if m.Role != llm.RoleSystem || isBlank(m.Content) {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, `{"type":"text","text":`...)
			if len(m.Content) >= wire.CacheMinLen {
				enc, _ := p.system.Get(m.Content, nil,
					func() (struct{}, []byte, error) { return struct{}{}, jsonstr.Append(nil, m.Content), nil })
				b = append(b, enc...)
			} else {
				b = jsonstr.Append(b, m.Content)
			}
			if i == last {
				b = append(b, `,"cache_control":{"type":"ephemeral"}`...)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}

	// User and assistant messages, consecutive ones of a role merged; a
	// tool result is a tool_result block of a user message, and the API
	// wants those first in theirs, which holds since a tool message only
	// follows the assistant's calls or another tool message.
	b = append(b, `,"messages":[`...)
	role := ""
	for i := range req.Messages {
		m := &req.Messages[i]
		if m.Role == llm.RoleSystem || (isBlank(m.Content) && m.Role != llm.RoleTool && len(m.ToolCalls) == 0) {
			continue
		}
		wireRole := m.Role
		if wireRole == llm.RoleTool {
			wireRole = llm.RoleUser
		}
		switch {
		case wireRole == role:
			b = append(b, ',')
		default:
			if role != "" {
				b = append(b, "]},"...)
			}
			b = append(b, `{"role":"`...)
			b = append(b, wireRole...)
			b = append(b, `","content":[`...)
		}
		role = wireRole
		switch {
		case m.Role == llm.RoleTool:
			b = appendToolResult(b, m)
		default:
			if !isBlank(m.Content) {
				b = append(b, `{"type":"text","text":`...)
				if len(m.Images) > 0 && !p.images {
					b = jsonstr.Append(b, m.Content+llm.ImagesLeftOut)
				} else {
					b = jsonstr.Append(b, m.Content)
				}
				b = append(b, '}')
				if len(m.ToolCalls) > 0 {
					b = append(b, ',')
				}
			}
			if p.images && m.Role == llm.RoleUser {
				b = appendImages(b, m.Images)
			}
			b = appendToolUses(b, m.ToolCalls)
		}
		if m.Cache && b[len(b)-1] == '}' {
			// The breakpoint goes on the message's last block.
			b = append(b[:len(b)-1], `,"cache_control":{"type":"ephemeral"}}`...)
		}
	}
	if role == "" {
		return nil, p.newError(llm.ErrBadRequest, "request has no user or assistant message with content", nil)
	}
	b = append(b, "]}]"...)

	if toolsPart != nil {
		b = append(b, ',')
		b = append(b, toolsPart...)
	}
	if protocol == llm.ProtocolTools {
		if err := llm.CheckToolChoice(req.ToolChoice, req.Tools); err != nil {
			return nil, p.newError(llm.ErrBadRequest, err.Error(), err)
		}
		b = appendToolChoice(b, req.ToolChoice, req.ParallelToolCalls)
	}
	if p.streamed(req) {
		b = append(b, `,"stream":true`...)
	}
	b = append(b, '}')
	p.sizeHint.Store(int64(len(b)))
	return b, nil
}

// encodeDecision encodes the tools and tool_choice members that force the
// decision tool with schema doc.
func (p *Provider) encodeDecision(doc []byte) ([]byte, []byte, error) {
	schema, err := p.compactObject(doc, "schema")
	if err != nil {
		return nil, nil, err
	}
	b := []byte(`"tools":[{"name":"` + DecisionTool + `","description":`)
	b = jsonstr.Append(b, decisionDescription)
	b = append(b, `,"input_schema":`...)
	b = append(b, schema...)
	b = append(b, `}],"tool_choice":{"type":"tool","name":"`+DecisionTool+`","disable_parallel_tool_use":true}`...)
	return bytes.Clone(doc), b, nil
}

// encodeTools encodes the tools member offering tools.
func (p *Provider) encodeTools(tools []llm.ToolDef) ([]llm.ToolDef, []byte, error) {
	b := []byte(`"tools":[`)
	for i, t := range tools {
		if t.Name == "" {
			return nil, nil, p.newError(llm.ErrBadRequest, fmt.Sprintf("tool %d has no name", i), nil)
		}
		schema := []byte(`{"type":"object","properties":{}}`)
		if len(t.Parameters) > 0 {
			var err error
			if schema, err = p.compactObject(t.Parameters, "tool "+t.Name+" parameters"); err != nil {
				return nil, nil, err
			}
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = jsonstr.Append(b, t.Name)
		if t.Description != "" {
			b = append(b, `,"description":`...)
			b = jsonstr.Append(b, t.Description)
		}
		b = append(b, `,"input_schema":`...)
		b = append(b, schema...)
		b = append(b, '}')
	}
	b = append(b, ']')

	src := make([]llm.ToolDef, len(tools))
	for i, t := range tools {
		src[i] = llm.ToolDef{Name: t.Name, Description: t.Description, Parameters: bytes.Clone(t.Parameters)}
	}
	return src, b, nil
}

// appendToolChoice appends the tool_choice member: auto, any (a call
// required), none, or one named tool; parallel use is off unless allowed
// (and moot under none).
func appendToolChoice(b []byte, c llm.ToolChoice, parallel bool) []byte {
	b = append(b, `,"tool_choice":{"type":`...)
	switch c.Mode {
	case "", llm.ToolAuto:
		b = append(b, `"auto"`...)
	case llm.ToolRequired:
		b = append(b, `"any"`...)
	case llm.ToolNone:
		return append(b, `"none"}`...)
	case llm.ToolNamed:
		b = append(b, `"tool","name":`...)
		b = jsonstr.Append(b, c.Name)
	}
	if !parallel {
		b = append(b, `,"disable_parallel_tool_use":true`...)
	}
	return append(b, '}')
}

// appendToolUses appends an assistant message's calls as tool_use blocks.
func appendToolUses(b []byte, calls []llm.ToolCall) []byte {
	for j := range calls {
		c := &calls[j]
		if j > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"tool_use","id":`...)
		b = jsonstr.Append(b, c.ID)
		b = append(b, `,"name":`...)
		b = jsonstr.Append(b, c.Name)
		b = append(b, `,"input":`...)
		if len(c.Arguments) == 0 {
			b = append(b, "{}"...)
		} else {
			b = appendCompact(b, c.Arguments)
		}
		b = append(b, '}')
	}
	return b
}

// appendToolResult appends a tool message as a tool_result block.
func appendToolResult(b []byte, m *llm.Message) []byte {
	b = append(b, `{"type":"tool_result","tool_use_id":`...)
	b = jsonstr.Append(b, m.ToolCallID)
	if !isBlank(m.Content) {
		b = append(b, `,"content":`...)
		b = jsonstr.Append(b, m.Content)
	}
	if m.IsError {
		b = append(b, `,"is_error":true`...)
	}
	return append(b, '}')
}

// appendCompact appends the JSON doc, already checked valid, without
// insignificant space.
func appendCompact(b []byte, doc []byte) []byte {
	buf := bytes.NewBuffer(b)
	if json.Compact(buf, doc) != nil {
		return append(b, doc...)
	}
	return buf.Bytes()
}

// sameTools reports whether a cached copy matches the current tools.
func sameTools(a, b []llm.ToolDef) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Description != b[i].Description || !bytes.Equal(a[i].Parameters, b[i].Parameters) {
			return false
		}
	}
	return true
}

// compactObject returns doc compacted, or a bad_request error if it is not
// a JSON object.
func (p *Provider) compactObject(doc []byte, what string) ([]byte, error) {
	if len(doc) == 0 {
		return nil, p.newError(llm.ErrBadRequest, what+" has no JSON document", nil)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, doc); err != nil {
		return nil, p.newError(llm.ErrBadRequest, what+" is not valid JSON: "+err.Error(), err)
	}
	if buf.Bytes()[0] != '{' {
		return nil, p.newError(llm.ErrBadRequest, what+" is not a JSON object", nil)
	}
	return buf.Bytes(), nil
}

// isBlank reports whether s has nothing but JSON whitespace.
func isBlank(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
		default:
			return false
		}
	}
	return true
}

// appendImages appends a user message's images, after its text, as base64
// image blocks.
func appendImages(b []byte, images []llm.Image) []byte {
	for _, img := range images {
		b = append(b, `,{"type":"image","source":{"type":"base64","media_type":`...)
		b = jsonstr.Append(b, img.MediaType)
		b = append(b, `,"data":"`...)
		b = base64.StdEncoding.AppendEncode(b, img.Data)
		b = append(b, `"}}`...)
	}
	return b
}
