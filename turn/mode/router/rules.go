package router

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/turn"
)

// The router's deterministic rules, each added after a real complaint and
// named in the turn's record. Intercepts decide before the model; guards
// veto the model's calls after it. Adding one is a function and a row.

// intercepts are the pre-model rules by name. Each reports whether it
// took the turn.
var intercepts = map[string]func(k *run, ctx context.Context) bool{
	// A reply to a skill's question goes straight to the skill ("3
	// годика", "второй день, 37,5" used to start new tasks).
	"skill_interview": (*run).interceptSkillInterview,
	// While a generation mode is on, the text is its prompt.
	"generation": (*run).interceptGeneration,
	// With a file open, an unambiguous edit goes to the edit tool.
	"open_document": (*run).interceptOpenDocument,
	// With a photo attached, «сделай меня у Эйфелевой башни» is an image
	// to draw, not a photo to describe.
	"photo": (*run).interceptPhoto,
}

// imageMode is the generation mode whose tool draws (Settings.Generation);
// the photo intercept hands it the photo too.
const imageMode = "image"

// interviewReplyRunes: a reply shorter than this to a skill's question
// (with no marker word) continues the skill's interview.
const interviewReplyRunes = 240

func (k *run) interceptPhoto(ctx context.Context) bool {
	name, ev := k.r.Generation[imageMode], k.t.Facts().Evidence()
	i := slices.IndexFunc(ev, chat.Evidence.IsImage)
	if name == "" || i < 0 || !k.r.Words.PhotoScene(k.t.Input()) {
		return false
	}
	args, _ := json.Marshal(map[string]any{"prompt": k.t.Input(), "photo": turn.AttachmentOf(ev[i])})
	k.t.Calls().CarryOut(ctx, turn.CallRequest{Rule: "photo", Tool: name, Args: args})
	return true
}

func (k *run) interceptSkillInterview(ctx context.Context) bool {
	text := k.t.Input()
	if k.skill == "" || utf8.RuneCountInString(text) >= interviewReplyRunes || k.r.Words.Marker(text) || !lastAskedQuestion(k.t) {
		return false
	}
	k.answer(ctx)
	return true
}

// lastAskedQuestion reports whether the assistant's last message ended
// with a question.
func lastAskedQuestion(t *turn.Turn) bool {
	return strings.HasSuffix(strings.TrimSpace(t.Memory().LastReply()), "?")
}

func (k *run) interceptGeneration(ctx context.Context) bool {
	c := k.t.Facts().Client()
	if c == nil || c.ActiveMode == "" {
		return false
	}
	name, ok := k.r.Generation[c.ActiveMode]
	if !ok {
		return false
	}
	args, _ := json.Marshal(map[string]string{"prompt": k.t.Input()})
	k.t.Calls().CarryOut(ctx, turn.CallRequest{Rule: "generation", Tool: name, Args: args})
	return true
}

func (k *run) interceptOpenDocument(ctx context.Context) bool {
	c := k.t.Facts().Client()
	if k.r.EditTool == "" || c == nil || c.OpenDocument == "" || !k.r.Words.EditRequest(k.t.Input()) {
		return false
	}
	args, _ := json.Marshal(map[string]string{"document": c.OpenDocument, "change": k.t.Input()})
	k.t.Calls().CarryOut(ctx, turn.CallRequest{Rule: "open_document", Tool: k.r.EditTool, Args: args})
	return true
}

// guards are the post-model rules by name: each says why a call is
// vetoed, or "".
var guards = map[string]func(k *run, c llm.ToolCall) string{
	// "где купить запчасти на запорожец" turned into random product cards.
	"info_question": func(k *run, c llm.ToolCall) string {
		if ok, why := k.r.Words.InfoQuestion(k.t.Input()); ok {
			return "an information question (" + why + "), not a product search"
		}
		return ""
	},
	// A sell card for someone who is buying.
	"buying": func(k *run, c llm.ToolCall) string {
		if k.r.Words.Buying(k.t.Input()) {
			return "the user is buying, not selling"
		}
		return ""
	},
	// "какую конфигурацию ПК собрать" grew a step "пишу статью".
	"creation": func(k *run, c llm.ToolCall) string {
		if !k.r.Words.CreationRequest(k.t.Input()) && !editingDraft(k.t) {
			return "no creation verb with a content noun in the request"
		}
		return ""
	},
	// A goal, a filter or a segment is a setting of the counter; a
	// question about its figures is not («сколько визитов» changed no
	// setting).
	"settings_request": func(k *run, c llm.ToolCall) string {
		if !k.r.Words.SettingsRequest(k.t.Input()) {
			return "the request names no goal, filter or segment: figures, not a setting"
		}
		return ""
	},
	// Going round in circles.
	"repeated_call": func(k *run, c llm.ToolCall) string {
		if doneBefore(k.t, c.Name, c.Arguments) {
			return "the same call succeeded before in this chat"
		}
		return ""
	},
	// Deleting a goal or a filter only on an explicit request.
	"explicit_delete": func(k *run, c llm.ToolCall) string {
		if !k.r.Words.DeleteRequest(k.t.Input()) {
			return "no explicit request to delete"
		}
		return ""
	},
	// "добавь цель в Метрике" wrote into someone's open table.
	"named_document": func(k *run, c llm.ToolCall) string {
		var a struct {
			Document string `json:"document"`
		}
		_ = json.Unmarshal(c.Arguments, &a)
		if a.Document == "" || !strings.Contains(strings.ToLower(k.t.Input()), strings.ToLower(a.Document)) {
			return "the request does not name the document " + turn.Clip(a.Document, 100)
		}
		return ""
	},
}

// editingDraft reports whether the user pressed a shown draft's edit
// button: their next words revise it («сделай его короче») and need no
// creation verb of their own.
func editingDraft(t *turn.Turn) bool {
	d, kept := t.Memory().Draft()
	return kept && d.Editing
}

// guardCall applies the router's guards to a call; the first that vetoes
// it is journaled by name.
func (k *run) guardCall(c llm.ToolCall) *turn.Veto {
	for _, g := range k.r.Guards {
		if !g.applies(c.Name) {
			continue
		}
		if why := guards[g.Guard](k, c); why != "" {
			k.t.Note("guard " + g.Guard + " vetoed " + c.Name + ": " + why)
			return &turn.Veto{Guard: "router:" + g.Guard, Tool: c.Name, Reason: g.Guard}
		}
	}
	return nil
}
