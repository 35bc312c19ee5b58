package turn

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/store"
)

// assemble builds the model request in the order provider prompt caches
// reward: the catalog's system prompt (byte-identical for every turn of the
// same kind of caller), then the remembered conversation (which only grows
// at its end between turns), then the live context and this turn's
// messages, which change every turn. At most Window messages of
// conversation go in, this turn's included.
func (e *Engine) assemble(ctx context.Context, s *state) []llm.Message {
	start := e.cfg.Now()
	live := e.liveContext(ctx, s)
	history, current := s.conv.Messages, s.added
	window := s.memory.Window
	if len(current) > window {
		current = current[len(current)-window:]
	}
	if keep := window - len(current); len(history) > keep {
		history = history[len(history)-keep:]
	}
	msgs := make([]llm.Message, 0, len(history)+len(current)+2)
	prompt := s.cat.prompts.System
	if s.cat.prompts.Native != "" && llm.ProtocolOf(s.model) == llm.ProtocolTools {
		prompt = s.cat.prompts.Native // the contract and the catalog travel as tool definitions
	}
	msgs = append(msgs, llm.Message{Role: llm.RoleSystem, Content: prompt})
	for _, m := range history {
		msgs = append(msgs, renderMessage(m, blockMarkerFor(s, m)))
	}
	if live != "" {
		msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: "<live_context>\n" + live + "</live_context>"})
	}
	from := len(s.added) - len(current)
	for i, m := range current {
		msg := renderMessage(m, blockMarkerFor(s, m))
		if img, ok := s.addedImages[from+i]; ok {
			msg.Images = []llm.Image{img} // this turn's picture, shown once
		}
		msgs = append(msgs, msg)
	}
	s.viewed = [2][]store.Message{history, current}
	s.trace.PromptMessages = len(history) + len(current)
	e.measurePrefix(s, msgs)
	s.trace.step(StepAssemble, "", start, e.cfg.Now(), "")
	return msgs
}

// prefixSlot keeps, in the conversation's state, a fingerprint of the last
// prompt: one hash and length per message, as one JSON string
// "<hash hex>:<length> …" — read and written every turn, so kept cheaper
// than an object of arrays (which older conversations may still hold).
const prefixSlot = "prompt_fingerprint"

// oldFingerprint is the earlier form of the slot.
type oldFingerprint struct {
	Hashes  []uint64 `json:"h"`
	Lengths []int    `json:"n"`
}

// measurePrefix records how many bytes of this prompt repeat the previous
// prompt of the conversation from its start — what a provider's prompt
// cache can reuse — and remembers this prompt's fingerprint.
func (e *Engine) measurePrefix(s *state, msgs []llm.Message) {
	prev := previousFingerprint(s.conv.Slots[prefixSlot])
	buf := make([]byte, 0, 2+len(msgs)*24)
	buf = append(buf, '"')
	total, stable, same := 0, 0, true
	for i, m := range msgs {
		h := messageHash(m)
		if same && i < len(prev) && prev[i].hash == h && prev[i].length == len(m.Content) {
			stable += len(m.Content)
		} else {
			same = false
		}
		total += len(m.Content)
		if i > 0 {
			buf = append(buf, ' ')
		}
		buf = strconv.AppendUint(buf, h, 16)
		buf = append(buf, ':')
		buf = strconv.AppendInt(buf, int64(len(m.Content)), 10)
	}
	buf = append(buf, '"')
	s.trace.PromptBytes, s.trace.StablePrefixBytes = total, stable
	if total > 0 {
		s.trace.StablePrefixRatio = float64(stable) / float64(total)
	}
	if s.conv.Slots == nil {
		s.conv.Slots = map[string]json.RawMessage{}
	}
	s.conv.Slots[prefixSlot] = buf
}

type printEntry struct {
	hash   uint64
	length int
}

// previousFingerprint reads the slot in either form; nil when absent or
// unreadable (the prompt then counts as new).
func previousFingerprint(raw json.RawMessage) []printEntry {
	if len(raw) > 0 && raw[0] == '{' {
		var old oldFingerprint
		if json.Unmarshal(raw, &old) != nil || len(old.Hashes) != len(old.Lengths) {
			return nil
		}
		out := make([]printEntry, len(old.Hashes))
		for i := range old.Hashes {
			out[i] = printEntry{old.Hashes[i], old.Lengths[i]}
		}
		return out
	}
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil
	}
	body := string(raw[1 : len(raw)-1])
	out := make([]printEntry, 0, strings.Count(body, " ")+1)
	for f := range strings.FieldsSeq(body) {
		hx, n, ok := strings.Cut(f, ":")
		h, err1 := strconv.ParseUint(hx, 16, 64)
		l, err2 := strconv.Atoi(n)
		if !ok || err1 != nil || err2 != nil {
			return nil
		}
		out = append(out, printEntry{h, l})
	}
	return out
}

// messageHash is the 64-bit FNV-1a hash of a message's role, a zero byte
// and its content, computed without copying them.
func messageHash(m llm.Message) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(m.Role); i++ {
		h = (h ^ uint64(m.Role[i])) * prime
	}
	h *= prime // the zero byte
	for i := 0; i < len(m.Content); i++ {
		h = (h ^ uint64(m.Content[i])) * prime
	}
	return h
}

// renderMessage maps a remembered message onto a chat message. Evidence
// and tool results go in labelled blocks whose tags carry the
// conversation's marker (see blockMarker); their text can neither close
// the block early nor hold the marker.
func renderMessage(m store.Message, marker string) llm.Message {
	switch m.Role {
	case store.RoleAssistant:
		return llm.Message{Role: llm.RoleAssistant, Content: m.Text}
	case store.RoleEvidence:
		var b strings.Builder
		b.WriteString(`<evidence` + marker + ` kind="` + attr(m.Name) + `"`)
		if m.Source != "" {
			b.WriteString(` source="` + attr(m.Source) + `"`)
		}
		b.WriteString(">\n" + fence(m.Text, marker) + "\n</evidence" + marker + ">")
		return llm.Message{Role: llm.RoleUser, Content: b.String()}
	case store.RoleTool:
		return llm.Message{Role: llm.RoleUser, Content: toolResultBlock(m.Name, m.Text, marker)}
	}
	return llm.Message{Role: llm.RoleUser, Content: m.Text}
}

// toolResultBlock is a tool's result as text for the model, in a block
// marked like evidence.
func toolResultBlock(name, text, marker string) string {
	return `<tool_result` + marker + ` tool="` + attr(name) + `">` + "\n" + fence(text, marker) + "\n</tool_result" + marker + ">"
}

// blockMarkerSlot keeps a conversation's block marker.
const blockMarkerSlot = "block_marker"

// blockMarker returns the conversation's random suffix of the data blocks'
// tags ("-k3f9q2xa"), made on first use and kept with the conversation:
// content of others cannot know it, so it cannot forge a block's end or
// a block of another kind, and the blocks already in the prompt stay the
// same turn after turn (a marker per turn would change every earlier
// block and lose the provider's prompt cache).
func blockMarker(s *state) string {
	if s.blockMarker != "" {
		return s.blockMarker
	}
	if raw := s.conv.Slots[blockMarkerSlot]; len(raw) > 2 && raw[0] == '"' {
		s.blockMarker = string(raw[1 : len(raw)-1])
		return s.blockMarker
	}
	var b [5]byte
	_, _ = rand.Read(b[:])
	s.blockMarker = "-" + strings.ToLower(base32.StdEncoding.EncodeToString(b[:]))
	setSlot(s, blockMarkerSlot, s.blockMarker)
	return s.blockMarker
}

// blockMarkerFor is the marker for m's block, made only when m goes in
// one: a conversation of the user's words alone never needs it.
func blockMarkerFor(s *state, m store.Message) string {
	if m.Role != store.RoleEvidence && m.Role != store.RoleTool {
		return ""
	}
	return blockMarker(s)
}

// fence is text of others made safe inside a marked block: no block tag
// can open or close in it, and the marker, should it appear, is masked.
func fence(text, marker string) string {
	text = neutralize(text)
	if marker == "" {
		return text
	}
	word := marker[1:]
	i := indexFold(text, word)
	if i < 0 {
		return text
	}
	var b strings.Builder
	for i >= 0 {
		b.WriteString(text[:i] + strings.Repeat("*", len(word)))
		text = text[i+len(word):]
		i = indexFold(text, word)
	}
	b.WriteString(text)
	return b.String()
}

// indexFold is the index of the first occurrence of the ASCII word in
// text, in any letter case, or -1.
func indexFold(text, word string) int {
	first, upper := word[0], word[0]
	if 'a' <= first && first <= 'z' {
		upper = first - 'a' + 'A'
	}
	for i := 0; i+len(word) <= len(text); i++ {
		if c := text[i]; (c == first || c == upper) && strings.EqualFold(text[i:i+len(word)], word) {
			return i
		}
	}
	return -1
}

var attrReplacer = strings.NewReplacer(`"`, "'", "<", "‹", ">", "›", "\n", " ")

func attr(s string) string {
	if !strings.ContainsAny(s, "\"<>\n") {
		return s
	}
	return attrReplacer.Replace(s)
}

// blockTags name the prompt's blocks; data never opens or closes one.
var blockTags = [...]string{"live_context", "context_data", "evidence", "tool_result"}

// neutralize shows as "‹" every "<" of text that would start a tag of a
// prompt block — in any letter case, with a slash or spaces before the
// name ("</EVIDENCE>", "< /tool_result") — so data cannot end its own block
// or open another.
func neutralize(text string) string {
	if !strings.Contains(text, "<") {
		return text
	}
	var b strings.Builder
	b.Grow(len(text) + 8)
	for i := 0; i < len(text); i++ {
		if text[i] == '<' && startsBlockTag(text[i+1:]) {
			b.WriteString("‹")
			continue
		}
		b.WriteByte(text[i])
	}
	return b.String()
}

func startsBlockTag(s string) bool {
	s = strings.TrimLeft(s, " \t\r\n/")
	for _, tag := range blockTags {
		if len(s) >= len(tag) && strings.EqualFold(s[:len(tag)], tag) {
			return true
		}
	}
	return false
}
