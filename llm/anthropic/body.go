package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/llm"
)

// The request body is written here rather than through the SDK's params
// types: the system prompt, the decision schema and the tool catalog are
// the same bytes on every call, so they are encoded once and copied
// afterwards, while the SDK's encoder walks and re-marshals every nested
// level on every call (see BenchmarkEncode). The body is a fresh slice per
// call, never pooled: the HTTP transport may still read a request body
// after the response has arrived.

// cacheMinLen is the shortest system message worth caching in encoded
// form; shorter ones are cheap to encode each time.
const cacheMinLen = 512

// maxCached bounds each cache; past it the cache starts over.
const maxCached = 256

// encodedCache maps a stable request part to its encoded JSON. Each entry
// keeps src, a private copy of what was encoded, so a hit can be checked
// against the current value: a key is an identity (a pointer), and the
// value behind it may have changed since.
type encodedCache[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]cacheEntry[V]
}

type cacheEntry[V any] struct {
	src V
	enc []byte
}

// get returns the encoding cached under key if same reports it still
// matches, else the one encode makes (and caches with its copy of the
// source).
func (c *encodedCache[K, V]) get(key K, same func(V) bool, encode func() (V, []byte, error)) ([]byte, error) {
	c.mu.RLock()
	e, ok := c.m[key]
	c.mu.RUnlock()
	if ok && same(e.src) {
		return e.enc, nil
	}
	src, enc, err := encode()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCached {
		c.m = make(map[K]cacheEntry[V])
	}
	c.m[key] = cacheEntry[V]{src: src, enc: enc}
	c.mu.Unlock()
	return enc, nil
}

// toolsKey identifies a tool list by its backing array and length.
type toolsKey struct {
	first *llm.ToolDef
	n     int
}

// encodeBody writes req as a Messages API request body for protocol;
// forced means the decision tool is sent and forced.
func (p *Provider) encodeBody(req *llm.Request, protocol llm.Protocol, forced bool) ([]byte, error) {
	var toolsPart []byte
	var err error
	switch {
	case protocol == llm.ProtocolTools:
		toolsPart, err = p.tools.get(toolsKey{&req.Tools[0], len(req.Tools)},
			func(src []llm.ToolDef) bool { return sameTools(src, req.Tools) },
			func() ([]llm.ToolDef, []byte, error) { return p.encodeTools(req.Tools) })
	case forced:
		s := req.Schema
		doc := s.JSON
		if len(doc) == 0 {
			doc = s.Strict
		}
		toolsPart, err = p.schemas.get(s,
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

	// System messages, in order, as text blocks; the last one carries the
	// cache breakpoint.
	last := -1
	for i, m := range req.Messages {
		switch m.Role {
		case llm.RoleSystem:
			if !isBlank(m.Content) {
				last = i
			}
		case llm.RoleUser, llm.RoleAssistant:
		default:
			return nil, p.newError(llm.ErrBadRequest, fmt.Sprintf("message %d: unknown role %q", i, m.Role), nil)
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
			if len(m.Content) >= cacheMinLen {
				enc, _ := p.system.get(m.Content, func(struct{}) bool { return true },
					func() (struct{}, []byte, error) { return struct{}{}, appendJSONString(nil, m.Content), nil })
				b = append(b, enc...)
			} else {
				b = appendJSONString(b, m.Content)
			}
			if i == last {
				b = append(b, `,"cache_control":{"type":"ephemeral"}`...)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}

	// User and assistant messages, consecutive ones of a role merged.
	b = append(b, `,"messages":[`...)
	role := ""
	for _, m := range req.Messages {
		if m.Role == llm.RoleSystem || isBlank(m.Content) {
			continue
		}
		switch {
		case m.Role == role:
			b = append(b, ',')
		default:
			if role != "" {
				b = append(b, "]},"...)
			}
			b = append(b, `{"role":"`...)
			b = append(b, m.Role...)
			b = append(b, `","content":[`...)
		}
		role = m.Role
		b = append(b, `{"type":"text","text":`...)
		b = appendJSONString(b, m.Content)
		b = append(b, '}')
	}
	if role == "" {
		return nil, p.newError(llm.ErrBadRequest, "request has no user or assistant message with content", nil)
	}
	b = append(b, "]}]"...)

	if toolsPart != nil {
		b = append(b, ',')
		b = append(b, toolsPart...)
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
	b = appendJSONString(b, decisionDescription)
	b = append(b, `,"input_schema":`...)
	b = append(b, schema...)
	b = append(b, `}],"tool_choice":{"type":"tool","name":"`+DecisionTool+`","disable_parallel_tool_use":true}`...)
	return bytes.Clone(doc), b, nil
}

// encodeTools encodes the tools and tool_choice members offering tools.
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
		b = appendJSONString(b, t.Name)
		if t.Description != "" {
			b = append(b, `,"description":`...)
			b = appendJSONString(b, t.Description)
		}
		b = append(b, `,"input_schema":`...)
		b = append(b, schema...)
		b = append(b, '}')
	}
	b = append(b, `],"tool_choice":{"type":"auto","disable_parallel_tool_use":true}`...)

	src := make([]llm.ToolDef, len(tools))
	for i, t := range tools {
		src[i] = llm.ToolDef{Name: t.Name, Description: t.Description, Parameters: bytes.Clone(t.Parameters)}
	}
	return src, b, nil
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

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. Invalid UTF-8 becomes
// U+FFFD, as encoding/json does; HTML characters are left as they are,
// since the body is not embedded in HTML.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
