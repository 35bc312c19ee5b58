package openaicompat

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"sync"

	"github.com/arbiterhq/arbiter/internal/jsonstr"
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
	if err := llm.CheckMessages(req.Messages); err != nil {
		releaseBody(buf)
		return nil, p.newError(llm.ErrBadRequest, err.Error(), err)
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(`{"role":"` + m.Role + `",`)
		if m.Role == llm.RoleTool {
			buf.WriteString(`"tool_call_id":`)
			buf.Write(jsonstr.Append(buf.AvailableBuffer(), m.ToolCallID))
			buf.WriteByte(',')
		}
		buf.WriteString(`"content":`)
		switch {
		case p.images && len(m.Images) > 0 && m.Role == llm.RoleUser:
			writeImageParts(buf, m)
		case m.Content == "" && len(m.ToolCalls) > 0:
			buf.WriteString("null")
		case len(m.Content) >= wire.CacheMinLen && m.Role == llm.RoleSystem:
			enc, _ := p.messages.Get(m.Content, nil, func() (struct{}, []byte, error) {
				return struct{}{}, jsonstr.Append(nil, m.Content), nil
			})
			buf.Write(enc)
		case len(m.Images) > 0:
			buf.Write(jsonstr.Append(buf.AvailableBuffer(), m.Content+llm.ImagesLeftOut))
		default:
			buf.Write(jsonstr.Append(buf.AvailableBuffer(), m.Content))
		}
		if len(m.ToolCalls) > 0 {
			writeToolCalls(buf, m.ToolCalls)
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
		if err := llm.CheckToolChoice(req.ToolChoice, req.Tools); err != nil {
			releaseBody(buf)
			return nil, p.newError(llm.ErrBadRequest, err.Error(), err)
		}
		buf.WriteString(`,"tools":`)
		buf.Write(enc)
		buf.WriteString(`,"tool_choice":`)
		switch req.ToolChoice.Mode {
		case "", llm.ToolAuto:
			buf.WriteString(`"auto"`)
		case llm.ToolNamed:
			buf.WriteString(`{"type":"function","function":{"name":`)
			buf.Write(jsonstr.Append(buf.AvailableBuffer(), req.ToolChoice.Name))
			buf.WriteString(`}}`)
		default:
			buf.WriteString(`"` + string(req.ToolChoice.Mode) + `"`)
		}
		// Parallel calls are the API's default, so allowing them is
		// leaving the field out.
		if !p.omitParallel && !req.ParallelToolCalls {
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
	if p.streamed(req) {
		buf.WriteString(`,"stream":true,"stream_options":{"include_usage":true}`)
	}
	buf.WriteByte('}')
	return buf, nil
}

// writeToolCalls writes an assistant message's tool_calls member; the
// arguments go as a string holding their JSON, as the API sends them.
func writeToolCalls(buf *bytes.Buffer, calls []llm.ToolCall) {
	buf.WriteString(`,"tool_calls":[`)
	for j := range calls {
		c := &calls[j]
		if j > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(`{"id":`)
		buf.Write(jsonstr.Append(buf.AvailableBuffer(), c.ID))
		buf.WriteString(`,"type":"function","function":{"name":`)
		buf.Write(jsonstr.Append(buf.AvailableBuffer(), c.Name))
		buf.WriteString(`,"arguments":`)
		args := string(c.Arguments)
		if args == "" {
			args = "{}"
		}
		buf.Write(jsonstr.Append(buf.AvailableBuffer(), args))
		buf.WriteString(`}}`)
	}
	buf.WriteByte(']')
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
	b = jsonstr.Append(b, name)
	b = append(b, `,"strict":`...)
	b = strconv.AppendBool(b, strict)
	b = append(b, `,"schema":`...)
	b = append(b, compact.Bytes()...)
	return append(b, "}}"...), nil
}

// writeImageParts writes a user message with images as content parts:
// its text, then each image as an image_url part holding a data URL.
func writeImageParts(buf *bytes.Buffer, m *llm.Message) {
	buf.WriteByte('[')
	if strings.TrimSpace(m.Content) != "" {
		buf.WriteString(`{"type":"text","text":`)
		buf.Write(jsonstr.Append(buf.AvailableBuffer(), m.Content))
		buf.WriteString("},")
	}
	for i, img := range m.Images {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(`{"type":"image_url","image_url":{"url":"data:`)
		buf.WriteString(img.MediaType) // one of llm.ImageTypes (CheckMessages)
		buf.WriteString(";base64,")
		buf.Write(base64.StdEncoding.AppendEncode(buf.AvailableBuffer(), img.Data))
		buf.WriteString(`"}}`)
	}
	buf.WriteByte(']')
}
