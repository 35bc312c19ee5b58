package openaicompat

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
// types: the system prompt, the output schema and the tool catalog are the
// same bytes on every call, so they are encoded once and copied afterwards. The
// SDK's encoder re-marshals every nested level on every call, which was
// most of this package's CPU.

// cacheMinLen is the shortest message worth caching in encoded form;
// shorter ones (the conversation) are cheap to encode each time.
const cacheMinLen = 512

// maxCached bounds each cache; past it the cache starts over.
const maxCached = 256

// encodedCache maps a stable value to its encoded JSON.
type encodedCache struct {
	mu sync.RWMutex
	m  map[any][]byte
}

func (c *encodedCache) get(key any, encode func() ([]byte, error)) ([]byte, error) {
	c.mu.RLock()
	b, ok := c.m[key]
	c.mu.RUnlock()
	if ok {
		return b, nil
	}
	b, err := encode()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCached {
		c.m = make(map[any][]byte)
	}
	c.m[key] = b
	c.mu.Unlock()
	return b, nil
}

var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// encodeBody writes req as a Chat Completions request body: with tools,
// for native tool calling over req.Tools, otherwise for a JSON answer
// following req.Schema. The returned buffer goes back to the pool with
// releaseBody once the request is sent.
func (p *Provider) encodeBody(req *llm.Request, tools bool) (*bytes.Buffer, error) {
	buf := bodyPool.Get().(*bytes.Buffer)
	buf.Reset()
	buf.WriteString(`{"model":`)
	buf.Write(p.modelJSON)
	buf.WriteString(`,"messages":[`)
	for i, m := range req.Messages {
		switch m.Role {
		case llm.RoleSystem, llm.RoleUser, llm.RoleAssistant:
		default:
			releaseBody(buf)
			return nil, p.newError(llm.ErrBadRequest, fmt.Sprintf("message %d: unknown role %q", i, m.Role), nil)
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(`{"role":"` + m.Role + `","content":`)
		if len(m.Content) >= cacheMinLen && m.Role == llm.RoleSystem {
			enc, _ := p.messages.get(m.Content, func() ([]byte, error) {
				return appendJSONString(nil, m.Content), nil
			})
			buf.Write(enc)
		} else {
			buf.Write(appendJSONString(buf.AvailableBuffer(), m.Content))
		}
		buf.WriteByte('}')
	}
	buf.WriteString(`],"temperature":`)
	buf.Write(strconv.AppendFloat(buf.AvailableBuffer(), req.Temperature, 'g', -1, 64))
	if req.MaxTokens > 0 {
		if p.maxComp {
			buf.WriteString(`,"max_completion_tokens":`)
		} else {
			buf.WriteString(`,"max_tokens":`)
		}
		buf.Write(strconv.AppendInt(buf.AvailableBuffer(), int64(req.MaxTokens), 10))
	}
	switch {
	case tools:
		enc, err := p.tools.get(req.Tools, p.encodeTools)
		if err != nil {
			releaseBody(buf)
			return nil, err
		}
		buf.WriteString(`,"tools":`)
		buf.Write(enc)
		buf.WriteString(`,"tool_choice":"auto"`)
		if !p.omitParallel {
			buf.WriteString(`,"parallel_tool_calls":false`)
		}
	case req.Schema != nil:
		format, err := p.formats.get(req.Schema, func() ([]byte, error) { return p.responseFormat(req.Schema) })
		if err != nil {
			releaseBody(buf)
			return nil, err
		}
		buf.WriteString(`,"response_format":`)
		buf.Write(format)
	}
	buf.WriteByte('}')
	return buf, nil
}

func releaseBody(buf *bytes.Buffer) {
	if buf.Cap() <= 1<<20 {
		bodyPool.Put(buf)
	}
}

// responseFormat encodes the response_format member for a schema under the
// provider's output mode.
func (p *Provider) responseFormat(s *llm.Schema) ([]byte, error) {
	if p.output == llm.OutputJSONObject {
		return []byte(`{"type":"json_object"}`), nil
	}
	doc, strict := s.JSON, false
	if p.output == llm.OutputJSONSchemaStrict && len(s.Strict) > 0 {
		doc, strict = s.Strict, true
	}
	if len(doc) == 0 {
		return nil, p.newError(llm.ErrBadRequest, "schema has no JSON document", nil)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, doc); err != nil {
		return nil, p.newError(llm.ErrBadRequest, "schema is not valid JSON: "+err.Error(), err)
	}
	name := s.Name
	if name == "" {
		name = DefaultSchemaName
	}
	var b []byte
	b = append(b, `{"type":"json_schema","json_schema":{"name":`...)
	b = appendJSONString(b, name)
	b = append(b, `,"strict":`...)
	b = strconv.AppendBool(b, strict)
	b = append(b, `,"schema":`...)
	b = append(b, compact.Bytes()...)
	return append(b, "}}"...), nil
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
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
