package turn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/store/sqlitestore"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn"
	"github.com/arbiterhq/arbiter/turn/mode/interview"
	"github.com/arbiterhq/arbiter/turn/turntest"
)

// interviewBench is an engine whose tenant's assistant interviews.
type interviewBench struct {
	t     *testing.T
	eng   *turn.Engine
	st    *sqlitestore.Store
	model *llmtest.Scripted
	id    chat.Identity
}

func newInterviewBench(t *testing.T, a turn.Assistant) *interviewBench {
	t.Helper()
	reg, _ := tool.NewRegistry()
	a.Mode = interview.Name
	e := turntest.New(t, turn.Config{Tools: reg,
		Assistants: map[string]turn.Assistant{"iv": a},
		Tenants:    map[string]turn.Tenant{"t": {ID: "t", Language: "ru", Assistant: "iv", Roles: map[string]turn.Role{"user": {}}}}})
	return &interviewBench{t: t, eng: e.Engine, st: e.Store, model: e.Model,
		id: chat.Identity{TenantID: "t", UserID: "u", Role: "user", Scopes: []chat.Scope{chat.ScopeRead}}}
}

func (b *interviewBench) send(in chat.Inbound) (chat.Outbound, map[string]any) {
	b.t.Helper()
	in.Identity, in.Chat = b.id, "c"
	out, err := b.eng.HandleTurn(context.Background(), in)
	if err != nil {
		b.t.Fatal(err)
	}
	var trace map[string]any
	turntest.ReadTurn(b.t, b.st, "t", out.TurnID, &trace)
	return out, trace
}

func ask(id, question, reasoning string, options ...string) llm.ToolCall {
	args, _ := json.Marshal(map[string]any{"question": question, "reasoning": reasoning, "options": options})
	return llm.ToolCall{ID: id, Name: "ask_user", Arguments: args}
}

func deliver(id, content string, confidence float64) llm.ToolCall {
	args, _ := json.Marshal(map[string]any{"content": content, "confidence_score": confidence})
	return llm.ToolCall{ID: id, Name: "deliver_final_result", Arguments: args}
}

// The seed's flow: a vague request, one question with options, the
// answer by button, the result.
func TestInterviewSeedFlow(t *testing.T) {
	b := newInterviewBench(t, turn.Assistant{Prompt: "Ты — эксперт-исполнитель."})
	const question = "Уточните, пожалуйста, какую версию Laravel вы используете?"
	b.model.Push(
		llmtest.ToolCalls("", ask("call_q1", question, "SECRET-REASONING: the API differs by version", "Laravel 10", "Laravel 11", "Не знаю")),
		llmtest.ToolCalls("", deliver("call_f", "Вот оптимизированная функция для Laravel 11: …", 0.85)),
	)
	out, trace := b.send(chat.Inbound{Text: "оптимизируй функцию"})
	if out.Say != question || len(out.Buttons) != 3 || out.Buttons[1].Label != "Laravel 11" || !strings.HasPrefix(out.Buttons[1].Value, "opt:") || out.Final != nil {
		t.Fatalf("question turn: %+v", out)
	}
	iv := trace["interview"].(map[string]any)
	if iv["questions"] != 1.0 || !strings.Contains(iv["reasoning"].(string), "SECRET-REASONING") {
		t.Errorf("trace interview %v", iv)
	}
	first := b.model.Requests()[0]
	if first.ToolChoice.Mode != llm.ToolRequired || len(first.Tools) != 2 || !first.Messages[1].Cache ||
		!strings.Contains(first.Messages[0].Content, "Ты — эксперт-исполнитель.") {
		t.Errorf("first request: choice %+v, tools %d, messages %+v", first.ToolChoice, len(first.Tools), first.Messages)
	}

	// "Laravel 11" pressed; "да" would be an answer too, never a confirmation.
	out, trace = b.send(chat.Inbound{Button: out.Buttons[1].Value})
	if out.Final == nil || out.Final.Content != "Вот оптимизированная функция для Laravel 11: …" || *out.Final.ConfidenceScore != 0.85 || out.Say != out.Final.Content {
		t.Fatalf("final turn: %+v", out)
	}
	second := b.model.Requests()[1].Messages
	if last := second[len(second)-1]; last.Role != llm.RoleTool || last.ToolCallID != "call_q1" || last.Content != "Laravel 11" {
		t.Errorf("the answer went to the model as %+v", last)
	}
	if iv := trace["interview"].(map[string]any); iv["ended"] != "final" || iv["confidence_score"] != 0.85 {
		t.Errorf("trace interview %v", iv)
	}
	// The interview is over: the next message starts another.
	b.model.Push(llmtest.ToolCalls("", deliver("call_g", "ok", 1)))
	b.send(chat.Inbound{Text: "да"})
	if msgs := b.model.Requests()[2].Messages; len(msgs) != 2 || msgs[1].Content != "да" {
		t.Errorf("a new interview starts from the new message: %+v", msgs)
	}
}

// After max_questions answers the request names deliver_final_result; a
// model that still asks gets one repair, then the interview ends with what
// there is and says so — never a fourth question.
func TestInterviewQuestionLimit(t *testing.T) {
	b := newInterviewBench(t, turn.Assistant{})
	for i := range 3 {
		b.model.Push(llmtest.ToolCalls("", ask(fmt.Sprintf("q%d", i), fmt.Sprintf("Вопрос %d?", i+1), "r")))
	}
	b.model.Push(
		llmtest.ToolCalls("", ask("q4", "Четвёртый вопрос?", "r")),
		llmtest.ToolCalls("", ask("q5", "И ещё один?", "r")),
	)
	out, _ := b.send(chat.Inbound{Text: "сделай мне сайт"})
	for i := 2; i <= 3; i++ {
		if out.Say != fmt.Sprintf("Вопрос %d?", i-1) {
			t.Fatalf("question %d: %q", i-1, out.Say)
		}
		out, _ = b.send(chat.Inbound{Text: "ответ"})
	}
	if out.Say != "Вопрос 3?" {
		t.Fatalf("third question: %q", out.Say)
	}
	out, trace := b.send(chat.Inbound{Text: "ответ"})
	if strings.Contains(out.Say, "Четвёртый") || strings.Contains(out.Say, "ещё один") || out.Final == nil {
		t.Fatalf("after three answers: %+v", out)
	}
	reqs := b.model.Requests()
	if c := reqs[3].ToolChoice; c.Mode != llm.ToolNamed || c.Name != "deliver_final_result" {
		t.Errorf("fourth request's tool choice %+v", c)
	}
	if iv := trace["interview"].(map[string]any); iv["ended"] != "no_result" || len(iv["problems"].([]any)) != 2 {
		t.Errorf("trace interview %v", iv)
	}
}

// Random model behaviours: the user never sees more than max_questions
// questions, never the reasoning, and every interview ends in a result or
// a clear failure.
func TestInterviewProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 46502))
	const interviews = 200
	b := newInterviewBench(t, turn.Assistant{Settings: &interview.Settings{MaxQuestions: 3}})
	next := 0
	behave := func(ctx context.Context, req llm.Request) (llm.Response, error) {
		next++
		id := fmt.Sprintf("c%d", next)
		tools := func(text string, calls ...llm.ToolCall) (llm.Response, error) {
			return llm.Response{Protocol: llm.ProtocolTools, Text: text, ToolCalls: calls, Provider: "p", Model: "m"}, nil
		}
		switch rng.IntN(9) {
		case 0, 1: // asks (forever, if it can)
			return tools("", ask(id, "Какой у вас бюджет?", "REASONING-"+id, "мало", "много"))
		case 2: // two questions in one
			return tools("", ask(id, "Какой стек? А какая база?", "REASONING-"+id))
		case 3: // two calls
			return tools("", ask(id, "Кто аудитория?", "REASONING-"+id), ask(id+"b", "Какие сроки?", "REASONING-"+id+"b"))
		case 4: // text instead of a tool
			return tools("Просто текстовый ответ.")
		case 5: // malformed arguments
			return tools("", llm.ToolCall{ID: id, Name: "ask_user", Arguments: json.RawMessage(`"question?"`)})
		case 6: // provider error
			return llm.Response{}, &llm.Error{Kind: llm.ErrTransient, Provider: "p", Model: "m", Message: "503"}
		case 7: // a result with a broken score
			return tools("", llm.ToolCall{ID: id, Name: "deliver_final_result", Arguments: json.RawMessage(`{"content":"x","confidence_score":7}`)})
		}
		return tools("", deliver(id, "Итог "+id, 0.7))
	}
	for range interviews * 12 {
		b.model.Push(llmtest.Func(behave))
	}
	finals, failures := 0, 0
	for i := range interviews {
		questions := 0
		in := chat.Inbound{Text: fmt.Sprintf("задача %d", i)}
		for turnNo := 0; ; turnNo++ {
			if turnNo > 10 {
				t.Fatalf("interview %d does not end", i)
			}
			out, _ := b.send(in)
			if strings.Contains(out.Say, "REASONING") || strings.Contains(fmt.Sprint(out.Buttons), "REASONING") {
				t.Fatalf("interview %d: the reasoning reached the user: %+v", i, out)
			}
			if out.Final != nil {
				finals++
				break
			}
			if strings.Contains(out.Say, "модели сейчас недоступны") {
				failures++
				b.send(chat.Inbound{Text: "/reset"})
				break
			}
			questions++
			if questions > 3 || strings.Count(out.Say, "?") != 1 {
				t.Fatalf("interview %d: question %d shown: %q", i, questions, out.Say)
			}
			in = chat.Inbound{Text: "ответ"}
		}
	}
	t.Logf("%d interviews: %d results, %d clear failures", interviews, finals, failures)
	if finals == 0 || failures == 0 {
		t.Errorf("the random behaviours did not reach both endings: %d results, %d failures", finals, failures)
	}
}

// A deliverable past the assistant's reply length is cut, and says so; a
// fallback model's plain text is the result.
func TestInterviewResultLimitsAndFallback(t *testing.T) {
	b := newInterviewBench(t, turn.Assistant{Settings: &interview.Settings{MaxReplyChars: 20}, MaxTokens: 1234})
	b.model.Push(llmtest.ToolCalls("", deliver("f", strings.Repeat("код ", 30), 0.9)))
	out, _ := b.send(chat.Inbound{Text: "напиши код"})
	if !strings.HasPrefix(out.Say, strings.Repeat("код ", 5)) || !strings.Contains(out.Say, "обрезан на 20") || out.Final == nil {
		t.Errorf("cut result %q", out.Say)
	}
	if got := b.model.Requests()[0].MaxTokens; got != 1234 {
		t.Errorf("max tokens %d, want the assistant's 1234", got)
	}
	b.model.Push(llmtest.ToolCalls("Вот ответ текстом."))
	out, trace := b.send(chat.Inbound{Text: "ещё"})
	if out.Say != "Вот ответ текстом." || out.Final == nil || out.Final.ConfidenceScore != nil || trace["interview"].(map[string]any)["ended"] != "text" {
		t.Errorf("fallback: %+v", out)
	}
}

// Past max_questions a model that asks again and puts its question in
// plain text, or delivers a question as its result (in any script's
// question mark, or the words of its ask_user call), gets one repair;
// then the server's own "could not finish" text — never the question as
// the result.
func TestInterviewQuestionIsNoResult(t *testing.T) {
	const noResult = "Не получилось подготовить итоговый ответ"
	for _, tc := range []struct {
		name         string
		first, again llmtest.Reply
	}{
		{"ask_user again with the question as text",
			llmtest.ToolCalls("Какой у вас бюджет?", ask("q2", "Какой у вас бюджет?", "r")),
			llmtest.ToolCalls("Какой у вас бюджет?", ask("q3", "Какой у вас бюджет?", "r"))},
		{"a result in a fullwidth question mark",
			llmtest.ToolCalls("", deliver("f1", "你的预算是多少？", 0.5)),
			llmtest.ToolCalls("", deliver("f2", "你的预算是多少？", 0.5))},
		{"a result in an Arabic question mark",
			llmtest.ToolCalls("", deliver("f1", "ما هي ميزانيتك؟", 0.5)),
			llmtest.ToolCalls("", deliver("f2", "ما هي ميزانيتك؟", 0.5))},
		{"plain text that is the asked question without a mark",
			llmtest.ToolCalls("", ask("q2", "Уточните бюджет", "r")),
			llmtest.ToolCalls("Уточните бюджет")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newInterviewBench(t, turn.Assistant{Settings: &interview.Settings{MaxQuestions: 1}})
			b.model.Push(llmtest.ToolCalls("", ask("q1", "Какой стек?", "r")), tc.first, tc.again)
			if out, _ := b.send(chat.Inbound{Text: "сделай мне сайт"}); out.Say != "Какой стек?" {
				t.Fatalf("first question: %q", out.Say)
			}
			out, trace := b.send(chat.Inbound{Text: "Go"})
			if !strings.HasPrefix(out.Say, noResult) || out.Final == nil || out.Final.Content != "" {
				t.Errorf("a question was delivered as the result: %+v", out)
			}
			iv := trace["interview"].(map[string]any)
			if iv["ended"] != "no_result" || len(iv["problems"].([]any)) != 2 {
				t.Errorf("trace interview %v", iv)
			}
			if n := len(b.model.Requests()); n != 3 {
				t.Errorf("%d model calls, want the question, the answer and one repair", n)
			}
		})
	}
}

// A result that is a question is repaired; the repaired result is the
// result.
func TestInterviewQuestionRepaired(t *testing.T) {
	b := newInterviewBench(t, turn.Assistant{Settings: &interview.Settings{MaxQuestions: 2}})
	b.model.Push(
		llmtest.ToolCalls("Какой у вас стек?"),
		llmtest.ToolCalls("", deliver("f", "План: Go и Postgres.", 0.7)),
	)
	out, trace := b.send(chat.Inbound{Text: "сделай мне сайт"})
	if out.Final == nil || out.Final.Content != "План: Go и Postgres." {
		t.Fatalf("repaired result: %+v", out)
	}
	second := b.model.Requests()[1].Messages
	if last := second[len(second)-1]; last.Role != llm.RoleUser || !strings.Contains(last.Content, "a question is not a result") {
		t.Errorf("the repair said %+v", last)
	}
	if iv := trace["interview"].(map[string]any); iv["ended"] != "final" {
		t.Errorf("trace interview %v", iv)
	}
}

// Questions are cut at the first question mark of any script: the user
// sees one question.
func TestInterviewOneQuestionInAnyScript(t *testing.T) {
	for _, q := range []struct{ asked, shown string }{
		{"你用哪个版本？数据库呢？", "你用哪个版本？"},
		{"ما الإصدار؟ وما قاعدة البيانات؟", "ما الإصدار؟"},
		{"Ποια έκδοση; Και ποια βάση;", "Ποια έκδοση; Και ποια βάση;"}, // U+003B is a semicolon, not the Greek mark
		{"Ποια έκδοση\u037e Και ποια βάση\u037e", "Ποια έκδοση\u037e"},
		{"Ո՞ր տարբերակն է։ Ո՞ր բազան է։", "Ո՞ր տարբերակն է։"},
		{"Which version⁇ Which database⁇", "Which version⁇"},
	} {
		b := newInterviewBench(t, turn.Assistant{})
		b.model.Push(llmtest.ToolCalls("", ask("q1", q.asked, "r")))
		out, trace := b.send(chat.Inbound{Text: "сделай мне сайт"})
		if out.Say != q.shown {
			t.Errorf("asked %q: shown %q, want %q", q.asked, out.Say, q.shown)
		}
		if dropped, _ := trace["interview"].(map[string]any)["dropped"].([]any); (q.asked != q.shown) != (len(dropped) == 1) {
			t.Errorf("asked %q: dropped %v", q.asked, dropped)
		}
	}
}

// An interview's options may read as commands or confirmations: their
// buttons carry references, and a press is the option's text as the
// answer — "/reset" resets nothing, "да" confirms nothing.
func TestInterviewOptionsThatAreCommands(t *testing.T) {
	b := newInterviewBench(t, turn.Assistant{})
	b.model.Push(
		llmtest.ToolCalls("", ask("q1", "Что сделать с черновиком?", "r", "да", "/reset", "confirm:x1", "ok")),
		llmtest.ToolCalls("", deliver("f", "Черновик сброшен по вашему ответу.", 0.9)),
	)
	out, _ := b.send(chat.Inbound{Text: "помоги с черновиком"})
	if len(out.Buttons) != 4 {
		t.Errorf("buttons %+v, want all four options", out.Buttons)
	}
	var reset string
	for i, want := range []string{"да", "/reset", "confirm:x1", "ok"} {
		if i >= len(out.Buttons) || out.Buttons[i].Label != want || !strings.HasPrefix(out.Buttons[i].Value, "opt:") {
			t.Errorf("button %d of %+v, want %q behind a reference", i, out.Buttons, want)
		}
	}
	for _, btn := range out.Buttons {
		if len(btn.Value) > 64 {
			t.Errorf("button %+v: over the 64 bytes of a Telegram button's data", btn)
		}
		if btn.Label == "/reset" {
			reset = btn.Value
		}
	}
	out, trace := b.send(chat.Inbound{Button: reset})
	if trace["route"] != "model" || out.Final == nil || out.Final.Content != "Черновик сброшен по вашему ответу." {
		t.Fatalf("the /reset option was not an answer: route %v, %+v", trace["route"], out)
	}
	if reqs := b.model.Requests(); len(reqs) != 2 || reqs[1].Messages[len(reqs[1].Messages)-1].Content != "/reset" {
		t.Errorf("the model was not given the option's text as the answer: %d requests", len(reqs))
	}
	// The offer was answered: its buttons are gone.
	b.model.Push(llmtest.ToolCalls("", deliver("g", "x", 1)))
	if out, trace := b.send(chat.Inbound{Button: "opt:" + out.TurnID + ":0"}); trace["route"] != "stale_button" || out.Final != nil {
		t.Errorf("a used offer's button: route %v, %+v", trace["route"], out)
	}
}

// Only the latest keyboard answers: a button of an earlier question,
// pressed after a later question was shown, answers nothing.
func TestInterviewEarlierOptionIsStale(t *testing.T) {
	b := newInterviewBench(t, turn.Assistant{})
	b.model.Push(
		llmtest.ToolCalls("", ask("q1", "Какой стек?", "r", "PHP", "Go")),
		llmtest.ToolCalls("", ask("q2", "Какие сроки?", "r")),
	)
	first, _ := b.send(chat.Inbound{Text: "сделай мне сайт"})
	if out, _ := b.send(chat.Inbound{Text: "Go"}); out.Say != "Какие сроки?" {
		t.Fatalf("second question: %q", out.Say)
	}
	out, trace := b.send(chat.Inbound{Button: first.Buttons[0].Value})
	if trace["route"] != "stale_button" || b.model.Calls() != 2 || out.Final != nil {
		t.Errorf("an earlier question's button answered the later one: route %v, model calls %d, %+v", trace["route"], b.model.Calls(), out)
	}
}
