package turn

import (
	"context"
	"strings"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/store"
)

// assemble builds the model request: the catalog's stable system prompt,
// the live context, and the remembered conversation with this turn's
// messages last, within the memory window.
func (e *Engine) assemble(ctx context.Context, s *state) []llm.Message {
	start := e.cfg.Now()
	live := e.liveContext(ctx, s)
	history := s.conv.Messages
	if len(s.added) > 0 {
		history = append(append([]store.Message(nil), history...), s.added...)
	}
	if len(history) > e.cfg.Memory.Window {
		history = history[len(history)-e.cfg.Memory.Window:]
	}
	msgs := make([]llm.Message, 0, len(history)+2)
	msgs = append(msgs, llm.Message{Role: llm.RoleSystem, Content: s.cat.prompt}, llm.Message{Role: llm.RoleSystem, Content: live})
	for _, m := range history {
		msgs = append(msgs, renderMessage(m))
	}
	s.trace.PromptMessages = len(history)
	s.trace.step("assemble", e.cfg.Now().Sub(start), "")
	return msgs
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
		b.WriteString(">\n" + neutralize(m.Text, "evidence") + "\n</evidence>")
		return llm.Message{Role: llm.RoleUser, Content: b.String()}
	case store.RoleTool:
		return llm.Message{Role: llm.RoleUser, Content: `<tool_result tool="` + attr(m.Name) + `">` + "\n" + neutralize(m.Text, "tool_result") + "\n</tool_result>"}
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

// blockReplacers keep data from closing (or opening) its own block.
var blockReplacers = map[string]*strings.Replacer{
	"evidence":    strings.NewReplacer("</evidence", "<\\/evidence", "<evidence", "‹evidence"),
	"tool_result": strings.NewReplacer("</tool_result", "<\\/tool_result", "<tool_result", "‹tool_result"),
}

func neutralize(text, tag string) string {
	if !strings.Contains(text, "<") {
		return text
	}
	return blockReplacers[tag].Replace(text)
}
