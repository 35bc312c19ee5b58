package turn

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
)

// The record's writer and json.Marshal write the same bytes for records
// with every field set, nested ones too, and for hundreds with a random
// third of them left empty: a field added to the record, or to a type in
// it, that the writer does not know fails here. Equal bytes also keep
// redaction whole: it searches the record for the forms json.Marshal
// gives a secret.
func TestRecordIsWhatMarshalWrites(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 31))
	for i := range 600 {
		tr := &Trace{}
		f := filler{rng: rng, empty: i > 0} // the first record has every field
		f.fill(reflect.ValueOf(tr).Elem(), 0)
		want, wantErr := json.Marshal((*traceFields)(tr))
		got, err := appendRecord([]byte("prefix"), tr)
		if wantErr != nil || err != nil {
			if (wantErr == nil) != (err == nil) {
				t.Fatalf("record %d: json.Marshal: %v; appendRecord: %v", i, wantErr, err)
			}
			continue
		}
		if !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Fatalf("record %d differs\n got %s\nwant prefix%s", i, got, want)
		}
	}
}

// Values json.Marshal refuses are refused: a RawMessage that is no JSON,
// a float it cannot write, a time out of RFC 3339's years.
func TestRecordRefusesWhatMarshalRefuses(t *testing.T) {
	for name, tr := range map[string]*Trace{
		"empty args":  {Executed: []ExecutionTrace{{Tool: "t", Args: json.RawMessage{}}}},
		"broken data": {Executed: []ExecutionTrace{{Tool: "t", Args: json.RawMessage(`{}`), Result: &tool.Result{Data: json.RawMessage(`{"a":`)}}}},
		"NaN cost":    {CostUSD: math.NaN()},
		"infinite":    {LLMCalls: []store.LLMCall{{CostUSD: math.Inf(1)}}},
		"year 10000":  {StartedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		if _, err := json.Marshal((*traceFields)(tr)); err == nil {
			t.Fatalf("%s: json.Marshal takes it; the case tests nothing", name)
		}
		if b, err := appendRecord(nil, tr); err == nil {
			t.Errorf("%s: written as %s", name, b)
		}
	}
}

// filler sets a value's exported fields, recursively, to values that
// exercise a JSON writer: escapes, exponent floats, zones, uncompacted
// raw JSON. With empty, a third of them stay empty (omitempty's cases),
// and some slices are made empty but not nil.
type filler struct {
	rng   *rand.Rand
	empty bool
}

var (
	fillStrings = []string{"plain", "<b>&amp;</b>", "line\nbreak\t\"q\"\\", "\b\f\x01\x1f", "\u2028x\u2029",
		"bad\xffutf8", "日本語", "w:5456dcce583a25e4e1751c323278f669:1"}
	fillFloats = []float64{0.5, 1.9960000000000002e-05, 1e-7, -3e-9, 1e21, 1e20, 123456789.125, 0.000001, 4.1e-300}
	fillTimes  = []time.Time{{}, time.Date(2026, 12, 6, 19, 25, 55, 653646798, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 120000000, time.FixedZone("", 3*3600)), time.Date(1999, 12, 31, 23, 59, 59, 0, time.FixedZone("", -90*60))}
	fillRaw = []json.RawMessage{json.RawMessage(`null`), json.RawMessage(`{"title":"Check signup form","assignee":"Dmitry"}`),
		json.RawMessage(" { \"a\" : [ 1 , 2.5e3 , \"<x>&\u2028\" ] ,\n\"b\":true } "), json.RawMessage(`"text"`), json.RawMessage(`[]`), json.RawMessage("\"line\u2028sep\"")}
	rawType  = reflect.TypeFor[json.RawMessage]()
	timeType = reflect.TypeFor[time.Time]()
)

func (f filler) fill(v reflect.Value, depth int) {
	if !v.CanSet() || depth > 10 || (f.empty && f.rng.IntN(3) == 0) {
		return
	}
	switch {
	case v.Type() == rawType:
		v.Set(reflect.ValueOf(fillRaw[f.rng.IntN(len(fillRaw))]))
		return
	case v.Type() == timeType:
		v.Set(reflect.ValueOf(fillTimes[f.rng.IntN(len(fillTimes))]))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(fillStrings[f.rng.IntN(len(fillStrings))])
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(f.rng.Int64N(200) - 50)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(f.rng.Uint64N(200))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(fillFloats[f.rng.IntN(len(fillFloats))])
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		f.fill(v.Elem(), depth+1)
	case reflect.Slice:
		n := 1 + f.rng.IntN(2)
		if f.empty && f.rng.IntN(4) == 0 { // empty but not nil: [] where nil is null
			n = 0
		}
		v.Set(reflect.MakeSlice(v.Type(), n, n))
		for i := range n {
			f.fill(v.Index(i), depth+1)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		key, val := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		f.fill(key, depth+1)
		f.fill(val, depth+1)
		v.SetMapIndex(key, val)
	case reflect.Interface:
		v.Set(reflect.ValueOf(fillStrings[f.rng.IntN(len(fillStrings))]))
	case reflect.Struct:
		for i := range v.NumField() {
			f.fill(v.Field(i), depth+1)
		}
	}
}

// BenchmarkRecord writes a loop turn's record with a write (two model
// calls, one execution, eight steps): by the record's writer, and by
// json.Marshal as the record was written before it, the baseline.
func BenchmarkRecord(b *testing.B) {
	at := time.Date(2026, 12, 6, 19, 25, 55, 653646798, time.UTC)
	call := store.LLMCall{Provider: "fake", Model: "fake-model", Operation: "loop", Strategy: "balanced", Attempt: "first",
		InputTokens: 208, OutputTokens: 18, CostUSD: 0.000019960000000000002, DurationMS: 3, Status: "ok", At: at}
	tr := &Trace{TurnID: "1a24cd1ec458a022db09012f222", ConversationID: "conc-0-13-2", Tenant: "bench", UserID: "u1",
		Channel: "peers", Route: RouteModel, Status: StatusOK, StartedAt: at, DurationMS: 27, Fence: 498,
		PromptMessages: 1, PromptBytes: 355, LLMCalls: []store.LLMCall{call, call}, DecidedBy: &DecidedBy{"fake", "fake-model"},
		CostUSD: 0.00004127, Decision: json.RawMessage(`null`), Vetoes: []Veto{}, Say: "Done: card created",
		Executed: []ExecutionTrace{{Tool: "create_task", Args: json.RawMessage(`{"assignee":"Dmitry","title":"Check signup form"}`),
			IdempotencyKey: "w:5456dcce583a25e4e1751c323278f669:1", Status: "ok",
			Result: &tool.Result{Status: tool.StatusOK, Data: json.RawMessage(`{"ok":true,"id":"c1"}`), ObservedAt: at}}},
	}
	for _, name := range []string{"route", "lock", "load_memory", "assemble", "decide:loop", "guard:create_task", "execute:create_task", "decide:loop"} {
		tr.Steps = append(tr.Steps, StepTrace{Name: name, At: at})
	}
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal((*traceFields)(tr)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("writer", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := tr.encode(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
