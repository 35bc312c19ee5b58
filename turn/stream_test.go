package turn

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn/internal/gate"
)

// streamRecorder is a chat.Streamer that keeps what it was shown.
type streamRecorder struct {
	mu    sync.Mutex
	text  []string
	steps []chat.Step
}

func (r *streamRecorder) Progress(chat.Progress) {}
func (r *streamRecorder) Ask(context.Context, chat.Question) (chat.Answer, error) {
	return chat.Answer{}, chat.ErrNoLive
}
func (r *streamRecorder) Step(s chat.Step) { r.mu.Lock(); r.steps = append(r.steps, s); r.mu.Unlock() }
func (r *streamRecorder) Text(p string)    { r.mu.Lock(); r.text = append(r.text, p); r.mu.Unlock() }

// TestReplyStreamShowsOnlyWhatIsSent: the stream of one model answer,
// written in pieces of every size, shows only sentences of a reply that
// proposes no tool, each through the link rule and the claim check.
func TestReplyStreamShowsOnlyWhatIsSent(t *testing.T) {
	reg, err := tool.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	claims, err := gate.CompileClaims(reg, []string{"refund_done"})
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{claims: claims, cfg: Config{LinkHosts: []string{"board.example"}}}
	cases := []struct {
		name, answer string
		toolsOffered bool
		want         string
	}{
		{"a plain JSON reply", `{"tool":null,"say":"Привет! Чем помочь? Пишите","args":null}`, true, "Привет! Чем помочь? "},
		{"say before a null tool", `{"say":"Hello there. Bye","tool":null}`, true, "Hello there. "},
		{"a proposed tool", `{"say":"Deleting it now. Done. ","tool":"delete_task","args":{}}`, true, ""},
		{"tool first, proposed", `{"tool":"delete_task","say":"Deleting it now. Done. "}`, true, ""},
		// What shows depends on where the pieces end: "One. " when the
		// second "tool" comes in a later piece, else nothing.
		{"a second tool stops the stream", `{"tool":null,"say":"One. ","tool":"delete_task","say":"Two. "}`, true, "One. |"},
		{"links made inert", `{"tool":"","say":"See https://evil.example/x?d=IBAN. And https://board.example/c?id=1. ok"}`, true,
			"See https://evil.example/x (link parameters removed). And https://board.example/c?id=1. "},
		{"an image across a sentence", `{"tool":null,"say":"Look ![a. b](https://evil.example/p.png). Next. "}`, true,
			"Look a. b [image from evil.example removed]. Next. "},
		{"a claim ends the stream", `{"tool":null,"say":"Checked. The refund was issued. More text. "}`, true, "Checked. "},
		{"plain text, tools offered", "Sure thing. I will look. ", true, ""},
		{"plain text, no tools", "Sure thing. I will look. ", false, "Sure thing. I will look. "},
	}
	for _, c := range cases {
		for size := 1; size <= len(c.answer); size++ {
			rec := &streamRecorder{}
			s := &state{caller: caller{lang: "en"}}
			s.in.Live = rec
			r := &replyStream{e: e, s: s, out: rec, live: !c.toolsOffered}
			for i := 0; i < len(c.answer); i += size {
				r.onText(c.answer[i:min(i+size, len(c.answer))])
			}
			r.close()
			r.onText(" Late. ")
			got := strings.Join(rec.text, "")
			if !slices.Contains(strings.Split(c.want, "|"), got) {
				t.Fatalf("%s, pieces of %d: shown %q, want %q", c.name, size, got, c.want)
			}
		}
	}
}

// TestStepsCostNothingUnheard: without a streaming channel a turn's steps
// render nothing.
func TestStepsCostNothingUnheard(t *testing.T) {
	s := &state{caller: caller{lang: "ru"}}
	if s.show(chat.Step{Kind: chat.StepTool}, tool.Spec{Title: "Поиск"}) != "" {
		t.Error("a step shown with nobody listening")
	}
	rec := &streamRecorder{}
	s.in.Live = rec
	if got := s.show(chat.Step{Kind: chat.StepTool, Name: "find"}, tool.Spec{Title: "Поиск"}); got != "Выполняю «Поиск»…" {
		t.Errorf("default chip %q", got)
	}
	if got := s.show(chat.Step{Kind: chat.StepTool}, tool.Spec{Title: "Поиск", Chip: tool.Localized{"ru": "Ищу…"}}); got != "Ищу…" {
		t.Errorf("declared chip %q", got)
	}
	if len(rec.steps) != 2 {
		t.Errorf("steps %v", rec.steps)
	}
	if n := testing.AllocsPerRun(100, func() {
		s.in.Live = nil
		(&Turn{s: s}).Answer().Step(chat.StepRoute, "", tool.Localized{"ru": "Разбираю запрос…"}, false)
	}); n != 0 {
		t.Errorf("an unheard step allocates %v times", n)
	}
}
