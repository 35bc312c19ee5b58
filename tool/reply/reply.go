// Package reply builds what a tool answers a call with — the built-in
// tools use it, and a tool of one's own can: the
// tool.Result of each status (ok, error, not found, ambiguous), stamped
// with the tool's source and clock; texts in the caller's language (Tr);
// the caller's time zone for the times a reply shows (Location); and the
// failures every tool gives for arguments that do not decode, exceed a
// length limit or a listing's limit, or carry an idempotency key already
// used for another action.
//
// It holds only those shared messages. What each tool says about its own
// actions, and how it reports its own storage or API failures, stays in
// the tool's package.
//
// Every function and method here is safe for concurrent use.
package reply

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/tool"
)

// English reports whether replies to c are in English — every language
// but Russian, by the one rule (chat.Language).
func English(c tool.Caller) bool {
	return chat.Language(c.Language) != "ru"
}

// Tr returns ru for a caller who reads Russian and en for everyone else.
func Tr(c tool.Caller, ru, en string) string {
	if English(c) {
		return en
	}
	return ru
}

// Location is the caller's time zone, UTC when it is unset or unknown.
// Loaded zones are cached for the life of the process. It is safe for
// concurrent use.
func Location(c tool.Caller) *time.Location {
	if c.Timezone == "" {
		return time.UTC
	}
	if loc, ok := zones.Load(c.Timezone); ok {
		return loc.(*time.Location)
	}
	loc, err := time.LoadLocation(c.Timezone)
	if err != nil {
		loc = time.UTC
	}
	zones.Store(c.Timezone, loc)
	return loc
}

// zones caches loaded time zones: loading one reads the zone database.
var zones sync.Map

// Builder makes the Results of one tool: each carries Source and the time
// of Now. A Builder is a value that is not changed after it is made; it is
// safe for concurrent use when Now is.
type Builder struct {
	// Source is the Result.Source of every Result.
	Source string
	// Now is the clock of Result.ObservedAt. Required.
	Now func() time.Time
	// EncodeFailure is the text of the error Result OK returns when its
	// data cannot be encoded as JSON.
	EncodeFailure string
}

// OK is a successful Result with data encoded compactly.
func (b Builder) OK(data any, text string) tool.Result {
	return b.WithStatus(tool.StatusOK, data, text)
}

// WithStatus is a Result with status and data encoded compactly; data that
// cannot be encoded gives an error Result instead.
func (b Builder) WithStatus(status tool.Status, data any, text string) tool.Result {
	raw, err := json.Marshal(data)
	if err != nil {
		return b.Failure("", "encode result: "+err.Error(), b.EncodeFailure)
	}
	return tool.Result{Status: status, Data: raw, Text: text, Source: b.Source, ObservedAt: b.Now()}
}

// Failure is a Result with StatusError: errText for the model and the
// journal, human (in the caller's language) for the reply. field names
// the argument at fault, "" for none.
func (b Builder) Failure(field, errText, human string) tool.Result {
	return tool.Result{Status: tool.StatusError, Error: errText, Text: human, Field: field, Source: b.Source, ObservedAt: b.Now()}
}

// NotFound is a Result with StatusNotFound for argument field.
func (b Builder) NotFound(field, text string) tool.Result {
	return tool.Result{Status: tool.StatusNotFound, Text: text, Field: field, Source: b.Source, ObservedAt: b.Now()}
}

// Ambiguous is a Result with StatusAmbiguous for argument field, offering
// candidates.
func (b Builder) Ambiguous(field, text string, candidates []string) tool.Result {
	return tool.Result{Status: tool.StatusAmbiguous, Text: text, Field: field, Candidates: candidates, Source: b.Source, ObservedAt: b.Now()}
}

// KeyReused is the failure for an idempotency key that was already used
// for action other, not for action.
func (b Builder) KeyReused(c tool.Caller, key, other, action string) tool.Result {
	return b.Failure("", fmt.Sprintf("idempotency key %q was already used for %s, not %s", key, other, action),
		Tr(c, "Это действие уже выполнялось как другое; повтор отклонён.", "This action key was already used for another action; refused."))
}

// DecodeArgs decodes call.Args into v strictly: unknown fields and data
// after the object are rejected; empty or null arguments decode as {}. A
// failure is returned as an error Result, nil on success.
func (b Builder) DecodeArgs(call tool.Call, v any) *tool.Result {
	raw := bytes.TrimSpace(call.Args)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	if string(raw) == "{}" && isPlainStructPointer(v) {
		return nil // {} sets no field of a struct: nothing to decode
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			err = errors.New("trailing data after the arguments object")
		}
	}
	if err != nil {
		r := b.Failure("", "invalid arguments: "+err.Error(),
			Tr(call.Caller, "Некорректные аргументы действия.", "Invalid action arguments."))
		return &r
	}
	return nil
}

// isPlainStructPointer reports whether v points to a struct that decodes
// itself by its fields (no UnmarshalJSON of its own).
func isPlainStructPointer(v any) bool {
	if _, custom := v.(json.Unmarshaler); custom {
		return false
	}
	t := reflect.TypeOf(v)
	return t != nil && t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct && !reflect.ValueOf(v).IsNil()
}

// Limit is an argument value with its name and its limit in characters,
// as MaxLen makes it, checked by CheckFields. It is an immutable value,
// safe for concurrent use.
type Limit struct {
	name  string
	value string
	max   int
}

// MaxLen is the Limit of at most max characters for argument name holding
// value.
func MaxLen(name, value string, max int) Limit { return Limit{name, value, max} }

// CheckFields returns an error Result for the first value longer than its
// limit, nil when all fit.
func (b Builder) CheckFields(c tool.Caller, limits ...Limit) *tool.Result {
	for _, f := range limits {
		if n := utf8.RuneCountInString(f.value); n > f.max {
			r := b.Failure(f.name, fmt.Sprintf("%s is %d characters, more than the limit of %d", f.name, n, f.max),
				Tr(c, fmt.Sprintf("Поле %s слишком длинное (%d символов, максимум %d).", f.name, n, f.max),
					fmt.Sprintf("The %s is too long (%d characters, at most %d).", f.name, n, f.max)))
			return &r
		}
	}
	return nil
}

// CheckLen is CheckFields for one value.
func (b Builder) CheckLen(c tool.Caller, name, value string, max int) *tool.Result {
	return b.CheckFields(c, MaxLen(name, value, max))
}

// CheckLimit reads the optional "limit" argument of a listing: def when it
// is absent, else the given number, which must be from 1 to max. A number
// out of range is returned as an error Result.
func (b Builder) CheckLimit(c tool.Caller, p *int, def, max int) (int, *tool.Result) {
	limit := def
	if p != nil {
		limit = *p
	}
	if limit < 1 || limit > max {
		r := b.Failure("limit", fmt.Sprintf("limit %d is outside 1..%d", limit, max),
			Tr(c, fmt.Sprintf("Лимит должен быть от 1 до %d.", max), fmt.Sprintf("The limit must be 1 to %d.", max)))
		return 0, &r
	}
	return limit, nil
}

// Opt reads an optional string argument: null, absent and blank all mean
// "not given", "". Other values come back trimmed.
func Opt(p *string) string {
	if p == nil {
		return ""
	}
	return strings.TrimSpace(*p)
}
