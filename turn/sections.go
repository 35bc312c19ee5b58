package turn

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/arbiterhq/arbiter/internal/jsonstr"
)

// Sections are the modes' own parts of a turn's record, by the mode's
// name. Each is written at the record's top level beside the engine's
// keys ({"turn_id":…,"tally":{…}}), so a mode from outside the engine
// journals the way a built-in one does, and the record reads the same
// whichever package a mode lives in. A section is encoded when the
// record is: a pointer the mode goes on filling records its last state.
// Read from JSON, a section is its raw text (Trace.Section decodes it).
type Sections map[ModeName]any

// traceFields is Trace without its methods: what encoding/json writes of
// the engine's own keys.
type traceFields Trace

// recordKeys are the top-level keys of the engine's own part of a record,
// which no mode may be named after.
var recordKeys = sync.OnceValue(func() map[string]bool {
	keys := map[string]bool{}
	rt := reflect.TypeFor[traceFields]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			keys[name] = true
		}
	}
	return keys
})

// MarshalJSON writes the record with its modes' sections at the top
// level, in the order of their names.
func (t *Trace) MarshalJSON() ([]byte, error) { return t.encode() }

// encode is MarshalJSON: the engine's keys (appendRecord), then the
// modes' sections, into one buffer of the last record's size.
func (t *Trace) encode() ([]byte, error) {
	b, err := appendRecord(make([]byte, 0, lastTraceSize.Load()+traceSlack), t)
	if err != nil {
		return nil, err
	}
	if len(t.Sections) > 0 {
		b = b[:len(b)-1] // the engine's closing brace
		for _, name := range t.sectionNames() {
			section, err := json.Marshal(t.Sections[name])
			if err != nil {
				return nil, fmt.Errorf("section of mode %s: %w", name, err)
			}
			b = append(jsonstr.AppendMarshaled(append(b, ','), string(name)), ':')
			b = append(b, section...)
		}
		b = append(b, '}')
	}
	lastTraceSize.Store(int64(len(b)))
	return b, nil
}

// lastTraceSize is the size of the record encoded last: records of one
// deployment are much alike, so the next one's buffer is sized from it,
// with traceSlack for one that is a little longer.
var lastTraceSize atomic.Int64

const traceSlack = 512

// sectionNames are the sections' names in order (a record mostly has
// one: the mode's that took the turn).
func (t *Trace) sectionNames() []ModeName {
	if len(t.Sections) == 1 {
		for name := range t.Sections {
			return []ModeName{name}
		}
	}
	return slices.Sorted(maps.Keys(t.Sections))
}

// UnmarshalJSON reads a record: the keys the engine does not know are
// the modes' sections, kept as their raw text.
func (t *Trace) UnmarshalJSON(data []byte) error {
	if err := json.Unmarshal(data, (*traceFields)(t)); err != nil {
		return err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return err
	}
	for key, raw := range top {
		if !recordKeys()[key] {
			if t.Sections == nil {
				t.Sections = Sections{}
			}
			t.Sections[ModeName(key)] = raw
		}
	}
	return nil
}

// Section decodes the section of mode name into v: false when the record
// has none, or it does not decode into v.
func (t *Trace) Section(name ModeName, v any) bool {
	section, ok := t.Sections[name]
	if !ok {
		return false
	}
	raw, ok := section.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(section); err != nil {
			return false
		}
	}
	return json.Unmarshal(raw, v) == nil
}

// checkModeNames refuses a mode named after a key of the engine's record,
// where its section would overwrite the engine's own.
func checkModeNames(modes Modes) error {
	for name := range modes {
		if recordKeys()[string(name)] {
			return fmt.Errorf("turn: mode %q is named after a key of the turn's record; name it otherwise", name)
		}
	}
	return nil
}
