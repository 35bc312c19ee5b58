package turn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/arbiterhq/arbiter/internal/jsonstr"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
)

// The turn's record is written on every turn, and encoding/json spent a
// tenth of a write turn's CPU on it: reflection over forty fields and a
// second pass over every RawMessage and StepTraces. recordWriter writes
// the engine's keys by hand, byte for byte as json.Marshal writes
// traceFields (TestRecordIsWhatMarshalWrites fills every field, nested
// ones too, and compares), so the redaction's search for the forms
// json.Marshal gives a secret still finds every one. The parts most turns
// leave empty (evidence, review, approvals, ...) go through json.Marshal.
type recordWriter struct {
	b   []byte
	err error
}

// appendRecord appends the engine's keys of t, as one JSON object.
func appendRecord(b []byte, t *Trace) ([]byte, error) {
	w := &recordWriter{b: b}
	w.raw(`{"turn_id":`)
	w.str(t.TurnID)
	w.raw(`,"conversation_id":`)
	w.str(t.ConversationID)
	w.raw(`,"tenant":`)
	w.str(t.Tenant)
	w.raw(`,"user_id":`)
	w.str(t.UserID)
	w.optStr(`,"channel":`, t.Channel)
	w.optStr(`,"message_id":`, t.MessageID)
	w.raw(`,"route":`)
	w.str(string(t.Route))
	w.raw(`,"status":`)
	w.str(string(t.Status))
	w.raw(`,"started_at":`)
	w.time(t.StartedAt)
	w.raw(`,"duration_ms":`)
	w.int(t.DurationMS)
	w.raw(`,"lock_wait_ms":`)
	w.int(t.LockWaitMS)
	w.raw(`,"fence":`)
	w.int(t.Fence)
	w.raw(`,"memory_messages":`)
	w.int(int64(t.MemoryMessages))
	w.raw(`,"prompt_messages":`)
	w.int(int64(t.PromptMessages))
	w.raw(`,"prompt_bytes":`)
	w.int(int64(t.PromptBytes))
	w.raw(`,"stable_prefix_bytes":`)
	w.int(int64(t.StablePrefixBytes))
	w.raw(`,"stable_prefix_ratio":`)
	w.float(t.StablePrefixRatio)
	if len(t.Evidence) > 0 {
		w.raw(`,"evidence":`)
		w.value(t.Evidence)
	}
	if len(t.Context) > 0 {
		w.raw(`,"context_sources":`)
		w.sources(t.Context)
	}
	w.raw(`,"llm_calls":`)
	w.llmCalls(t.LLMCalls)
	if d := t.DecidedBy; d != nil {
		w.raw(`,"decided_by":{"provider":`)
		w.str(d.Provider)
		w.raw(`,"model":`)
		w.str(d.Model)
		w.raw(`}`)
	}
	w.raw(`,"cost_usd":`)
	w.float(t.CostUSD)
	w.optBool(`,"cost_unknown":true`, t.CostUnknown)
	w.raw(`,"decision":`)
	w.rawJSON(t.Decision)
	w.tail(t)
	return w.b, w.err
}

// tail writes the keys after the decision.
func (w *recordWriter) tail(t *Trace) {
	if t.Repair != nil {
		w.raw(`,"repair":`)
		w.value(t.Repair)
	}
	if t.Review != nil {
		w.raw(`,"review":`)
		w.value(t.Review)
	}
	w.raw(`,"vetoes":`)
	w.vetoes(t.Vetoes)
	if t.Confirmation != nil {
		w.raw(`,"confirmation":`)
		w.value(t.Confirmation)
	}
	if len(t.Approvals) > 0 {
		w.raw(`,"approvals":`)
		w.value(t.Approvals)
	}
	w.raw(`,"executed":`)
	w.executed(t.Executed)
	if len(t.Progress) > 0 {
		w.raw(`,"progress":`)
		w.value(t.Progress)
	}
	if len(t.Questions) > 0 {
		w.raw(`,"questions":`)
		w.value(t.Questions)
	}
	w.raw(`,"say":`)
	w.str(t.Say)
	w.raw(`,"steps":`)
	w.b = t.Steps.appendJSON(w.b)
	if len(t.Notes) > 0 {
		w.raw(`,"notes":`)
		w.strs(t.Notes)
	}
	w.optStr(`,"error":`, t.Error)
	w.raw(`}`)
}

func (w *recordWriter) llmCalls(calls []store.LLMCall) {
	w.list(calls == nil, len(calls), func(i int) {
		c := &calls[i]
		w.raw(`{"provider":`)
		w.str(c.Provider)
		w.raw(`,"model":`)
		w.str(c.Model)
		w.raw(`,"operation":`)
		w.str(c.Operation)
		w.raw(`,"strategy":`)
		w.str(c.Strategy)
		w.raw(`,"attempt":`)
		w.str(c.Attempt)
		w.raw(`,"input_tokens":`)
		w.int(int64(c.InputTokens))
		w.raw(`,"cached_input_tokens":`)
		w.int(int64(c.CachedInputTokens))
		w.raw(`,"output_tokens":`)
		w.int(int64(c.OutputTokens))
		w.raw(`,"cost_usd":`)
		w.float(c.CostUSD)
		w.optBool(`,"cost_unknown":true`, c.CostUnknown)
		w.raw(`,"duration_ms":`)
		w.int(c.DurationMS)
		w.raw(`,"status":`)
		w.str(c.Status)
		w.raw(`,"error":`)
		w.str(c.Error)
		w.optStr(`,"note":`, c.Note)
		w.raw(`,"at":`)
		w.time(c.At)
		w.raw(`}`)
	})
}

func (w *recordWriter) executed(runs []ExecutionTrace) {
	w.list(runs == nil, len(runs), func(i int) {
		ex := &runs[i]
		w.raw(`{"tool":`)
		w.str(ex.Tool)
		w.raw(`,"args":`)
		w.rawJSON(ex.Args)
		w.optStr(`,"idempotency_key":`, ex.IdempotencyKey)
		w.raw(`,"status":`)
		w.str(ex.Status)
		if ex.Result != nil {
			w.raw(`,"result":`)
			w.result(ex.Result)
		}
		w.optBool(`,"reused":true`, ex.Reused)
		w.optBool(`,"reconciled":true`, ex.Reconciled)
		w.raw(`,"duration_ms":`)
		w.int(ex.DurationMS)
		w.raw(`}`)
	})
}

func (w *recordWriter) result(r *tool.Result) {
	w.raw(`{"status":`)
	w.str(string(r.Status))
	if len(r.Data) > 0 {
		w.raw(`,"data":`)
		w.rawJSON(r.Data)
	}
	w.optStr(`,"text":`, r.Text)
	w.optStr(`,"error":`, r.Error)
	w.optStr(`,"source":`, r.Source)
	w.raw(`,"observed_at":`)
	w.time(r.ObservedAt)
	w.optStr(`,"field":`, r.Field)
	if len(r.Candidates) > 0 {
		w.raw(`,"candidates":`)
		w.strs(r.Candidates)
	}
	if len(r.Choices) > 0 {
		w.raw(`,"choices":`)
		w.value(r.Choices)
	}
	if r.Draft != nil {
		w.raw(`,"draft":`)
		w.value(r.Draft)
	}
	w.optBool(`,"outcome_unknown":true`, r.OutcomeUnknown)
	w.raw(`}`)
}

func (w *recordWriter) vetoes(vs []Veto) {
	w.list(vs == nil, len(vs), func(i int) {
		v := &vs[i]
		w.raw(`{"guard":`)
		w.str(v.Guard)
		w.optStr(`,"tool":`, v.Tool)
		w.raw(`,"reason":`)
		w.str(v.Reason)
		if len(v.Problems) > 0 {
			w.raw(`,"problems":`)
			w.value(v.Problems)
		}
		w.raw(`}`)
	})
}

// sources writes a list the record omits when empty.
func (w *recordWriter) sources(cs []ContextSourceTrace) {
	w.list(false, len(cs), func(i int) {
		c := &cs[i]
		w.raw(`{"name":`)
		w.str(c.Name)
		w.raw(`,"duration_ms":`)
		w.int(c.DurationMS)
		w.raw(`,"sections":`)
		w.int(int64(c.Sections))
		w.optStr(`,"error":`, c.Error)
		w.raw(`}`)
	})
}

// strs writes a list the record omits when empty.
func (w *recordWriter) strs(ss []string) {
	w.list(false, len(ss), func(i int) { w.str(ss[i]) })
}

// list writes n elements, each by item, as a JSON array, or null for a
// nil slice (isNil), as encoding/json writes a slice.
func (w *recordWriter) list(isNil bool, n int, item func(i int)) {
	if isNil {
		w.raw(`null`)
		return
	}
	w.raw(`[`)
	for i := range n {
		if i > 0 {
			w.raw(`,`)
		}
		item(i)
	}
	w.raw(`]`)
}

func (w *recordWriter) raw(s string) { w.b = append(w.b, s...) }
func (w *recordWriter) str(s string) { w.b = jsonstr.AppendMarshaled(w.b, s) }
func (w *recordWriter) int(n int64)  { w.b = strconv.AppendInt(w.b, n, 10) }

// optStr writes key and s unless s is empty (omitempty).
func (w *recordWriter) optStr(key, s string) {
	if s != "" {
		w.raw(key)
		w.str(s)
	}
}

// optBool writes keyTrue (the key and true) when v is (omitempty).
func (w *recordWriter) optBool(keyTrue string, v bool) {
	if v {
		w.raw(keyTrue)
	}
}

// time writes t as time.Time's MarshalJSON does.
func (w *recordWriter) time(t time.Time) {
	w.b = append(w.b, '"')
	b, err := t.AppendText(w.b)
	if err != nil {
		w.fail(err)
		return
	}
	w.b = append(b, '"')
}

// float writes f as encoding/json writes a float64: the shortest form
// that reads back as f, in exponent form below 1e-6 and from 1e21, with
// an exponent of at least two digits only when it needs them.
func (w *recordWriter) float(f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		w.fail(fmt.Errorf("json: unsupported value: %v", f))
		return
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	start := len(w.b)
	w.b = strconv.AppendFloat(w.b, f, format, -1, 64)
	if n := len(w.b) - start; format == 'e' && n >= 4 {
		if e := w.b[len(w.b)-4:]; e[0] == 'e' && e[1] == '-' && e[2] == '0' { // e-07 → e-7
			e[2] = e[3]
			w.b = w.b[:len(w.b)-1]
		}
	}
}

// rawJSON writes a json.RawMessage as encoding/json does: null when nil,
// compacted, with <, >, & and U+2028/9 escaped; not JSON is an error.
func (w *recordWriter) rawJSON(m json.RawMessage) {
	if m == nil {
		w.raw(`null`)
		return
	}
	start := len(w.b)
	buf := bytes.NewBuffer(w.b)
	if err := json.Compact(buf, m); err != nil {
		w.fail(err)
		return
	}
	w.b = buf.Bytes()
	if out := w.b[start:]; needsHTMLEscape(out) {
		var esc bytes.Buffer
		json.HTMLEscape(&esc, out)
		w.b = append(w.b[:start], esc.Bytes()...)
	}
}

// needsHTMLEscape reports whether b holds <, >, & or a byte that may
// start U+2028 or U+2029 (a byte scan: bytes.ContainsAny decodes runes
// for a set with non-ASCII ones in it).
func needsHTMLEscape(b []byte) bool {
	for _, c := range b {
		if c == '<' || c == '>' || c == '&' || c == 0xE2 {
			return true
		}
	}
	return false
}

// value writes v with json.Marshal, for the parts of a record that most
// turns leave out.
func (w *recordWriter) value(v any) {
	data, err := json.Marshal(v)
	if err != nil {
		w.fail(err)
		return
	}
	w.b = append(w.b, data...)
}

func (w *recordWriter) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}
