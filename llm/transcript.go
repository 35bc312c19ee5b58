package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// CheckMessages reports the first reason the APIs would refuse msgs as a
// transcript, or nil: a role other than the four, tool calls on a message
// that is not the assistant's, a call without an ID or name or whose
// arguments are not a JSON object, an ID used twice, a tool message that
// does not answer a call of the assistant message right before it (only
// other tool messages may come between), a call left unanswered, and
// images off a user message or of a type not in ImageTypes.
// Providers check this before sending, so a wrong transcript costs no call.
// Call IDs a model gave are its provider's, and a provider may use one
// again later in a conversation: whoever adds a model's calls to a
// transcript gives them IDs of the transcript first (UniqueCallIDs), so
// what this refuses is only what the caller built wrong.
func CheckMessages(msgs []Message) error {
	var open map[string]bool // calls of the last assistant message not yet answered
	seen := map[string]bool{}
	for i := range msgs {
		m := &msgs[i]
		if m.Role != RoleTool && len(open) > 0 {
			return fmt.Errorf("message %d: tool call %q has no result before it", i, firstKey(open))
		}
		switch m.Role {
		case RoleSystem, RoleUser, RoleAssistant, RoleTool:
		default:
			return fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
		if len(m.ToolCalls) > 0 && m.Role != RoleAssistant {
			return fmt.Errorf("message %d: only an assistant message carries tool calls", i)
		}
		if m.Role != RoleTool && (m.ToolCallID != "" || m.IsError) {
			return fmt.Errorf("message %d: only a tool message answers a tool call", i)
		}
		if err := checkImages(m); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		switch m.Role {
		case RoleAssistant:
			if len(m.ToolCalls) > 0 {
				open = make(map[string]bool, len(m.ToolCalls))
			}
			for j, c := range m.ToolCalls {
				switch {
				case c.ID == "":
					return fmt.Errorf("message %d: tool call %d has no ID", i, j)
				case c.Name == "":
					return fmt.Errorf("message %d: tool call %q has no name", i, c.ID)
				case seen[c.ID]:
					return fmt.Errorf("message %d: tool call ID %q is used twice", i, c.ID)
				case len(c.Arguments) > 0 && !isJSONObject(c.Arguments):
					return fmt.Errorf("message %d: tool call %q: arguments are not a JSON object", i, c.ID)
				}
				seen[c.ID] = true
				open[c.ID] = true
			}
		case RoleTool:
			switch {
			case m.ToolCallID == "":
				return fmt.Errorf("message %d: tool message without a tool call ID", i)
			case !open[m.ToolCallID]:
				return fmt.Errorf("message %d: tool message answers %q, which is not an unanswered call of the assistant message before it", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		}
	}
	if len(open) > 0 {
		return fmt.Errorf("tool call %q has no result", firstKey(open))
	}
	return nil
}

// CheckToolChoice reports why c cannot be sent with tools, or nil.
func CheckToolChoice(c ToolChoice, tools []ToolDef) error {
	switch c.Mode {
	case "", ToolAuto, ToolRequired, ToolNone:
		if c.Name != "" {
			return fmt.Errorf("tool choice %q names a tool", c.Mode)
		}
		return nil
	case ToolNamed:
		for i := range tools {
			if tools[i].Name == c.Name {
				return nil
			}
		}
		return fmt.Errorf("tool choice names %q, which is not an offered tool", c.Name)
	}
	return fmt.Errorf("unknown tool choice %q", c.Mode)
}

// HasToolTranscript reports whether msgs hold a tool call or result, which
// the cheap encoders of the single-decision path do not need to handle.
func HasToolTranscript(msgs []Message) bool {
	for i := range msgs {
		if msgs[i].Role == RoleTool || len(msgs[i].ToolCalls) > 0 {
			return true
		}
	}
	return false
}

// isJSONObject reports whether b is one JSON object: valid JSON whose
// first token is a brace, checked without decoding it.
func isJSONObject(b json.RawMessage) bool {
	t := bytes.TrimLeft(b, " \t\r\n")
	return len(t) > 0 && t[0] == '{' && json.Valid(b)
}

// firstKey returns a key of m, the smallest, so messages are stable.
func firstKey(m map[string]bool) string {
	first := ""
	for k := range m {
		if first == "" || k < first {
			first = k
		}
	}
	return first
}

// UniqueCallIDs returns calls, the tool calls of a model's answer about to
// join msgs, with IDs unique within the transcript: a call keeps the ID
// its provider gave it unless an earlier message or an earlier call of the
// answer holds it already, or it has none. A new ID keeps the old one's
// length and characters where it can (the last characters replaced by a
// base-36 counter), so it still fits an API that constrains IDs' form;
// a call without one gets "call_N", N its position counting from 1. calls
// itself is never modified: when an ID changes, the result is a copy, and
// the caller maps an ID of the transcript back to the provider's by the
// position of its call.
func UniqueCallIDs(msgs []Message, calls []ToolCall) []ToolCall {
	used := map[string]bool{}
	for i := range msgs {
		for _, c := range msgs[i].ToolCalls {
			used[c.ID] = true
		}
	}
	// The answer's own first uses are reserved before any new ID is made,
	// so that a new ID never takes one a later call of the answer keeps.
	keep := make([]bool, len(calls))
	changed := false
	for i, c := range calls {
		if keep[i] = c.ID != "" && !used[c.ID]; keep[i] {
			used[c.ID] = true
		} else {
			changed = true
		}
	}
	if !changed {
		return calls
	}
	out := make([]ToolCall, len(calls))
	copy(out, calls)
	for i := range out {
		if keep[i] {
			continue
		}
		out[i].ID = freshCallID(out[i].ID, i, used)
		used[out[i].ID] = true
	}
	return out
}

// freshCallID makes an ID not in used: from orig, the provider's, with its
// last characters replaced by a counter, or "call_<i+1>" and its variants
// when orig is empty.
func freshCallID(orig string, i int, used map[string]bool) string {
	if orig == "" {
		orig = "call_" + strconv.Itoa(i+1)
		if !used[orig] {
			return orig
		}
	}
	for n := int64(1); ; n++ {
		suffix := strconv.FormatInt(n, 36)
		id := orig + suffix
		if len(orig) > len(suffix) {
			id = orig[:len(orig)-len(suffix)] + suffix
		}
		if !used[id] {
			return id
		}
	}
}

// ImageTypes are the media types of images a model may be sent.
var ImageTypes = []string{"image/jpeg", "image/png", "image/gif", "image/webp"}

// checkImages reports images on a message that is not the user's, or of a
// type models do not take.
func checkImages(m *Message) error {
	if len(m.Images) > 0 && m.Role != RoleUser {
		return errors.New("only a user message carries images")
	}
	for j, img := range m.Images {
		if !slices.Contains(ImageTypes, img.MediaType) {
			return fmt.Errorf("image %d: media type %q is not one of %s", j, img.MediaType, strings.Join(ImageTypes, ", "))
		}
		if len(img.Data) == 0 {
			return fmt.Errorf("image %d is empty", j)
		}
	}
	return nil
}
