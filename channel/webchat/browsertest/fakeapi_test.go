package browsertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/channel/httpapi"
	"github.com/arbiterhq/arbiter/channel/internal/questions"
	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/decision"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn"
	"github.com/arbiterhq/arbiter/turn/mode/loop"
)

// fakeAPI is a small stand-in for the HTTP API: the same paths, the same
// JSON (the reply is a chat.Outbound, the record a turn.Trace), and a
// script of answers chosen by the message's text or button:
//
//	"hello"          a reply with two chips, one of them /tasks
//	button /tasks    a list of tasks
//	"create a task"  a pending create_task with confirm:p-1 / cancel:p-1, in
//	                 the user's language (also "создай задачу")
//	button confirm:  the stored action executed
//	"покажи карточку" a card's text with its link to the board page
//	"long id"        a reply whose turn has a long unbroken id (longTurnID)
//	"wait"           held until release is called
//	"busy"           503 with Retry-After the first time a message_id comes
//	"ask"            asks whether to allow a sampling request, replies with the choice
//	"form"           asks for a title (typed) and then a priority (choices)
//	"expire"         asks a question left to expire; replies after proceed
//	anything else    an echo
//
// The questions are kept on the same board as the real API's, listed by
// GET /v1/questions and answered by POST /v1/questions/{id} with its
// status codes and JSON. GET /v1/me answers the user (English in New York
// unless setMe says otherwise); GET /v1/board and /v1/board/cards/{id}
// answer 404 no_board until withBoard is called.
type fakeAPI struct {
	mu       sync.Mutex
	token    string
	me       fakeMe
	hasBoard bool
	meHold   chan struct{}            // while set, GET /v1/me waits for it to close
	messages []httpapi.MessageRequest // every POST /v1/messages, in order
	queries  []url.Values             // every GET /v1/turns
	traces   map[string][]byte
	items    []httpapi.TurnSummary // newest first
	attempts map[string]int        // by message_id
	seq      int
	clock    time.Time

	gate chan struct{} // closed by release
	stop chan struct{} // closed by close: nothing waits any longer
	once sync.Once
	mux  *http.ServeMux

	board     *questions.Board
	expireAsk context.CancelFunc // ends the wait of the question being asked
	next      chan struct{}      // proceed: an "expire" turn may reply
	pollHold  chan struct{}      // while set, GET /v1/questions waits for it to close
	polls     int                // GET /v1/questions answered
	pollTimes []time.Time        // when each poll came
	pollFails int                // so many polls to come fail with 503
	pollsNow  int                // in flight
	pollsMax  int                // the most ever in flight at once
	answers   []fakeAnswer       // every POST /v1/questions/{id}
}

// fakeAnswer is one POST /v1/questions/{id} and the status it got.
type fakeAnswer struct {
	ID     string
	Answer chat.Answer
	Status int
}

// fakeMe is the answer of GET /v1/me.
type fakeMe struct {
	Tenant   string   `json:"tenant"`
	User     string   `json:"user"`
	Name     string   `json:"name,omitempty"`
	Language string   `json:"language,omitempty"`
	Timezone string   `json:"timezone,omitempty"`
	Scopes   []string `json:"scopes"`
	// MaxBodyBytes is the server's body limit; zero leaves it out.
	MaxBodyBytes int64 `json:"max_body_bytes,omitempty"`
}

// russian is a Russian user in Moscow.
var russian = fakeMe{Tenant: "acme", User: "dmitry", Name: "Дмитрий", Language: "ru", Timezone: "Europe/Moscow", Scopes: []string{"read", "write:safe"}}

// fakeOwner owns every question: the fake has one user.
const fakeOwner = "acme\x00alice"

func newFakeAPI(token string) *fakeAPI {
	f := &fakeAPI{
		token:    token,
		me:       fakeMe{Tenant: "acme", User: "alice", Name: "Alice", Language: "en", Timezone: "America/New_York", Scopes: []string{"read", "write:safe"}},
		traces:   map[string][]byte{},
		attempts: map[string]int{},
		clock:    time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC),
		gate:     make(chan struct{}),
		stop:     make(chan struct{}),
		next:     make(chan struct{}),
		board:    questions.New(nil),
	}
	f.mux = http.NewServeMux()
	f.mux.HandleFunc("POST /v1/messages", f.postMessage)
	f.mux.HandleFunc("GET /v1/turns", f.listTurns)
	f.mux.HandleFunc("GET /v1/turns/{id}", f.getTurn)
	f.mux.HandleFunc("GET /v1/questions", f.listQuestions)
	f.mux.HandleFunc("POST /v1/questions/{id}", f.answerQuestion)
	f.mux.HandleFunc("GET /v1/me", f.getMe)
	f.mux.HandleFunc("GET /v1/board", f.getBoard)
	f.mux.HandleFunc("GET /v1/board/cards/{id}", f.getCard)
	f.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
	// Turns of another conversation, one failed and one with script in
	// its user id.
	f.items = []httpapi.TurnSummary{
		{TurnID: "t-old-2", ConversationID: "c-other", UserID: "<script>window.__pwned=3</script>", Route: "command", Status: "ok",
			StartedAt: f.clock.Add(-time.Hour), DurationMS: 20, Providers: []string{}},
		{TurnID: "t-old-1", ConversationID: "c-other", UserID: "alice", Route: "model", Status: "failed",
			StartedAt: f.clock.Add(-2 * time.Hour), DurationMS: 4100, CostUSD: 0.0002, Providers: []string{"mistral"}},
	}
	return f
}

func (f *fakeAPI) setToken(token string) {
	f.mu.Lock()
	f.token = token
	f.mu.Unlock()
}

// release lets a held "wait" message be answered.
func (f *fakeAPI) release() { close(f.gate) }

// close frees every held request, so the test server can shut down.
func (f *fakeAPI) close() { f.once.Do(func() { close(f.stop) }) }

func (f *fakeAPI) sent() []httpapi.MessageRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.messages)
}

func (f *fakeAPI) listQueries() []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.queries)
}

// setMe makes GET /v1/me answer me.
func (f *fakeAPI) setMe(me fakeMe) {
	f.mu.Lock()
	f.me = me
	f.mu.Unlock()
}

func (f *fakeAPI) language() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.me.Language
}

// withBoard gives the fake an embedded board.
// unknownCost makes the turns listed so far of no known price, as a model
// on a custom endpoint without prices is.
func (f *fakeAPI) unknownCost() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.items {
		f.items[i].CostUSD, f.items[i].CostUnknown = 0, true
	}
}

func (f *fakeAPI) withBoard() {
	f.mu.Lock()
	f.hasBoard = true
	f.mu.Unlock()
}

// holdMe makes GET /v1/me wait until releaseMe, so a test sees the page
// before the server has named the user's language.
func (f *fakeAPI) holdMe() { f.holdGate(&f.meHold) }

func (f *fakeAPI) releaseMe() { f.openGate(&f.meHold) }

// holdGate sets *gate (under f.mu) for a handler to wait on; openGate
// closes it.
func (f *fakeAPI) holdGate(gate *chan struct{}) {
	f.mu.Lock()
	if *gate == nil {
		*gate = make(chan struct{})
	}
	f.mu.Unlock()
}

func (f *fakeAPI) openGate(gate *chan struct{}) {
	f.mu.Lock()
	if *gate != nil {
		close(*gate)
		*gate = nil
	}
	f.mu.Unlock()
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mux.ServeHTTP(w, r)
}

func (f *fakeAPI) authorized(w http.ResponseWriter, r *http.Request) bool {
	return f.allow(w, func() bool { return r.Header.Get("Authorization") == "Bearer "+f.token },
		http.StatusUnauthorized, "unauthorized", "missing or unknown bearer token")
}

// allow reports ok(), read under f.mu, and when false answers the error
// of status, code and msg.
func (f *fakeAPI) allow(w http.ResponseWriter, ok func() bool, status int, code, msg string) bool {
	f.mu.Lock()
	allowed := ok()
	f.mu.Unlock()
	if !allowed {
		writeError(w, status, code, msg)
	}
	return allowed
}

func (f *fakeAPI) postMessage(w http.ResponseWriter, r *http.Request) {
	if !f.authorized(w, r) {
		return
	}
	req, err := httpapi.DecodeMessage(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	f.mu.Lock()
	f.messages = append(f.messages, req)
	f.attempts[req.MessageID]++
	attempt := f.attempts[req.MessageID]
	f.mu.Unlock()

	out := chat.Outbound{Buttons: []chat.Button{}, Executed: []chat.Execution{}}
	var executed []turn.ExecutionTrace
	var pending *turn.ConfirmationTrace
	turnID := ""
	switch {
	case req.Text == "hello":
		out.Say = "Hi! <script>window.__pwned=1</script> What shall we do?"
		out.Buttons = []chat.Button{{Label: "Show my tasks", Value: "/tasks"}, {Label: "<b>bold</b>", Value: "/help"}}
	case req.Button == "/tasks":
		out.Say = "You have 2 tasks: check the signup form; call Anna."
	case req.Text == "my tummy hurts":
		skill := "health"
		out.Say, out.Skill, out.SkillLabel = "How long has it hurt?", &skill, "Здоровье"
	case req.Button == "skill:none":
		out.Say = "Back to the ordinary conversation."
	case req.Text == "optimize the function":
		// An interviewer's question: its options are chips.
		out.Say = "Which Laravel version do you use?"
		out.Buttons = []chat.Button{{Label: "Laravel 10", Value: "Laravel 10"}, {Label: "Laravel 11", Value: "Laravel 11"}, {Label: "Не знаю", Value: "Не знаю"}}
	case req.Button == "Laravel 11":
		score := 0.8
		out.Say = "Use collections: $users->filter(...)."
		out.Final = &chat.Final{Content: out.Say, ConfidenceScore: &score}
	case req.Text == "create a task" || req.Text == "создай задачу":
		// As the engine renders it: labels and the due time in the
		// user's language and zone, the server's own buttons.
		if f.language() == "ru" {
			out.Say = "Подтвердите действие: Создать задачу\n• Название: Проверить форму регистрации\n• Срок: ср, 2 дек. 2026, 12:00 (Europe/Moscow)\nВыполнить?"
			out.Buttons = []chat.Button{{Label: "✅ Да", Value: "confirm:p-1"}, {Label: "✖️ Нет", Value: "cancel:p-1"}}
		} else {
			out.Say = "Please confirm: Create a task\n• Title: Check the signup form\n• Due: Wed, Dec 2, 2026, 12:00 (America/New_York)\nGo ahead?"
			out.Buttons = []chat.Button{{Label: "✅ Yes", Value: "confirm:p-1"}, {Label: "✖️ No", Value: "cancel:p-1"}}
		}
		out.Pending = &chat.PendingView{Tool: "create_task", Args: json.RawMessage(`{"title":"Check the signup form","due":"2026-12-02T12:00:00+03:00"}`), ExpiresAt: f.clock.Add(10 * time.Minute)}
		pending = &turn.ConfirmationTrace{ID: "p-1", Tool: "create_task", Outcome: "proposed"}
	case strings.HasPrefix(req.Button, "confirm:"):
		out.Say = "Task created: T-1 «Check the signup form»."
		if f.language() == "ru" {
			out.Say = "Готово: задача T-1 «Проверить форму регистрации» создана."
		}
		args := json.RawMessage(`{"title":"Check the signup form"}`)
		result := json.RawMessage(`{"id":"T-1","title":"Check the signup form"}`)
		out.Executed = []chat.Execution{{Tool: "create_task", Args: args, Status: "ok", Result: result}}
		executed = []turn.ExecutionTrace{{
			Tool: "create_task", Args: args, IdempotencyKey: "pending:p-1", Status: "ok", DurationMS: 15,
			Result: &tool.Result{Status: tool.StatusOK, Data: result, Text: "created <i>T-1</i>", Source: "taskboard", ObservedAt: f.clock},
		}}
		pending = &turn.ConfirmationTrace{ID: "p-1", Tool: "create_task", Outcome: "confirmed"}
	case req.Text == "покажи карточку":
		// The board's text of a card ends with the card's link.
		out.Say = "Проверить форму регистрации\nКолонка: Входящие\nhttp://" + r.Host + "/board/c/id0004"
	case req.Text == "long id":
		out.Say = "This turn has a long id."
		turnID = longTurnID
	case req.Text == "wait":
		if !f.await(r, f.gate) {
			return
		}
		out.Say = "Done waiting."
	case req.Text == "busy" && attempt == 1:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the message could not be processed now; retry with the same message_id")
		return
	case req.Text == "busy":
		out.Say = fmt.Sprintf("Processed once, on attempt %d.", attempt)
	case req.Text == "ask":
		a, ok := f.ask(r.Context(), req.ConversationID, chat.Question{
			Text:    "The server «notes» asks to use the model: <b>summarize notes.txt</b> <script>window.__pwned=6</script>. Allow it?",
			Choices: []chat.Button{{Label: "✅ Разрешить", Value: "accept"}, {Label: "✖️ Отклонить", Value: "decline"}},
		})
		if !ok {
			return
		}
		out.Say = "The server's request was answered: " + a.Choice + "."
	case req.Text == "form":
		title, ok := f.ask(r.Context(), req.ConversationID, chat.Question{
			Text:     "The server «tasks» asks for the task's title.",
			Choices:  []chat.Button{{Label: "✖️ Отмена", Value: "cancel"}},
			FreeText: true,
		})
		if !ok {
			return
		}
		prio, ok := f.ask(r.Context(), req.ConversationID, chat.Question{
			Text:    "The server «tasks» asks for the task's priority.",
			Choices: []chat.Button{{Label: "High", Value: "high"}, {Label: "Low", Value: "low"}},
		})
		if !ok {
			return
		}
		out.Say = fmt.Sprintf("Task «%s», priority %s.", title.Text, prio.Choice)
	case req.Text == "expire":
		a, ok := f.ask(r.Context(), req.ConversationID, chat.Question{
			Text:    "The server «mail» asks to read your inbox. Allow it?",
			Choices: []chat.Button{{Label: "✅ Разрешить", Value: "accept"}, {Label: "✖️ Отклонить", Value: "decline"}},
		})
		if ok {
			out.Say = "Answered: " + a.Choice + "."
			break
		}
		if !f.await(r, f.next) {
			return
		}
		out.Say = "No answer came; the server's request was declined."
	default:
		out.Say = "You said: " + req.Text
	}
	out.TurnID = f.record(turnID, req, out.Say, executed, pending)
	writeJSON(w, http.StatusOK, out)
}

// await waits for ch to yield or close; false when the fake is closing or
// the client went away first, and the handler should give up.
func (f *fakeAPI) await(r *http.Request, ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-f.stop:
	case <-r.Context().Done():
	}
	return false
}

// ask puts q on the board and waits for its answer, as a turn does. It
// reports false when the question closed unanswered: expire was called,
// the client went away or the fake is closing.
func (f *fakeAPI) ask(ctx context.Context, conversation string, q chat.Question) (chat.Answer, bool) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f.mu.Lock()
	f.expireAsk = cancel
	f.mu.Unlock()
	go func() {
		select {
		case <-f.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	a, err := f.board.Ask(ctx, fakeOwner, conversation, q, func(string) error { return nil })
	return a, err == nil
}

// expire closes the question being asked unanswered, as its timeout does.
func (f *fakeAPI) expire() {
	f.mu.Lock()
	cancel := f.expireAsk
	f.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// proceed lets an "expire" turn reply; false if none was waiting.
func (f *fakeAPI) proceed() bool {
	select {
	case f.next <- struct{}{}:
		return true
	case <-time.After(10 * time.Second):
		return false
	}
}

// holdPolls makes GET /v1/questions wait until releasePolls, so the page
// cannot learn that a question has closed.
func (f *fakeAPI) holdPolls() { f.holdGate(&f.pollHold) }

func (f *fakeAPI) releasePolls() { f.openGate(&f.pollHold) }

// pollStats returns how many polls were answered and the most that were
// ever in flight at once.
func (f *fakeAPI) pollStats() (n, most int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.polls, f.pollsMax
}

// failPolls makes the next n polls fail with 503.
func (f *fakeAPI) failPolls(n int) {
	f.mu.Lock()
	f.pollFails = n
	f.mu.Unlock()
}

// pollTimesSince returns when the polls after the first n came.
func (f *fakeAPI) pollTimesSince(n int) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.pollTimes[n:])
}

func (f *fakeAPI) answered() []fakeAnswer {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.answers)
}

func (f *fakeAPI) listQuestions(w http.ResponseWriter, r *http.Request) {
	if !f.authorized(w, r) {
		return
	}
	// The hold is looked at and the list taken under one lock, so once
	// holdPolls returns no poll can see what happens next.
	f.mu.Lock()
	f.pollTimes = append(f.pollTimes, time.Now())
	if f.pollFails > 0 {
		f.pollFails--
		f.polls++
		f.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "unavailable", "try again later")
		return
	}
	f.pollsNow++
	f.pollsMax = max(f.pollsMax, f.pollsNow)
	hold := f.pollHold
	var open []questions.Open
	if hold == nil {
		open = f.board.List(fakeOwner, nil)
	}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.pollsNow--
		f.polls++
		f.mu.Unlock()
	}()
	if hold != nil {
		if !f.await(r, hold) {
			return
		}
		open = f.board.List(fakeOwner, nil)
	}
	// As the real API: a conversation_id lists that conversation's only.
	// The page always names its conversation, so a poll without one is
	// refused here to catch a page that forgot.
	conv := r.URL.Query().Get("conversation_id")
	if conv == "" {
		writeError(w, http.StatusBadRequest, "bad_request", "the page must name its conversation")
		return
	}
	shown := []questions.Open{}
	for _, o := range open {
		if o.Conversation == conv {
			shown = append(shown, o)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"questions": shown})
}

func (f *fakeAPI) answerQuestion(w http.ResponseWriter, r *http.Request) {
	if !f.authorized(w, r) {
		return
	}
	id := r.PathValue("id")
	a, err := decodeAnswer(http.MaxBytesReader(w, r.Body, httpapi.DefaultMaxBodyBytes))
	status := http.StatusOK
	switch {
	case err != nil:
		status = http.StatusBadRequest
		writeError(w, status, "bad_request", err.Error())
	default:
		switch err := f.board.Answer(id, fakeOwner, nil, a); {
		case errors.Is(err, questions.ErrUnknown), errors.Is(err, questions.ErrNotYours):
			status = http.StatusNotFound
			writeError(w, status, "not_found", "no open question "+id)
		case errors.Is(err, questions.ErrInvalid):
			status = http.StatusBadRequest
			writeError(w, status, "bad_request", "not an answer this question accepts: name one of its choices, or send text where it takes text")
		case err != nil:
			status = http.StatusInternalServerError
			writeError(w, status, "internal", err.Error())
		default:
			writeJSON(w, status, map[string]bool{"answered": true})
		}
	}
	f.mu.Lock()
	f.answers = append(f.answers, fakeAnswer{ID: id, Answer: a, Status: status})
	f.mu.Unlock()
}

// decodeAnswer reads {"choice": "..."} or {"text": "..."} as strictly as
// the real API does.
func decodeAnswer(body io.Reader) (chat.Answer, error) {
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	var a chat.Answer
	if err := dec.Decode(&a); err != nil {
		return a, fmt.Errorf("body must be a JSON object {\"choice\": ...} or {\"text\": ...}: %v", err)
	}
	if dec.More() {
		return a, errors.New("body must hold one JSON object")
	}
	a.Text = strings.TrimSpace(a.Text)
	switch {
	case (a.Choice == "") == (a.Text == ""):
		return a, errors.New("give exactly one of choice and text")
	case !utf8.ValidString(a.Text) || len(a.Text) > 4000:
		return a, fmt.Errorf("text must be valid UTF-8 of at most %d bytes", 4000)
	}
	return a, nil
}

// longTurnID is an id with no place to break a line.
const longTurnID = "t-01JDX7Q4ZK3M8N2P5R6S9T0V1W2X3Y4Z5A6B7C8D9E0F1G2H3J4K5M6N7P8Q9R0S1T2"

// record journals a turn under id (the next t-N when empty): a trace with
// every part the viewer shows, and a list item.
func (f *fakeAPI) record(id string, req httpapi.MessageRequest, say string, executed []turn.ExecutionTrace, confirmation *turn.ConfirmationTrace) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	if id == "" {
		id = fmt.Sprintf("t-%d", f.seq)
	}
	start := f.clock.Add(time.Duration(f.seq) * time.Minute).Add(123456789 * time.Nanosecond)
	ms := func(n int) time.Time { return start.Add(time.Duration(n) * time.Millisecond) }
	if executed == nil {
		executed = []turn.ExecutionTrace{}
	}
	tr := &turn.Trace{
		TurnID: id, ConversationID: req.ConversationID, Tenant: "acme", UserID: "alice", Channel: "http", MessageID: req.MessageID,
		Route: "model", Status: "ok", StartedAt: start, DurationMS: 420, LockWaitMS: 12,
		MemoryMessages: 3, PromptMessages: 5, PromptBytes: 5120, StablePrefixBytes: 4096, StablePrefixRatio: 0.8,
		Evidence: []chat.Evidence{{Kind: chat.EvidenceForward, Text: "Ivan: <script>window.__pwned=2</script> pay now", Source: "Ivan <b>"}},
		Context: []turn.ContextSourceTrace{
			{Name: "taskboard", DurationMS: 8, Sections: 2},
			{Name: "calendar", DurationMS: 30, Error: "timeout <img src=x>"},
		},
		LLMCalls: []store.LLMCall{
			{Provider: "fireworks", Model: "accounts/fireworks/models/gpt-oss-20b", Operation: "decide", Strategy: "balanced", Attempt: "first",
				InputTokens: 0, DurationMS: 150, Status: "error", Error: "HTTP 429 <script>window.__pwned=4</script>", Note: "blocked provider fireworks for 5m0s", At: ms(40)},
			{Provider: "openai", Model: "gpt-4.1-mini", Operation: "decide", Strategy: "balanced", Attempt: "fallback",
				InputTokens: 1200, CachedInputTokens: 1024, OutputTokens: 80, CostUSD: 0.00041, DurationMS: 210, Status: "ok", At: ms(190)},
		},
		DecidedBy:    &turn.DecidedBy{Provider: "openai", Model: "gpt-4.1-mini"},
		CostUSD:      0.00041,
		Decision:     json.RawMessage(`{"say":"<script>window.__pwned=5</script>","tool":"create_task","args":{"title":"Check the signup form"},"done":false,"newTopic":false,"buttons":[]}`),
		Repair:       &turn.RepairTrace{Output: `{"say": <oops`, Problems: []decision.Problem{{Location: "/", Message: "invalid JSON <b>"}}, Repaired: true, SecondOutput: `{"say":"ok"}`},
		Sections:     turn.Sections{"loop": &loop.Trace{ModelCalls: 3, ToolCalls: 5, ResultBytes: 777, Ended: "needs_review"}},
		Review:       &turn.ReviewTrace{Reason: turn.ReviewRepeatedCall, Detail: "lookup called 3 times <b>", Draft: "draft <i>reply</i>"},
		Vetoes:       []turn.Veto{{Guard: "catalog", Tool: "delete_task", Reason: "not_granted"}},
		Confirmation: confirmation,
		Executed:     executed,
		Questions: []turn.QuestionTrace{{Step: "Report", Text: "Allow <b>sampling</b>?", Choice: "accept"},
			{Step: "Report", Text: "Name?", Error: "context deadline exceeded"}},
		Progress: []chat.Progress{{Step: "Report", Done: 2, Total: 4, Message: "half <i>way</i>"}},
		Say:      say,
		Steps: []turn.StepTrace{
			{Name: "lock", At: ms(0), DurationMS: 12},
			{Name: "dedupe", At: ms(12), DurationMS: 1},
			{Name: "load_memory", At: ms(13), DurationMS: 3},
			{Name: "assemble", At: ms(16), DurationMS: 20},
			{Name: "decide:decide", At: ms(40), DurationMS: 360},
			{Name: "execute:create_task", At: ms(400), DurationMS: 15, Note: "ok"},
		},
		Notes: []string{"a note with <i>markup</i>"},
	}
	raw, err := json.Marshal(tr)
	if err != nil {
		panic(err)
	}
	f.traces[id] = raw
	f.items = append([]httpapi.TurnSummary{{
		TurnID: id, ConversationID: req.ConversationID, UserID: "alice", Route: "model", Status: "ok",
		StartedAt: start, DurationMS: 420, CostUSD: 0.00041, Providers: []string{"fireworks", "openai"},
	}}, f.items...)
	return id
}

func (f *fakeAPI) getTurn(w http.ResponseWriter, r *http.Request) {
	if !f.authorized(w, r) {
		return
	}
	id := r.PathValue("id")
	f.mu.Lock()
	raw, ok := f.traces[id]
	f.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", "no turn "+id)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(raw)
}

func (f *fakeAPI) listTurns(w http.ResponseWriter, r *http.Request) {
	if !f.authorized(w, r) {
		return
	}
	q := r.URL.Query()
	limit := 50
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 && n <= 500 {
		limit = n
	}
	var before time.Time
	if b := q.Get("before"); b != "" {
		t, err := time.Parse(time.RFC3339Nano, b)
		if err != nil {
			writeError(w, http.StatusBadRequest, "bad_request", "before must be an RFC 3339 time")
			return
		}
		before = t
	}
	f.mu.Lock()
	f.queries = append(f.queries, q)
	var out []httpapi.TurnSummary
	for _, it := range f.items {
		if len(out) == limit {
			break
		}
		if !before.IsZero() && !it.StartedAt.Before(before) {
			continue
		}
		if c := q.Get("conversation_id"); c != "" && it.ConversationID != c {
			continue
		}
		if s := q.Get("status"); s != "" && it.Status != s {
			continue
		}
		if p := q.Get("provider"); p != "" && !slices.Contains(it.Providers, p) {
			continue
		}
		out = append(out, it)
	}
	f.mu.Unlock()
	if out == nil {
		out = []httpapi.TurnSummary{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"turns": out})
}

func (f *fakeAPI) getMe(w http.ResponseWriter, r *http.Request) {
	if !f.authorized(w, r) {
		return
	}
	f.mu.Lock()
	hold, me := f.meHold, f.me
	f.mu.Unlock()
	if hold != nil && !f.await(r, hold) {
		return
	}
	writeJSON(w, http.StatusOK, me)
}

// boardReady answers as the real API before it reads the board: 401, or
// 404 no_board when the server has none.
func (f *fakeAPI) boardReady(w http.ResponseWriter, r *http.Request) bool {
	return f.authorized(w, r) && f.allow(w, func() bool { return f.hasBoard },
		http.StatusNotFound, "no_board", "this server has no embedded task board")
}

// The board's cards: one with a comment, one done, one whose title holds
// markup.
func (f *fakeAPI) getBoard(w http.ResponseWriter, r *http.Request) {
	if !f.boardReady(w, r) {
		return
	}
	url := func(id string) string { return "http://" + r.Host + "/board/c/" + id }
	writeJSON(w, http.StatusOK, map[string]any{
		"columns": []map[string]any{
			{"name": "Входящие", "cards": []map[string]any{
				{"id": "id0004", "title": "Проверить форму регистрации", "assignee": "Ольга Смирнова", "due": "2026-12-02", "status": "open", "url": url("id0004")},
				{"id": "id0006", "title": "<b>Позвонить</b> Анне", "status": "open", "url": url("id0006")},
			}},
			{"name": "В работе", "cards": []map[string]any{}},
			{"name": "Готово", "cards": []map[string]any{
				{"id": "id0001", "title": "Собрать требования", "assignee": "Дмитрий Иванов", "status": "done", "url": url("id0001")},
			}},
		},
		"members": []map[string]string{{"id": "olga", "name": "Ольга Смирнова"}, {"id": "dmitry", "name": "Дмитрий Иванов"}},
	})
}

func (f *fakeAPI) getCard(w http.ResponseWriter, r *http.Request) {
	if !f.boardReady(w, r) {
		return
	}
	id := r.PathValue("id")
	if id != "id0004" {
		writeError(w, http.StatusNotFound, "not_found", "no card "+id)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"card": map[string]any{
			"id": "id0004", "title": "Проверить форму регистрации", "description": "Форма не принимает <script>window.__pwned=7</script> длинные адреса.",
			"assignee": "Ольга Смирнова", "due": "2026-12-02", "column": "Входящие", "status": "open", "created_by": "Дмитрий Иванов",
			"created_at": "2026-11-30T09:00:00Z", "updated_at": "2026-11-30T10:15:00Z", "url": "http://" + r.Host + "/board/c/id0004",
		},
		"history": []map[string]any{
			{"at": "2026-11-30T09:00:00Z", "kind": "created", "author": "Дмитрий Иванов"},
			{"at": "2026-11-30T10:15:00Z", "kind": "comment", "author": "Ольга Смирнова", "text": "Начала проверку."},
		},
	})
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	var b struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	b.Error.Code, b.Error.Message = code, msg
	writeJSON(w, status, b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
