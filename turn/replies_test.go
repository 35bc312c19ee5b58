package turn_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/turn/turntest"
)

// What people type in answer to "Go ahead?" / «Выполнить?», per language:
// every phrase, as typed and decorated (punctuation, capitals, emoji,
// politeness, invisible characters, full-width forms), confirms or cancels
// the stored action without asking the model. The lists are written here,
// apart from the engine's own, as a corpus of phrasings.
var typedAnswers = map[string]struct {
	token, please string
	yes, no       []string
	// neither are messages that look like an answer but say more: they
	// go to the model, and the waiting action is cancelled with a notice.
	neither []string
}{
	"en": {
		token: "k-hank-globex", please: "please",
		yes: []string{"yes", "y", "yeah", "yep", "sure", "ok", "okay", "OK do it", "go ahead", "Go ahead!",
			"yes please", "Yes, do it", "yes, go ahead", "sure, go ahead", "do it", "just do it", "proceed",
			"confirm", "confirmed", "sounds good", "of course", "alright", "fine", "that's right",
			"absolutely", "yes, thanks", "ok, sure", "k", "+", "+1", "👍", "👍🏽", "✅", "go for it",
			"yes yes", "lgtm", "please do"},
		no: []string{"no", "n", "nope", "nah", "cancel", "cancel it", "stop", "don't", "don't do it",
			"do not", "never mind", "no, thanks", "no thank you", "not now", "forget it", "no, cancel",
			"-", "👎", "❌", "abort"},
		neither: []string{"yes, but on Friday", "no, make it Friday", "go ahead and delete the old one too",
			"what is this?", "ok what about tomorrow", "sure, if Anna agrees", "thanks"},
	},
	"ru": {
		token: "k-dmitry", please: "пожалуйста",
		yes: []string{"да", "Да!", "да, давай", "давай", "давайте", "ок", "окей", "конечно", "конечно да",
			"подтверждаю", "да, выполняй", "выполняй", "делай", "хорошо", "ладно", "ага", "угу", "верно",
			"точно", "согласен", "вперёд", "да да", "да, спасибо", "ну давай", "да, конечно", "ok",
			"yes", "👍", "+", "разумеется", "можно", "всё верно", "да, пожалуйста", "oк", "ДА"},
		no: []string{"нет", "Нет!", "не надо", "нет, не надо", "отмена", "отмени", "отменить", "стоп",
			"не сейчас", "не нужно", "не делай", "передумал", "нет, спасибо", "no", "👎", "❌", "-",
			"забудь", "отбой"},
		neither: []string{"да, но на пятницу", "нет, поставь на пятницу", "давай лучше завтра",
			"а что это?", "ок, а что с отчётом?", "спасибо"},
	},
}

// decorated are the ways the same answer arrives.
func decorated(p, please string) []string {
	return []string{
		p,
		"  " + strings.ToUpper(p) + "!!",
		p + ", " + please + " 🙏",
		invisible(p) + "\u2060.",             // zero-width space inside, word joiner after
		toFullWidth(p),                       // "ｏｋ" from a CJK keyboard
		strings.ReplaceAll(p, "'", "\u2019"), // a typographic apostrophe
	}
}

// invisible puts a zero-width space after p's first character.
func invisible(p string) string {
	r := []rune(p)
	return string(r[:1]) + "\u200b" + string(r[1:])
}

// toFullWidth writes the ASCII letters of s in their full-width forms,
// which Unicode NFKC folds back.
func toFullWidth(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '!' && r <= '~' {
			r += 0xFEE0
		}
		b.WriteRune(r)
	}
	return b.String()
}

func TestTypedAnswersPerLanguage(t *testing.T) {
	cfg, err := os.ReadFile(filepath.Join("testdata", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for lang, c := range typedAnswers {
		t.Run(lang, func(t *testing.T) {
			h := newHarness(t, cfg, true, testEnv)
			id := h.keys[c.token]
			n := 0
			turn := func(conv, text string) chat.Outbound {
				t.Helper()
				out, err := h.app.Engine.HandleTurn(context.Background(), chat.Inbound{Identity: id, Chat: conv, Text: text, Channel: "test"})
				if err != nil {
					t.Fatalf("%q: %v", text, err)
				}
				return out
			}
			propose := func() string {
				t.Helper()
				n++
				conv := fmt.Sprintf("c%d", n)
				h.model.Push(llmtest.Text(`{"say":"","tool":"create_task","args":{"title":"Card ` + conv + `"},"done":false,"newTopic":false,"buttons":[]}`))
				if out := turn(conv, "create a card"); out.Pending == nil {
					t.Fatalf("no pending action to answer: %q", out.Say)
				}
				return conv
			}
			check := func(p string, wantRun bool) {
				t.Helper()
				for _, typed := range decorated(p, c.please) {
					conv := propose()
					asked := h.model.Calls()
					out := turn(conv, typed)
					ran := len(out.Executed) == 1 && out.Executed[0].Tool == "create_task" && out.Executed[0].Status == "ok"
					switch {
					case h.model.Calls() != asked:
						t.Errorf("%q went to the model instead of answering the confirmation (say %q)", typed, out.Say)
					case ran != wantRun || (!wantRun && len(out.Executed) > 0):
						t.Errorf("%q: executed %v, want the action run=%v (say %q)", typed, out.Executed, wantRun, out.Say)
					case out.Pending != nil:
						t.Errorf("%q left an action waiting", typed)
					}
				}
			}
			for _, p := range c.yes {
				check(p, true)
			}
			for _, p := range c.no {
				check(p, false)
			}
			for _, p := range c.neither {
				conv := propose()
				h.model.Push(turntest.Say("noted"))
				asked := h.model.Calls()
				out := turn(conv, p)
				if h.model.Calls() != asked+1 || len(out.Executed) > 0 {
					t.Errorf("%q was taken as an answer (executed %v, model asked %d times)", p, out.Executed, h.model.Calls()-asked)
				}
				if !strings.Contains(out.Say, "Card "+conv) || !strings.HasSuffix(out.Say, "noted") {
					t.Errorf("%q: the reply does not say the waiting action was cancelled: %q", p, out.Say)
				}
			}
		})
	}
}

// TestCancelCommandWithAnActionWaiting: "/cancel" is the command, not a
// typed "cancel", and its own reply is the only word on the action.
func TestCancelCommandWithAnActionWaiting(t *testing.T) {
	cfg, err := os.ReadFile(filepath.Join("testdata", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, cfg, true, testEnv)
	id := h.keys["k-hank-globex"]
	h.model.Push(turntest.Decide("create_task", `{"title":"Check the form"}`))
	for i, text := range []string{"create a task", "/cancel", "yes"} {
		out, err := h.app.Engine.HandleTurn(context.Background(), chat.Inbound{Identity: id, Chat: "c1", Text: text, Channel: "test"})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"", "Cancelled; nothing was done.", "Nothing is waiting for confirmation. Nothing was done."}[i]
		if i > 0 && out.Say != want {
			t.Errorf("%q: say %q, want %q", text, out.Say, want)
		}
		if len(out.Executed) > 0 {
			t.Errorf("%q ran %v", text, out.Executed)
		}
	}
}
