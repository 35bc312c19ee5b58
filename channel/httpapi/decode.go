package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/chat"
)

// Field limits of POST /v1/messages.
const (
	maxIDLen = 128
	// A pasted log or document is a message too: the body limit
	// (limits.max_body_bytes) is what bounds it.
	maxTextRunes   = 128_000
	maxButtonLen   = 64
	maxEvidence    = 20
	maxEvidenceLen = 128 << 10
	maxContext     = 16
	maxContextLen  = 256
)

// MessageRequest is the body of POST /v1/messages.
type MessageRequest struct {
	ConversationID string         `json:"conversation_id"`
	MessageID      string         `json:"message_id"`
	Text           string         `json:"text"`
	Button         string         `json:"button"`
	Evidence       []EvidenceItem `json:"evidence"`
	// Context binds the conversation to a case ({"ticket_id": "T-4821"});
	// only a key with the scope context:bind may send it.
	Context map[string]string `json:"context"`
	// CloseCase ends the conversation's case first (the ticket was
	// closed); the same scope as context.
	CloseCase bool `json:"close_case"`
	// Client is what the user is doing in the client (an open document,
	// a mode switched on, the tab in front): data for a router.
	Client *chat.ClientHint `json:"client"`
}

// EvidenceItem is one evidence item of a message: chat.Evidence and, for
// an attachment, the file itself in base64 (Data), which the engine reads
// (a PDF's text, a picture for a model that takes images) within its
// media limits.
type EvidenceItem struct {
	chat.Evidence
	Data []byte `json:"data,omitempty"`
}

// evidence is the message's evidence for the engine, files included.
func (m *MessageRequest) evidence() []chat.Evidence {
	if len(m.Evidence) == 0 {
		return nil
	}
	out := make([]chat.Evidence, len(m.Evidence))
	for i, ev := range m.Evidence {
		out[i] = ev.Evidence
		out[i].Data = ev.Data
	}
	return out
}

// fileBytes is how much of the body the files' base64 took.
func (m *MessageRequest) fileBytes() int64 {
	var n int64
	for _, ev := range m.Evidence {
		n += int64(base64.StdEncoding.EncodedLen(len(ev.Data)))
	}
	return n
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

var evidenceKinds = map[string]bool{chat.EvidenceForward: true, chat.EvidenceAttachment: true, chat.EvidenceQuote: true}

// DecodeMessage reads and validates one request body: exactly one JSON
// object with known fields only. Errors are written for the client.
func DecodeMessage(r io.Reader) (MessageRequest, error) {
	var req MessageRequest
	if err := decodeStrict(r, &req); err != nil {
		return req, err
	}
	return req, req.validate()
}

// decodeStrict reads exactly one JSON object with known fields only into
// v. A body over its limit comes back as the *http.MaxBytesError.
func decodeStrict(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return err
		}
		if errors.Is(err, io.EOF) {
			return errors.New("empty body: expected a JSON object")
		}
		return jsonProblem(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return err
		}
		return errors.New("malformed JSON body: data after the object")
	}
	return nil
}

// jsonProblem says what is wrong with a body in its own words: JSON
// field names and kinds, never Go types.
func jsonProblem(err error) error {
	var typ *json.UnmarshalTypeError
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &typ):
		want := map[reflect.Kind]string{reflect.String: "a string", reflect.Bool: "true or false", reflect.Slice: "a list",
			reflect.Map: "an object", reflect.Struct: "an object", reflect.Pointer: "an object"}[typ.Type.Kind()]
		if want == "" {
			want = "a number"
		}
		got := map[string]string{"number": "a number", "string": "a string", "bool": "true or false", "array": "a list", "object": "an object"}[typ.Value]
		if got == "" {
			got = typ.Value
		}
		if typ.Field == "" {
			return fmt.Errorf("the body must be a JSON object, not %s", got)
		}
		return fmt.Errorf("%s must be %s, not %s", typ.Field, want, got)
	case errors.As(err, &syn):
		return fmt.Errorf("malformed JSON body at byte %d: %s", syn.Offset, strings.TrimPrefix(syn.Error(), "json: "))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("malformed JSON body: it ends before the object does")
	}
	if msg, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("unknown field %s", msg)
	}
	return fmt.Errorf("malformed JSON body: %s", strings.TrimPrefix(err.Error(), "json: "))
}

func (m *MessageRequest) validate() error {
	if err := checkID("conversation_id", m.ConversationID, true); err != nil {
		return err
	}
	if err := checkID("message_id", m.MessageID, false); err != nil {
		return err
	}
	if !utf8.ValidString(m.Text) || utf8.RuneCountInString(m.Text) > maxTextRunes {
		return fmt.Errorf("text must be valid UTF-8 of at most %d characters", maxTextRunes)
	}
	if len(m.Button) > maxButtonLen || !utf8.ValidString(m.Button) {
		return fmt.Errorf("button must be at most %d bytes of UTF-8", maxButtonLen)
	}
	if len(m.Evidence) > maxEvidence {
		return fmt.Errorf("at most %d evidence items", maxEvidence)
	}
	for i, ev := range m.Evidence {
		if !evidenceKinds[ev.Kind] {
			return fmt.Errorf("evidence[%d].kind must be forward, attachment or quote", i)
		}
		if strings.TrimSpace(ev.Text) == "" {
			return fmt.Errorf("evidence[%d].text is empty", i)
		}
		if len(ev.Text) > maxEvidenceLen || !utf8.ValidString(ev.Text) || len(ev.Source) > 1024 {
			return fmt.Errorf("evidence[%d] is too long or not UTF-8", i)
		}
		if t := ev.MediaType; t != "" && (ev.Kind != chat.EvidenceAttachment || len(t) > 100 || !strings.Contains(t, "/") || strings.ContainsAny(t, " \t\r\n")) {
			return fmt.Errorf("evidence[%d].media_type must be a type/subtype of an attachment", i)
		}
		if ev.Data != nil && (ev.Kind != chat.EvidenceAttachment || len(ev.Data) == 0) {
			return fmt.Errorf("evidence[%d].data must be the non-empty base64 content of an attachment", i)
		}
	}
	if len(m.Context) > maxContext {
		return fmt.Errorf("at most %d context values", maxContext)
	}
	for k, v := range m.Context {
		if err := checkID("context key", k, true); err != nil {
			return err
		}
		if v == "" || len(v) > maxContextLen || !utf8.ValidString(v) {
			return fmt.Errorf("context value of %q must be 1 to %d bytes of UTF-8", k, maxContextLen)
		}
	}
	if c := m.Client; c != nil {
		for _, v := range []string{c.OpenDocument, c.ActiveMode, c.Tab} {
			if len(v) > 256 || !utf8.ValidString(v) {
				return errors.New("client values must be at most 256 bytes of UTF-8")
			}
		}
	}
	if strings.TrimSpace(m.Text) == "" && m.Button == "" && len(m.Evidence) == 0 && !m.CloseCase {
		return errors.New("text, button, evidence or close_case is required")
	}
	return nil
}

func checkID(name, v string, required bool) error {
	if v == "" {
		if required {
			return fmt.Errorf("%s is required", name)
		}
		return nil
	}
	if len(v) > maxIDLen {
		return fmt.Errorf("%s is longer than %d bytes", name, maxIDLen)
	}
	if !utf8.ValidString(v) {
		return fmt.Errorf("%s is not valid UTF-8", name)
	}
	for _, r := range v {
		if unicode.IsControl(r) {
			return fmt.Errorf("%s contains control characters", name)
		}
	}
	return nil
}
