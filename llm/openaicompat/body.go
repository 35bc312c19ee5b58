package openaicompat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/internal/wire"
)

// The request body is written here rather than through the SDK's params
// types: the system prompt, the output schema and the tool catalog are the
// same bytes on every call, so they are encoded once and copied afterwards. The
// SDK's encoder re-marshals every nested level on every call, which was
// most of this package's CPU.

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
		if len(m.Content) >= wire.CacheMinLen && m.Role == llm.RoleSystem {
			enc, _ := p.messages.Get(m.Content, nil, func() (struct{}, []byte, error) {
				return struct{}{}, wire.AppendJSONString(nil, m.Content), nil
			})
			buf.Write(enc)
		} else {
			buf.Write(wire.AppendJSONString(buf.AvailableBuffer(), m.Content))
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
		enc, err := p.encodedTools(req.Tools)
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
		format, err := p.formats.Get(req.Schema, nil, func() (struct{}, []byte, error) {
			b, err := p.responseFormat(req.Schema)
			return struct{}{}, b, err
		})
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
	b = wire.AppendJSONString(b, name)
	b = append(b, `,"strict":`...)
	b = strconv.AppendBool(b, strict)
	b = append(b, `,"schema":`...)
	b = append(b, compact.Bytes()...)
	return append(b, "}}"...), nil
}
