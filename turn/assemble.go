package turn

import (
	"context"
	"hash/fnv"
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
	prompt := s.cat.prompt
	if s.cat.toolsPrompt != "" && llm.ProtocolOf(s.model) == llm.ProtocolTools {
		prompt = s.cat.toolsPrompt // the contract and the catalog travel as tool definitions
	}
	msgs = append(msgs, llm.Message{Role: llm.RoleSystem, Content: prompt})
	for _, m := range history {
		msgs = append(msgs, renderMessage(m))
	}
	msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: "<live_context>\n" + live + "</live_context>"})
	for _, m := range current {
		msgs = append(msgs, renderMessage(m))
	}
	s.viewed = [2][]store.Message{history, current}
	s.trace.PromptMessages = len(history) + len(current)
	e.measurePrefix(s, msgs)
	s.trace.step(StepAssemble, "", start, e.cfg.Now(), "")
	return msgs
}

// prefixSlot keeps, in the conversation's state, a fingerprint of the last
// prompt: one hash and length per message.
const prefixSlot = "prompt_fingerprint"

type fingerprint struct {
	Hashes  []uint64 `json:"h"`
	Lengths []int    `json:"n"`
}

// measurePrefix records how many bytes of this prompt repeat the previous
// prompt of the conversation from its start — what a provider's prompt
// cache can reuse — and remembers this prompt's fingerprint.
func (e *Engine) measurePrefix(s *state, msgs []llm.Message) {
	cur := fingerprint{Hashes: make([]uint64, len(msgs)), Lengths: make([]int, len(msgs))}
	total := 0
	for i, m := range msgs {
		h := fnv.New64a()
		h.Write([]byte(m.Role))
		h.Write([]byte{0})
		h.Write([]byte(m.Content))
		cur.Hashes[i], cur.Lengths[i] = h.Sum64(), len(m.Content)
		total += len(m.Content)
	}
	var prev fingerprint
	getSlot(s, prefixSlot, &prev)
	stable := 0
	for i := 0; i < len(cur.Hashes) && i < len(prev.Hashes) && cur.Hashes[i] == prev.Hashes[i]; i++ {
		stable += cur.Lengths[i]
	}
	s.trace.PromptBytes, s.trace.StablePrefixBytes = total, stable
	if total > 0 {
		s.trace.StablePrefixRatio = float64(stable) / float64(total)
	}
	setSlot(s, prefixSlot, &cur)
}

// renderMessage maps a remembered message onto a chat message. Evidence
// and tool results go in labelled blocks; their text cannot close the
// block early.
func renderMessage(m store.Message) llm.Message {
	switch m.Role {
	case store.RoleAssistant:
		return llm.Message{Role: llm.RoleAssistant, Content: m.Text}
	case store.RoleEvidence:
		var b strings.Builder
		b.WriteString(`<evidence kind="` + attr(m.Name) + `"`)
		if m.Source != "" {
			b.WriteString(` source="` + attr(m.Source) + `"`)
		}
		b.WriteString(">\n" + neutralize(m.Text) + "\n</evidence>")
		return llm.Message{Role: llm.RoleUser, Content: b.String()}
	case store.RoleTool:
		return llm.Message{Role: llm.RoleUser, Content: `<tool_result tool="` + attr(m.Name) + `">` + "\n" + neutralize(m.Text) + "\n</tool_result>"}
	}
	return llm.Message{Role: llm.RoleUser, Content: m.Text}
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
