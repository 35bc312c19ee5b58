package turn

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/store"
)

// The router's deterministic rules, each added after a real complaint and
// named in the turn's record. Intercepts decide before the model; guards
// veto the model's calls after it. Adding one is a function and a row.

// intercepts are the pre-model rules by name. Each reports whether it
// took the turn.
var intercepts = map[string]func(e *Engine, ctx context.Context, s *state, skill string) bool{
	// A reply to a skill's question goes straight to the skill ("3
	// годика", "второй день, 37,5" used to start new tasks).
	"skill_interview": (*Engine).interceptSkillInterview,
	// While a generation mode is on, the text is its prompt.
	"generation": (*Engine).interceptGeneration,
	// With a file open, an unambiguous edit goes to the edit tool.
	"open_document": (*Engine).interceptOpenDocument,
	// With a photo attached, «сделай меня у Эйфелевой башни» is an image
	// to draw, not a photo to describe.
	"photo": (*Engine).interceptPhoto,
}

// imageMode is the generation mode whose tool draws (Router.Generation);
// the photo intercept hands it the photo too.
const imageMode = "image"

func (e *Engine) interceptPhoto(ctx context.Context, s *state, skill string) bool {
	name := s.assistant.Router.Generation[imageMode]
	i := slices.IndexFunc(s.in.Evidence, chat.Evidence.IsImage)
	if name == "" || i < 0 || !s.assistant.Router.Words.PhotoScene(s.route.input) {
		return false
	}
	args, _ := json.Marshal(map[string]any{"prompt": s.route.input, "photo": attachmentOf(s.in.Evidence[i])})
	e.runFixedCall(ctx, s, callRequest{guard: "photo", name: name, args: args})
	return true
}

func (e *Engine) interceptSkillInterview(ctx context.Context, s *state, skill string) bool {
	text := s.route.input
	if skill == "" || utf8.RuneCountInString(text) >= interviewReplyRunes || s.assistant.Router.Words.Marker(text) || !lastAskedQuestion(s) {
		return false
	}
	e.answer(ctx, s, skill)
	return true
}

// lastAskedQuestion reports whether the assistant's last message ended
// with a question.
func lastAskedQuestion(s *state) bool {
	for i := len(s.conv.Messages) - 1; i >= 0; i-- {
		if m := s.conv.Messages[i]; m.Role == store.RoleAssistant {
			return strings.HasSuffix(strings.TrimSpace(m.Text), "?")
		}
	}
	return false
}

func (e *Engine) interceptGeneration(ctx context.Context, s *state, skill string) bool {
	c := s.in.Client
	if c == nil || c.ActiveMode == "" {
		return false
	}
	name, ok := s.assistant.Router.Generation[c.ActiveMode]
	if !ok {
		return false
	}
	args, _ := json.Marshal(map[string]string{"prompt": s.route.input})
	e.runFixedCall(ctx, s, callRequest{guard: "generation", name: name, args: args})
	return true
}

func (e *Engine) interceptOpenDocument(ctx context.Context, s *state, skill string) bool {
	r, c := s.assistant.Router, s.in.Client
	if r.EditTool == "" || c == nil || c.OpenDocument == "" || !r.Words.EditRequest(s.route.input) {
		return false
	}
	args, _ := json.Marshal(map[string]string{"document": c.OpenDocument, "change": s.route.input})
	e.runFixedCall(ctx, s, callRequest{guard: "open_document", name: r.EditTool, args: args})
	return true
}

// guards are the post-model rules by name: each says why a call is
// vetoed, or "".
var guards = map[string]func(s *state, c llm.ToolCall) string{
	// "где купить запчасти на запорожец" turned into random product cards.
	"info_question": func(s *state, c llm.ToolCall) string {
		if ok, why := s.assistant.Router.Words.InfoQuestion(s.route.input); ok {
			return "an information question (" + why + "), not a product search"
		}
		return ""
	},
	// A sell card for someone who is buying.
	"buying": func(s *state, c llm.ToolCall) string {
		if s.assistant.Router.Words.Buying(s.route.input) {
			return "the user is buying, not selling"
		}
		return ""
	},
	// "какую конфигурацию ПК собрать" grew a step "пишу статью".
	"creation": func(s *state, c llm.ToolCall) string {
		if !s.assistant.Router.Words.CreationRequest(s.route.input) && !editingDraft(s) {
			return "no creation verb with a content noun in the request"
		}
		return ""
	},
	// A goal, a filter or a segment is a setting of the counter; a
	// question about its figures is not («сколько визитов» changed no
	// setting).
	"settings_request": func(s *state, c llm.ToolCall) string {
		if !s.assistant.Router.Words.SettingsRequest(s.route.input) {
			return "the request names no goal, filter or segment: figures, not a setting"
		}
		return ""
	},
	// Going round in circles.
	"repeated_call": func(s *state, c llm.ToolCall) string {
		if doneBefore(s, c.Name, c.Arguments) {
			return "the same call succeeded before in this chat"
		}
		return ""
	},
	// Deleting a goal or a filter only on an explicit request.
	"explicit_delete": func(s *state, c llm.ToolCall) string {
		if !s.assistant.Router.Words.DeleteRequest(s.route.input) {
			return "no explicit request to delete"
		}
		return ""
	},
	// "добавь цель в Метрике" wrote into someone's open table.
	"named_document": func(s *state, c llm.ToolCall) string {
		var a struct {
			Document string `json:"document"`
		}
		_ = json.Unmarshal(c.Arguments, &a)
		if a.Document == "" || !strings.Contains(strings.ToLower(s.route.input), strings.ToLower(a.Document)) {
			return "the request does not name the document " + Clip(a.Document, 100)
		}
		return ""
	},
}

// editingDraft reports whether the user pressed a shown draft's edit
// button: their next words revise it («сделай его короче») and need no
// creation verb of their own.
func editingDraft(s *state) bool {
	var d draft
	return getSlot(s, draftSlot, &d) && d.Text != "" && d.Editing
}

// guardCall applies the router's guards to a call; the first that vetoes
// it is journaled by name.
func (e *Engine) guardCall(s *state, r *Router, c llm.ToolCall) *Veto {
	for _, g := range r.Guards {
		if !g.applies(c.Name) {
			continue
		}
		if why := guards[g.Guard](s, c); why != "" {
			s.trace.Notes = append(s.trace.Notes, "guard "+g.Guard+" vetoed "+c.Name+": "+why)
			return &Veto{Guard: "router:" + g.Guard, Tool: c.Name, Reason: g.Guard}
		}
	}
	return nil
}
