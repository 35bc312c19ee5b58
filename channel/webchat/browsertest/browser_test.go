package browsertest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/channel/webchat"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

const chromiumPath = "/usr/bin/chromium"

// browser drives one headless Chromium tab against the app and the fake
// API; every step fails the test with its name.
type browser struct {
	t   *testing.T
	ctx context.Context

	mu        sync.Mutex
	console   []chromedp.ConsoleMessage
	responses []response
}

// response is one HTTP response the page got.
type response struct {
	URL    string
	Status int
}

func (b *browser) do(step string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", step, err)
	}
}

// wait polls a JavaScript predicate until it is true; on a timeout the
// failure shows where the page was.
func (b *browser) wait(step, predicate string) {
	b.t.Helper()
	_, err := chromedp.Run(b.ctx, chromedp.Poll[chromedp.Void](predicate, chromedp.WithPollingTimeout(15*time.Second), chromedp.WithPollingInterval(20*time.Millisecond)))
	if err == nil {
		return
	}
	state, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`JSON.stringify({path: location.pathname,
		views: [...document.querySelectorAll('[id^="view-"]')].filter((v) => !v.hidden).map((v) => v.id),
		focus: document.activeElement && document.activeElement.id, busy: (document.getElementById('composer') || {getAttribute: () => null}).getAttribute('aria-busy'),
		loginError: (document.getElementById('login-error') || {}).textContent, status: (document.getElementById('chat-status') || {}).textContent})`))
	b.t.Fatalf("%s: %v; the page: %s", step, err, state)
}

// eval runs an expression and decodes its JSON value into out.
func (b *browser) eval(step, expr string, out any) {
	b.t.Helper()
	raw, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]byte](expr))
	if err != nil {
		b.t.Fatalf("%s: %v", step, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		b.t.Fatalf("%s: decode %s: %v", step, raw, err)
	}
}

func (b *browser) texts(step, selector string) []string {
	b.t.Helper()
	var out []string
	b.eval(step, `Array.from(document.querySelectorAll(`+jsString(selector)+`), (e) => e.textContent)`, &out)
	return out
}

func (b *browser) check(step, predicate string) {
	b.t.Helper()
	var ok bool
	b.eval(step, "Boolean("+predicate+")", &ok)
	if !ok {
		b.t.Errorf("%s: %s is false", step, predicate)
	}
}

func jsString(s string) string {
	raw, _ := json.Marshal(s)
	return string(raw)
}

// startBrowser serves the app (with the board's pages) and a fake of the
// API with token as its one key, and opens a headless Chromium tab on a
// phone-sized screen. All of it is shut down when the test ends.
func startBrowser(t *testing.T, token string) (*browser, *fakeAPI, *httptest.Server) {
	t.Helper()
	return startBrowserWith(t, token, webchat.PageBoard)
}

// startBrowserWith is startBrowser with the app's pages as given.
func startBrowserWith(t *testing.T, token string, pages ...webchat.Page) (*browser, *fakeAPI, *httptest.Server) {
	t.Helper()
	needBrowser(t)
	api := newFakeAPI(token)
	mux := http.NewServeMux()
	mux.Handle("/v1/", api)
	mux.Handle("/", webchat.Handler(pages...))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	t.Cleanup(api.close) // runs first: nothing held keeps the server open
	return launchBrowser(t), api, srv
}

// needBrowser skips the test where it cannot run.
func needBrowser(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skip("browser test skipped: " + chromiumPath + " is not installed")
	}
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
}

// launchBrowser opens a headless Chromium tab on a phone-sized screen,
// shut down when the test ends.
func launchBrowser(t *testing.T) *browser {
	t.Helper()
	// One bound for the whole run: when it passes, the browser is killed.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(390, 844),
	)
	t.Cleanup(cancelAlloc) // waits for the browser to exit
	tabCtx, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelTab)

	b := &browser{t: t, ctx: tabCtx}
	b.do("start the browser on a phone-sized screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	messages := chromedp.Console(tabCtx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.console = append(b.console, m)
			b.mu.Unlock()
		}
	}()
	responses := chromedp.Events(tabCtx, network.ResponseReceived)
	go func() {
		for ev, err := range responses {
			if err != nil {
				return
			}
			if ev.Response == nil {
				continue
			}
			b.mu.Lock()
			b.responses = append(b.responses, response{URL: ev.Response.URL, Status: int(ev.Response.Status)})
			b.mu.Unlock()
		}
	}()
	return b
}

// signIn opens the app and signs in with token.
func (b *browser) signIn(url, token string) {
	b.t.Helper()
	b.do("open the app", chromedp.Navigate(url+"/"))
	b.wait("the sign-in form, focused", `!document.getElementById('view-login').hidden && document.activeElement.id === 'login-key'`)
	b.do("sign in with Enter", chromedp.SendKeys(chromedp.ID("login-key"), token+kb.Enter))
	b.wait("the chat, with focus in the message box", `!document.getElementById('view-chat').hidden && document.activeElement.id === 'message-input'`)
}

// answered returns the responses the page got so far whose status is
// status; zero returns them all.
func (b *browser) answered(status int) []response {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []response
	for _, r := range b.responses {
		if status == 0 || r.Status == status {
			out = append(out, r)
		}
	}
	return out
}

// uiTextJS collects the page's own words: every text node and the
// attributes people or screen readers get (aria-label, title, the labels
// of stacked table cells) and the document's title, but for what came from
// the server or the user: message texts, the server's button labels, JSON.
const uiTextJS = `(() => {
	const data = 'noscript, pre, .message .text, .chips, .confirm-buttons, .question .choices, .question-outcome strong, .conversation-title, .skill-name';
	const parts = [document.title];
	const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
	for (let n = walk.nextNode(); n; n = walk.nextNode()) {
		if (!n.parentElement.closest(data)) parts.push(n.data);
	}
	for (const el of document.querySelectorAll('[aria-label], [title], [placeholder], [alt], [data-label]')) {
		if (el.closest(data)) continue;
		for (const a of ['aria-label', 'title', 'placeholder', 'alt', 'data-label']) {
			if (el.hasAttribute(a)) parts.push(el.getAttribute(a));
		}
	}
	return parts.join('\n');
})()`

// englishUI are words of the app's English interface that no data of the
// fake holds with the same case.
var englishUI = []string{
	"Skip to content", "Chat", "Turns", "Board", "Sign out", "Sign in", "API key", "Conversations", "Conversation", "New",
	"Message", "Send", "Enter sends", "Trace", "Result", "Expires", "Waiting", "confirmation", "Confirmation", "Details", "You",
	"Assistant", "Suggested", "typing", "Actions run", "Filter", "Clear", "Show", "Started", "Turn", "User", "Route", "Status",
	"Duration", "Cost", "Providers", "Older", "All turns", "Summary", "Timeline", "Context sources", "Model calls", "Prompt",
	"Decision", "Repair", "Agent loop", "Needs review", "Vetoes", "Executions", "Evidence", "Notes", "Tenant", "Channel",
	"Lock wait", "Decided by", "Reply", "Arguments", "Idempotency", "Tool", "Outcome", "Reason", "Detail", "Questions",
	"Progress", "bytes", "whole record", "Bars", "from", "Loading", "Column", "Assignee", "Due", "Created", "Updated",
	"History", "Description", "Open", "Done", "cards", "Main",
}

// noEnglish fails the test for English words of the interface on the
// page.
func (b *browser) noEnglish(step string) {
	b.t.Helper()
	var text string
	b.eval(step+": the page's words", uiTextJS, &text)
	for _, w := range englishUI {
		if regexp.MustCompile(`\b` + regexp.QuoteMeta(w) + `\b`).MatchString(text) {
			b.t.Errorf("%s: the page says %q in English", step, w)
		}
	}
}

// noCyrillic fails the test for Russian letters in the page's own words.
func (b *browser) noCyrillic(step string) {
	b.t.Helper()
	var text string
	b.eval(step+": the page's words", uiTextJS, &text)
	if m := regexp.MustCompile(`.{0,20}[А-Яа-яЁё]+.{0,20}`).FindString(text); m != "" {
		b.t.Errorf("%s: the page's own words hold Russian: %q", step, m)
	}
}

// scrollersJS lists what scrolls on the page: the document, and every
// element whose content overflows a box that scrolls.
const scrollersJS = `(() => {
	const out = [];
	const doc = document.scrollingElement;
	if (doc.scrollHeight > doc.clientHeight + 1 || doc.scrollWidth > doc.clientWidth + 1) out.push('document');
	for (const el of document.querySelectorAll('body *')) {
		const cs = getComputedStyle(el);
		const y = /auto|scroll/.test(cs.overflowY) && el.scrollHeight > el.clientHeight + 1;
		const x = /auto|scroll/.test(cs.overflowX) && el.scrollWidth > el.clientWidth + 1;
		if (x || y) out.push(el.id || el.className || el.tagName);
	}
	return out;
})()`

// oneScroller fails the test when more than one region of the page
// scrolls, or when it is not want ("" for any).
func (b *browser) oneScroller(step, want string) {
	b.t.Helper()
	var got []string
	b.eval(step, scrollersJS, &got)
	if len(got) > 1 || (want != "" && len(got) == 1 && got[0] != want) {
		b.t.Errorf("%s: scrolling regions %q, want at most %q", step, got, want)
	}
}

// composerInView checks the message box and its button are on screen.
const composerInView = `(() => {
	const r = document.getElementById('composer').getBoundingClientRect();
	return r.top >= 0 && r.bottom <= window.innerHeight && r.height > 0;
})()`

// consoleClean fails the test for errors, exceptions and policy
// violations the page logged, but for failed requests the test asked for.
func (b *browser) consoleClean() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.console {
		if m.Source == "network" {
			continue // the 401, 404 and 503 answers the test asked for
		}
		if m.IsException() || m.Type == chromedp.ConsoleError || strings.Contains(m.Text, "Content Security Policy") || strings.Contains(m.Text, "Trusted Type") {
			b.t.Errorf("browser console: %s", m)
		}
	}
}

// TestBrowserInterview: an interviewer's question shows its options as
// chips, a click answers it, and the result is marked with the model's
// confidence.
func TestBrowserInterview(t *testing.T) {
	const token = "k-browser-test-0123456789"
	b, api, srv := startBrowser(t, token)
	b.do("open the app", chromedp.Navigate(srv.URL+"/"))
	b.do("sign in", chromedp.WaitVisible(chromedp.ID("login-key")), chromedp.SendKeys(chromedp.ID("login-key"), token+kb.Enter))
	b.wait("the chat", `!document.getElementById('view-chat').hidden`)
	b.do("a vague request", chromedp.SendKeys(chromedp.ID("message-input"), "optimize the function"+kb.Enter))
	b.wait("the question's chips", `document.querySelectorAll('#messages [data-turn="t-1"] .chip').length === 3`)
	if got := b.texts("chips", `#messages [data-turn="t-1"] .chip`); strings.Join(got, "|") != "Laravel 10|Laravel 11|Не знаю" {
		t.Errorf("chips = %q", got)
	}
	b.do("answer with a chip", chromedp.Click(chromedp.CSS(`#messages [data-turn="t-1"] .chip[data-value="Laravel 11"]`)))
	b.wait("the result", `document.querySelector('#messages [data-turn="t-2"] .badge.final')?.textContent === 'Result · confidence 80%'`)
	if last := api.sent()[len(api.sent())-1]; last.Button != "Laravel 11" || last.Text != "" {
		t.Errorf("the option chip sent %+v", last)
	}
	b.check("the answered question's chips are disabled", `document.querySelector('#messages [data-turn="t-1"] .chip').disabled`)

	// A skill's badge over the message box, and its × leaving it.
	b.check("no skill badge yet", `document.getElementById('skill-badge').hidden`)
	b.do("a health question", chromedp.SendKeys(chromedp.ID("message-input"), "my tummy hurts"+kb.Enter))
	b.wait("the skill badge", `!document.getElementById('skill-badge').hidden && document.querySelector('#skill-badge .skill-name').textContent === 'Skill: Здоровье'`)
	b.do("leave with the ×", chromedp.Click(chromedp.ID("skill-off")))
	b.wait("the badge goes", `document.getElementById('skill-badge').hidden`)
	if last := api.sent()[len(api.sent())-1]; last.Button != "skill:none" {
		t.Errorf("the × sent %+v", last)
	}
}

// TestBrowser drives the app in headless Chromium, on a phone-sized
// window, against a fake of the API, as an English user: sign-in (with no
// 404 on the way), a reply with chips, a chip, a confirmation with the
// server's own text and buttons, the typing indicator, a retry after 503,
// the trace viewer, the list of turns with filters, a server without a
// board, server text with markup, no Russian in the interface, and a
// refused key.
func TestBrowser(t *testing.T) {
	const token = "k-browser-test-0123456789"
	b, api, srv := startBrowser(t, token)

	// Sign in: a refused key stays on the form, the right one opens the chat.
	b.do("open the app", chromedp.Navigate(srv.URL+"/"))
	b.wait("the sign-in form, focused", `!document.getElementById('view-login').hidden && document.activeElement.id === 'login-key'`)
	b.check("no navigation before sign-in", `document.getElementById('main-nav').hidden`)
	b.do("a wrong key", chromedp.SendKeys(chromedp.ID("login-key"), "wrong-key"), chromedp.Click(chromedp.ID("login-submit")))
	b.wait("the wrong key is refused", `document.getElementById('login-error').textContent.includes('did not accept')`)
	b.check("a refused key is not stored", `sessionStorage.length === 0`)
	b.check("the refused key is cleared from the field", `document.getElementById('login-key').value === ''`)
	b.do("the right key, with Enter", chromedp.SendKeys(chromedp.ID("login-key"), token+kb.Enter))
	b.wait("the chat, with focus in the message box", `!document.getElementById('view-chat').hidden && document.activeElement.id === 'message-input'`)
	b.check("the key is in sessionStorage", `sessionStorage.getItem('arbiter.webchat.key') === `+jsString(token))
	b.check("nothing in localStorage or cookies", `localStorage.length === 0 && document.cookie === ''`)
	b.check("the page is in the user's language", `document.documentElement.lang === 'en'`)
	if got := b.answered(http.StatusNotFound); len(got) != 0 {
		t.Errorf("signing in got 404 for %v", got)
	}
	if got := b.answered(http.StatusOK); !slices.ContainsFunc(got, func(r response) bool { return strings.HasSuffix(r.URL, "/v1/me") }) {
		t.Errorf("signing in never asked GET /v1/me: %v", b.answered(0))
	}

	// A reply with chips; its text holds markup, shown as text.
	b.do("send hello with Enter", chromedp.SendKeys(chromedp.ID("message-input"), "hello"+kb.Enter))
	b.wait("the reply", `document.querySelectorAll('#messages .message.assistant').length === 1`)
	if got := b.texts("reply text", "#messages .message.assistant .text"); len(got) != 1 || got[0] != "Hi! <script>window.__pwned=1</script> What shall we do?" {
		t.Errorf("reply text = %q", got)
	}
	if got := b.texts("chips", "#messages .message.assistant .chip"); strings.Join(got, "|") != "Show my tasks|<b>bold</b>" {
		t.Errorf("chips = %q", got)
	}
	b.check("the reply links to its trace", `document.querySelector('#messages [data-turn="t-1"] .trace-link a').getAttribute('href') === '/turns/t-1'`)
	b.check("the message box is emptied", `document.getElementById('message-input').value === ''`)
	sent := api.sent()
	if len(sent) != 1 || sent[0].Text != "hello" || !strings.HasPrefix(sent[0].ConversationID, "web-") || sent[0].MessageID == "" {
		t.Fatalf("sent = %+v", sent)
	}
	conversation := sent[0].ConversationID

	// A chip sends its value in one click.
	b.do("click the chip", chromedp.Click(chromedp.CSS(`#messages [data-turn="t-1"] .chip[data-value="/tasks"]`)))
	b.wait("the chip's reply", `document.querySelector('#messages [data-turn="t-2"] .text')?.textContent.startsWith('You have 2 tasks')`)
	if last := api.sent()[1]; last.Button != "/tasks" || last.Text != "" || last.ConversationID != conversation {
		t.Errorf("the chip sent %+v", last)
	}
	b.check("the chip shows as the user's message", `Array.from(document.querySelectorAll('#messages .message.user .text')).some((e) => e.textContent === 'Show my tasks')`)
	b.check("used chips are disabled", `document.querySelector('#messages [data-turn="t-1"] .chip').disabled`)
	b.check("focus returns to the message box", `document.activeElement.id === 'message-input'`)

	// A pending action: the server's text once, its own buttons, the
	// expiry in the user's zone, the arguments behind a closed toggle.
	b.do("ask for a task", chromedp.SendKeys(chromedp.ID("message-input"), "create a task"), chromedp.Click(chromedp.ID("send")))
	b.wait("the confirmation", `document.querySelectorAll('#messages [data-turn="t-3"] .pending button').length === 2`)
	confirmation(b, "t-3", confirmationWant{
		text:    "Please confirm: Create a task\n• Title: Check the signup form\n• Due: Wed, Dec 2, 2026, 12:00 (America/New_York)\nGo ahead?",
		buttons: "Yes ✅|No ✖️",                                      // the words first: a box where no emoji font is comes after them
		expires: []string{"Expires ", "4:10", "(America/New_York)"}, // 09:10 UTC in New York
		details: "Details",
	})
	b.do("confirm with ✅ Yes", chromedp.Click(chromedp.CSS(`#messages [data-turn="t-3"] .pending button.yes`)))
	b.wait("the executed action", `document.querySelector('#messages [data-turn="t-4"] .text')?.textContent.startsWith('Task created')`)
	if last := api.sent()[2:]; len(last) != 2 || last[1].Button != "confirm:p-1" || last[1].Text != "" {
		t.Errorf("the confirmation sent %+v", last)
	}
	b.check("the pressed button shows as the user's message, in the server's words", `Array.from(document.querySelectorAll('#messages .message.user .text')).some((e) => e.textContent === '✅ Yes')`)
	b.check("the executed action is listed", `document.querySelector('#messages [data-turn="t-4"] .executed').textContent.includes('create_task')`)
	b.check("its result is behind a closed toggle", `(() => {
		const d = document.querySelector('#messages [data-turn="t-4"] .executed details');
		return !d.open && d.querySelector('summary').textContent === 'Result' && !d.querySelector('pre').checkVisibility();
	})()`)
	b.check("the buttons are disabled once used", `Array.from(document.querySelectorAll('#messages [data-turn="t-3"] .pending button')).every((e) => e.disabled)`)
	b.check("the message box is in view, with the focus", composerInView+` && document.activeElement.id === 'message-input'`)
	b.oneScroller("the chat scrolls only its log", "messages")
	b.noCyrillic("the chat")

	// The typing indicator shows while a turn runs.
	b.do("send a slow message", chromedp.SendKeys(chromedp.ID("message-input"), "wait"+kb.Enter))
	b.wait("the typing indicator appears", `document.getElementById('typing').textContent.includes('typing') && document.getElementById('send').disabled`)
	api.release()
	b.wait("the typing indicator goes", `document.getElementById('typing').textContent === '' && document.querySelector('#messages [data-turn="t-5"]') !== null`)

	// 503: the app says so and retries once with the same message_id.
	b.do("send while busy", chromedp.SendKeys(chromedp.ID("message-input"), "busy"+kb.Enter))
	b.wait("busy, retrying", `document.getElementById('chat-status').textContent.includes('busy, retrying')`)
	b.wait("the retried reply", `document.querySelector('#messages [data-turn="t-6"] .text')?.textContent === 'Processed once, on attempt 2.'`)
	b.check("the notice is gone", `document.getElementById('chat-status').textContent === ''`)
	sent = api.sent()
	if n := len(sent); n != 7 || sent[5].Text != "busy" || sent[6].MessageID != sent[5].MessageID {
		t.Errorf("the retry was not the same message: %+v", sent)
	}
	ids := map[string]bool{}
	for _, m := range sent[:6] {
		if m.MessageID == "" || ids[m.MessageID] {
			t.Errorf("message_id %q is empty or repeated", m.MessageID)
		}
		ids[m.MessageID] = true
	}
	b.check("no horizontal scrolling on a phone", `window.innerWidth === 390 && document.documentElement.scrollWidth <= 390`)

	// The trace of a reply.
	b.do("open a trace", chromedp.Click(chromedp.CSS(`#messages [data-turn="t-4"] .trace-link a`)))
	b.wait("the trace", `location.pathname === '/turns/t-4' && document.querySelectorAll('#trace-body .timeline .step').length === 6`)
	b.check("focus on the trace's heading", `document.activeElement.id === 'trace-title'`)
	if got := b.texts("steps", "#trace-body .timeline .step-name"); strings.Join(got, ",") != "lock,dedupe,load_memory,assemble,decide:decide,execute:create_task" {
		t.Errorf("steps = %q", got)
	}
	b.check("bars are scaled to the turn", `document.querySelector('#trace-body [data-step="decide:decide"] .bar').style.width === '85.71%' && document.querySelector('#trace-body [data-step="execute:create_task"] .bar').style.left === '95.24%'`)
	b.check("the lock wait", `document.getElementById('trace-body').textContent.includes('The lock wait is 12 ms')`)
	var calls [][]string
	b.eval("model calls", `Array.from(document.querySelectorAll('#trace-body .llm-calls tbody tr'), (tr) => Array.from(tr.cells, (td) => td.textContent))`, &calls)
	if len(calls) != 2 {
		t.Fatalf("model calls = %q", calls)
	}
	want := [][]string{
		{"1", "first", "fireworks", "accounts/fireworks/models/gpt-oss-20b", "decide (balanced)", "0 / 0 / 0", "$0", "150 ms", "error", "HTTP 429 <script>window.__pwned=4</script>", "blocked provider fireworks for 5m0s"},
		{"2", "fallback", "openai", "gpt-4.1-mini", "decide (balanced)", "1,200 / 1,024 / 80", "$0.000410", "210 ms", "ok", "—", "—"},
	}
	for i := range want {
		if strings.Join(calls[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("model call %d = %q, want %q", i+1, calls[i], want[i])
		}
	}
	body := strings.Join(b.texts("trace", "#trace-body"), "")
	for _, s := range []string{
		"taskboard", "timeout <img src=x>", // context sources
		`"tool": "create_task"`,             // the decision
		"invalid JSON <b>", `{"say": <oops`, // the repair
		"777", "repeated_call", "lookup called 3 times <b>", "draft <i>reply</i>", // the loop and its hand-off
		"catalog", "not_granted", // a veto
		"confirmed",                         // the confirmation
		"pending:p-1", "created <i>T-1</i>", // the execution and its result
		`<evidence kind="forward" source="Ivan ‹b›">`, "<script>window.__pwned=2</script>", // evidence as the model saw it
		"openai / gpt-4.1-mini", "80%", // decided by, prompt cache
		"Allow <b>sampling</b>?", "accept", "context deadline exceeded", "2 / 4", "half <i>way</i>", // questions and progress
	} {
		if !strings.Contains(body, s) {
			t.Errorf("the trace lacks %q", s)
		}
	}
	b.check("no horizontal scrolling on a phone", `window.innerWidth === 390 && document.documentElement.scrollWidth <= 390`)
	b.oneScroller("the trace scrolls with the page", "document")
	b.noCyrillic("the trace")

	// The list of turns, filtered.
	b.do("open the list", chromedp.Click(chromedp.CSS(`#main-nav a[data-nav="turns"]`)))
	b.wait("every turn", `location.pathname === '/turns' && document.querySelectorAll('#turns-body tr').length === 8`)
	b.check("the total cost", `document.getElementById('turns-summary').textContent === '8 turns shown, total cost $0.002660.'`)
	b.do("filter by provider",
		chromedp.SendKeys(chromedp.ID("filter-provider"), "mistral"),
		chromedp.Click(chromedp.ID("filter-apply")))
	b.wait("one mistral turn", `location.search === '?provider=mistral' && document.querySelectorAll('#turns-body tr').length === 1 && document.querySelector('#turns-body tr').dataset.turn === 't-old-1'`)
	b.do("clear the filters", chromedp.Click(chromedp.ID("filter-clear")))
	b.wait("the filters are cleared", `location.search === '' && document.getElementById('filter-provider').value === '' && document.querySelectorAll('#turns-body tr').length === 8`)
	b.do("filter by conversation and status",
		chromedp.SendKeys(chromedp.ID("filter-conversation"), conversation),
		chromedp.SendKeys(chromedp.ID("filter-status"), "ok"),
		chromedp.Click(chromedp.ID("filter-apply")))
	b.wait("this conversation's turns", `new URLSearchParams(location.search).get('conversation_id') === `+jsString(conversation)+` && document.querySelectorAll('#turns-body tr').length === 6`)
	qs := api.listQueries()
	if last := qs[len(qs)-1]; last.Get("conversation_id") != conversation || last.Get("status") != "ok" || last.Get("provider") != "" || last.Get("limit") != "50" {
		t.Errorf("the list was asked with %v", last)
	}
	b.do("go back", chromedp.Evaluate[chromedp.Void](`history.back()`))
	b.wait("back to the whole list", `location.search === '' && document.querySelectorAll('#turns-body tr').length === 8`)
	b.noCyrillic("the turns")

	// A server without a board says so in the user's words.
	b.do("open the board", chromedp.Click(chromedp.CSS(`#main-nav a[data-nav="board"]`)))
	b.wait("no board", `location.pathname === '/board' && document.getElementById('board-error').textContent === 'This server has no task board.'`)
	b.check("focus on the board's heading", `document.activeElement.id === 'board-title' && document.title === 'Board — arbiter'`)
	b.noCyrillic("the board")

	// Nothing the server sent ran or became markup.
	b.check("no injected elements", `document.querySelectorAll('main script, main b, main i, main img').length === 0`)
	b.check("no injected script ran", `window.__pwned === undefined`)
	// A key the server stops accepting sends the user back to sign in.
	api.setToken("rotated")
	b.do("back to the chat", chromedp.Click(chromedp.CSS(`#main-nav a[data-nav="chat"]`)))
	b.wait("the chat", `!document.getElementById('view-chat').hidden && document.activeElement.id === 'message-input'`)
	b.wait("nothing in flight", `document.getElementById('composer').getAttribute('aria-busy') !== 'true'`)
	b.do("send with a revoked key", chromedp.SendKeys(chromedp.ID("message-input"), "hello again"+kb.Enter))
	b.wait("the sign-in form again", `!document.getElementById('view-login').hidden && document.getElementById('login-error').textContent.includes('did not accept') && document.activeElement.id === 'login-key'`)
	b.check("the key is dropped", `sessionStorage.getItem('arbiter.webchat.key') === null`)

	b.consoleClean()

	// Last, as the refusal is logged to the console.
	var sink string
	b.eval("the policy refuses HTML strings", `(() => { try { document.createElement('div').innerHTML = '<b>x</b>'; return 'allowed'; } catch (e) { return e.name; } })()`, &sink)
	if sink != "TypeError" {
		t.Errorf("assigning a string to innerHTML: %s, want TypeError (Trusted Types)", sink)
	}
}

// TestBrowserQuestions: while a message is in flight, what its turn asks
// shows as a card in the conversation: a choice pressed, a form answered
// field by field (a refused answer first, then one typed), a question that
// times out, one that had closed before its answer came (404), and no
// polling once the reply is in or after signing out.
func TestBrowserQuestions(t *testing.T) {
	const token = "k-browser-questions-0123"
	b, api, srv := startBrowser(t, token)
	b.signIn(srv.URL, token)
	const cards = `Array.from(document.querySelectorAll('#messages .message.question'))`
	const replies = `Array.from(document.querySelectorAll('#messages .message.assistant .text'), (e) => e.textContent)`

	// A choice: the card, the button, the answer, the reply.
	b.do("send ask", chromedp.SendKeys(chromedp.ID("message-input"), "ask"+kb.Enter))
	b.wait("the question's card", cards+`.length === 1`)
	b.wait("the card takes the focus", `document.activeElement === `+cards+`[0]`)
	card := cardSelector(b, 0)
	if got := b.texts("question text", card+" .text"); len(got) != 1 || got[0] != "The server «notes» asks to use the model: <b>summarize notes.txt</b> <script>window.__pwned=6</script>. Allow it?" {
		t.Errorf("question text = %q", got)
	}
	if got := b.texts("question label", card+" .question-label"); len(got) != 1 || got[0] != "The assistant asks" {
		t.Errorf("question label = %q", got)
	}
	if got := b.texts("choices", card+" button.choice"); strings.Join(got, "|") != "✅ Разрешить|✖️ Отклонить" {
		t.Errorf("choices = %q", got)
	}
	b.check("the card is a group named by its label and text", `(() => {
		const c = document.querySelector(`+jsString(card)+`);
		const names = c.getAttribute('aria-labelledby').split(' ').map((id) => document.getElementById(id).textContent);
		return c.getAttribute('role') === 'group' && names.join(' ') === 'The assistant asks ' + c.querySelector('.text').textContent;
	})()`)
	b.check("no answer box where text is not taken", `document.querySelector(`+jsString(card)+`).querySelector('input') === null`)
	b.wait("the live status says the assistant waits", `document.getElementById('typing').textContent.includes('waiting for your answer')`)
	b.do("allow", chromedp.Click(chromedp.CSS(card+` button.choice[data-value="accept"]`)))
	b.wait("the reply", replies+`.includes("The server's request was answered: accept.")`)
	b.check("the card shows the answer and is inert", `(() => {
		const c = document.querySelector(`+jsString(card)+`);
		return c.querySelector('.question-outcome').textContent === 'You answered: ✅ Разрешить' && c.querySelector('button, input') === null;
	})()`)
	b.check("the typing line is cleared", `document.getElementById('typing').textContent === ''`)
	if got := api.answered(); len(got) != 1 || got[0].Answer.Choice != "accept" || got[0].Status != http.StatusOK {
		t.Errorf("answers = %+v", got)
	}
	// Polls come about once a second, one at a time, and stop with the reply.
	polls, most := api.pollStats()
	if polls == 0 || most != 1 {
		t.Errorf("%d polls, at most %d at once; want some, one at a time", polls, most)
	}
	time.Sleep(1500 * time.Millisecond)
	if again, _ := api.pollStats(); again != polls {
		t.Errorf("%d polls after the reply", again-polls)
	}

	// A form, field by field: a typed title the server refuses, the title
	// typed again, then a priority chosen with the keyboard.
	b.do("send form", chromedp.SendKeys(chromedp.ID("message-input"), "form"+kb.Enter))
	b.wait("the title question", cards+`.length === 2`)
	card = cardSelector(b, 1)
	b.wait("the card takes the focus", `document.activeElement === document.querySelector(`+jsString(card)+`)`)
	b.check("the answer box is labelled and has its own button", `(() => {
		const c = document.querySelector(`+jsString(card)+`);
		const input = c.querySelector('input');
		return c.querySelector('label').htmlFor === input.id && c.querySelector('label').textContent === 'Or type your answer' &&
			c.querySelector('button[type="submit"]').textContent === 'Send answer' && c.querySelectorAll('button.choice').length === 1;
	})()`)
	b.do("a title too long for the server (5000 bytes)",
		chromedp.Evaluate[chromedp.Void](`(() => { const i = document.querySelector(`+jsString(card+" input")+`); i.value = 'я'.repeat(2500); i.dispatchEvent(new Event('input')); })()`),
		chromedp.Click(chromedp.CSS(card+` button[type="submit"]`)))
	b.wait("the refusal", `document.querySelector(`+jsString(card+" .error")+`)?.textContent.includes('at most 4000 bytes')`)
	b.check("the box is invalid, described by the error, focused and kept", `(() => {
		const input = document.querySelector(`+jsString(card+" input")+`);
		return input.getAttribute('aria-invalid') === 'true' && input.getAttribute('aria-describedby') === document.querySelector(`+jsString(card+" .error")+`).id &&
			document.activeElement === input && input.value.length === 2500 && !input.disabled;
	})()`)
	b.do("type the title and press Enter",
		chromedp.Evaluate[chromedp.Void](`(() => { const i = document.querySelector(`+jsString(card+" input")+`); i.value = ''; i.dispatchEvent(new Event('input')); })()`),
		chromedp.SendKeys(chromedp.CSS(card+" input"), "Check the <i>signup</i> form"+kb.Enter))
	b.wait("the title is answered", `document.querySelector(`+jsString(card+" .question-outcome")+`)?.textContent === 'You answered: Check the <i>signup</i> form'`)
	b.wait("the priority question, with the focus", cards+`.length === 3 && document.activeElement === `+cards+`[2]`)
	card = cardSelector(b, 2)
	b.do("Tab to the first choice and press Enter", chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent(kb.Enter))
	b.wait("the form's reply", replies+`.includes('Task «Check the <i>signup</i> form», priority high.')`)
	if got := b.texts("the priority card", card+" .question-outcome"); len(got) != 1 || got[0] != "You answered: High" {
		t.Errorf("the priority card says %q", got)
	}
	got := api.answered()
	if len(got) != 4 || got[1].Status != http.StatusBadRequest || got[2].Answer.Text != "Check the <i>signup</i> form" || got[2].Status != http.StatusOK || got[3].Answer.Choice != "high" {
		t.Errorf("answers = %+v", got)
	}

	// A question whose wait runs out: the card says it has closed, and the
	// turn goes on.
	b.do("send expire", chromedp.SendKeys(chromedp.ID("message-input"), "expire"+kb.Enter))
	b.wait("the question's card", cards+`.length === 4`)
	card = cardSelector(b, 3)
	api.expire()
	b.wait("the card says it has closed", `document.querySelector(`+jsString(card+" .question-outcome.closed")+`)?.textContent.includes('has closed')`)
	b.check("the closed card takes no answer", `document.querySelector(`+jsString(card)+`).querySelector('button, input') === null`)
	if !api.proceed() {
		t.Fatal("the expire turn was not waiting")
	}
	b.wait("the turn's reply", replies+`.filter((s) => s.startsWith('No answer came')).length === 1`)

	// A question that closed before the page heard of it: the answer gets
	// 404 and the card says the answer was not used.
	b.do("send expire again", chromedp.SendKeys(chromedp.ID("message-input"), "expire"+kb.Enter))
	b.wait("the question's card", cards+`.length === 5`)
	card = cardSelector(b, 4)
	api.holdPolls()
	api.expire()
	b.do("decline a closed question", chromedp.Click(chromedp.CSS(card+` button.choice[data-value="decline"]`)))
	b.wait("the card says it had closed", `document.querySelector(`+jsString(card+" .question-outcome.closed")+`)?.textContent.includes('had already closed')`)
	if got := api.answered(); got[len(got)-1].Status != http.StatusNotFound {
		t.Errorf("the late answer got %d, want 404", got[len(got)-1].Status)
	}
	api.releasePolls()
	if !api.proceed() {
		t.Fatal("the expire turn was not waiting")
	}
	b.wait("the turn's reply", replies+`.filter((s) => s.startsWith('No answer came')).length === 2`)
	b.check("no horizontal scrolling on a phone", `window.innerWidth === 390 && document.documentElement.scrollWidth <= 390`)

	// A failed poll makes the next one wait longer; the question still
	// comes. Then signing out stops the polling of a message in flight.
	polls, _ = api.pollStats()
	api.failPolls(1)
	b.do("send ask", chromedp.SendKeys(chromedp.ID("message-input"), "ask"+kb.Enter))
	b.wait("the question's card, after a failed poll", cards+`.length === 6`)
	if at := api.pollTimesSince(polls); len(at) < 2 || at[1].Sub(at[0]) < 1800*time.Millisecond {
		t.Errorf("polls after a failure came at %v, want the second at least 2 s after the first", at)
	}
	b.do("sign out", chromedp.Click(chromedp.ID("logout")))
	b.wait("the sign-in form", `!document.getElementById('view-login').hidden`)
	polls, most = api.pollStats()
	time.Sleep(1500 * time.Millisecond)
	if again, _ := api.pollStats(); again != polls {
		t.Errorf("%d polls after signing out", again-polls)
	}
	if most != 1 {
		t.Errorf("at most %d polls at once, want 1", most)
	}

	b.check("no injected elements", `document.querySelectorAll('main script, main b, main i, main img').length === 0`)
	b.check("no injected script ran", `window.__pwned === undefined`)
	b.consoleClean()
}

// confirmationWant is what a confirmation shows: the server's text, the
// labels of its buttons, parts of the expiry line and the toggle's name.
type confirmationWant struct {
	text, buttons string
	expires       []string
	details       string
}

// confirmation checks the pending action of the reply of turn: the
// server's text shown once, no words of the app's own about it, the
// server's buttons, the expiry, and the arguments only behind a closed
// toggle, which opens.
func confirmation(b *browser, turn string, want confirmationWant) {
	b.t.Helper()
	msg := `#messages [data-turn="` + turn + `"]`
	if got := b.texts("the confirmation's text", msg+" .text"); len(got) != 1 || got[0] != want.text {
		b.t.Errorf("the confirmation's text = %q, want %q", got, want.text)
	}
	if got := b.texts("the confirmation's buttons", msg+" .pending button"); strings.Join(got, "|") != want.buttons {
		b.t.Errorf("the confirmation's buttons = %q, want %q", got, want.buttons)
	}
	expires := strings.Join(b.texts("the expiry", msg+" .pending .expires"), "")
	for _, part := range want.expires {
		if !strings.Contains(expires, part) {
			b.t.Errorf("the expiry %q lacks %q", expires, part)
		}
	}
	// What a person sees of the message: the arguments once, in the
	// server's text, and no JSON.
	var shown string
	b.eval("the confirmation as seen", `document.querySelector(`+jsString(msg)+`).innerText`, &shown)
	if strings.Contains(shown, "{") || strings.Contains(shown, `"title"`) {
		b.t.Errorf("the confirmation shows JSON: %q", shown)
	}
	b.check("the arguments are behind a closed toggle", `(() => {
		const d = document.querySelector(`+jsString(msg+" .pending details")+`);
		return d && !d.open && d.querySelector('summary').textContent === `+jsString(want.details)+` &&
			Array.from(document.querySelectorAll(`+jsString(msg+" pre")+`)).every((p) => !p.checkVisibility());
	})()`)
	b.do("open the details", chromedp.Click(chromedp.CSS(msg+" .pending details summary")))
	b.wait("the arguments as JSON", `(() => {
		const pre = document.querySelector(`+jsString(msg+" .pending details pre")+`);
		return pre.checkVisibility() && pre.textContent.includes('"due": "2026-12-02T12:00:00+03:00"');
	})()`)
	b.do("close the details", chromedp.Click(chromedp.CSS(msg+" .pending details summary")))
	b.wait("the details closed", `!document.querySelector(`+jsString(msg+" .pending details")+`).open`)
}

// cardSelector is a CSS selector for the i-th question card of the log.
func cardSelector(b *browser, i int) string {
	b.t.Helper()
	var id string
	b.eval("the id of question card "+strconv.Itoa(i), `document.querySelectorAll('#messages .message.question')[`+strconv.Itoa(i)+`].dataset.question`, &id)
	return `#messages [data-question="` + id + `"]`
}

// russianBrowser makes the tab's browser ask for Russian, as a browser set
// up in Russian does.
func (b *browser) russianBrowser() {
	b.t.Helper()
	var ua string
	b.eval("the browser's user agent", `navigator.userAgent`, &ua)
	if _, err := chromedp.Call(b.ctx, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: ua, AcceptLanguage: "ru-RU,ru"}); err != nil {
		b.t.Fatalf("a Russian browser: %v", err)
	}
}

// TestBrowserRussian: a Russian user in Moscow, on a phone. A card's
// address opened before signing in comes back after it; the card and the
// board in Russian with times in Moscow; a confirmation with the server's
// text and buttons; a board link in a reply opens the card inside the app;
// a reload speaks Russian before the server is asked again; the trace of a
// turn with a long id fits the screen; no English anywhere in the
// interface.
func TestBrowserRussian(t *testing.T) {
	const token = "k-browser-russian-0123456789"
	b, api, srv := startBrowser(t, token)
	api.setMe(russian)
	api.withBoard()
	b.russianBrowser()

	// Before signing in: the browser's language. After: the card asked for.
	b.do("open a card's address", chromedp.Navigate(srv.URL+"/board/c/id0004"))
	b.wait("the sign-in form, focused", `!document.getElementById('view-login').hidden && document.activeElement.id === 'login-key'`)
	b.check("the sign-in speaks the browser's language", `document.documentElement.lang === 'ru' && document.getElementById('login-title').textContent === 'Вход' && document.title === 'Вход — arbiter'`)
	b.noEnglish("the sign-in")
	b.do("sign in", chromedp.SendKeys(chromedp.ID("login-key"), token+kb.Enter))
	b.wait("the card asked for", `location.pathname === '/board/c/id0004' && !document.getElementById('view-card').hidden && document.getElementById('card-title').textContent === 'Проверить форму регистрации'`)
	if got := b.answered(http.StatusNotFound); len(got) != 0 {
		t.Errorf("signing in got 404 for %v", got)
	}
	b.check("focus on the card's title", `document.activeElement.id === 'card-title' && document.title === 'Проверить форму регистрации — arbiter'`)
	b.check("the user's language and the card in the nav", `document.documentElement.lang === 'ru' && document.querySelector('#main-nav a[aria-current="page"]').dataset.nav === 'board'`)
	var facts map[string]string
	b.eval("the card's facts", `Object.fromEntries(Array.from(document.querySelectorAll('#card-body > dl > dt'), (dt) => [dt.textContent, dt.nextElementSibling.textContent]))`, &facts)
	for k, want := range map[string]string{
		"Карточка": "id0004", "Колонка": "Входящие", "Статус": "Открыта", "Исполнитель": "Ольга Смирнова", "Автор": "Дмитрий Иванов",
		"Создана": "12:00 (Europe/Moscow)", "Изменена": "13:15 (Europe/Moscow)", "Срок": "2 дек",
	} {
		if !strings.Contains(facts[k], want) {
			t.Errorf("the card's %s = %q, want it to hold %q (all: %q)", k, facts[k], want, facts)
		}
	}
	if got := b.texts("the description", "#card-body .card-section .text"); len(got) < 1 || got[0] != "Форма не принимает <script>window.__pwned=7</script> длинные адреса." {
		t.Errorf("the description = %q", got)
	}
	history := b.texts("the history", "#card-body .history li")
	if len(history) != 2 ||
		!strings.HasPrefix(history[0], "Создана · Дмитрий Иванов · ") || !strings.Contains(history[0], "12:00 (Europe/Moscow)") ||
		!strings.HasPrefix(history[1], "Комментарий · Ольга Смирнова · ") || !strings.Contains(history[1], "13:15 (Europe/Moscow)") || !strings.HasSuffix(history[1], "Начала проверку.") {
		t.Errorf("the history = %q", history)
	}
	b.oneScroller("the card scrolls with the page", "")
	b.noEnglish("the card")

	// A confirmation in Russian: the server's text and buttons.
	b.do("to the chat", chromedp.Click(chromedp.CSS(`#main-nav a[data-nav="chat"]`)))
	b.wait("the chat", `!document.getElementById('view-chat').hidden && document.activeElement.id === 'message-input'`)
	b.do("ask for a task", chromedp.SendKeys(chromedp.ID("message-input"), "создай задачу"+kb.Enter))
	b.wait("the confirmation", `document.querySelectorAll('#messages [data-turn="t-1"] .pending button').length === 2`)
	confirmation(b, "t-1", confirmationWant{
		text:    "Подтвердите действие: Создать задачу\n• Название: Проверить форму регистрации\n• Срок: ср, 2 дек. 2026, 12:00 (Europe/Moscow)\nВыполнить?",
		buttons: "Да ✅|Нет ✖️",
		expires: []string{"Действует до ", "12:10", "(Europe/Moscow)"}, // 09:10 UTC in Moscow
		details: "Подробности",
	})
	b.noEnglish("the confirmation")
	b.do("confirm with ✅ Да", chromedp.Click(chromedp.CSS(`#messages [data-turn="t-1"] .pending button.yes`)))
	b.wait("the executed action", `document.querySelector('#messages [data-turn="t-2"] .text')?.textContent.startsWith('Готово')`)
	if last := api.sent(); len(last) != 2 || last[1].Button != "confirm:p-1" {
		t.Errorf("the confirmation sent %+v", last)
	}
	b.check("the result's toggle", `document.querySelector('#messages [data-turn="t-2"] .executed summary').textContent === 'Результат'`)
	b.check("the message box is in view, with the focus", composerInView+` && document.activeElement.id === 'message-input'`)
	b.oneScroller("the chat scrolls only its log", "messages")
	b.noEnglish("the chat")

	// A reply with a card's link: the link opens the card inside the app.
	b.do("ask for the card", chromedp.SendKeys(chromedp.ID("message-input"), "покажи карточку"+kb.Enter))
	b.wait("the card's link", `document.querySelector('#messages [data-turn="t-3"] .text a') !== null`)
	b.check("the link is the card's page on this site", `(() => {
		const a = document.querySelector('#messages [data-turn="t-3"] .text a');
		return a.getAttribute('href') === '/board/c/id0004' && a.textContent === location.origin + '/board/c/id0004' &&
			a.parentElement.textContent === 'Проверить форму регистрации\nКолонка: Входящие\n' + location.origin + '/board/c/id0004';
	})()`)
	b.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.__samePage = true`))
	b.do("follow the link", chromedp.Click(chromedp.CSS(`#messages [data-turn="t-3"] .text a`)))
	b.wait("the card", `location.pathname === '/board/c/id0004' && document.getElementById('card-title').textContent === 'Проверить форму регистрации' && document.querySelectorAll('#card-body .history li').length === 2`)
	b.check("no page load", `window.__samePage === true`)

	// The board: columns with their cards, each linking to its page.
	b.do("open the board", chromedp.Click(chromedp.CSS(`#main-nav a[data-nav="board"]`)))
	b.wait("the columns", `location.pathname === '/board' && document.querySelectorAll('#board-columns .board-column').length === 3`)
	if got := b.texts("the columns", "#board-columns .board-column h2"); strings.Join(got, "|") != "Входящие (2 карточки)|В работе (0 карточек)|Готово (1 карточка)" {
		t.Errorf("columns = %q", got)
	}
	var cards [][]string
	b.eval("the cards", `Array.from(document.querySelectorAll('#board-columns .board-card'), (li) => [li.querySelector('a').getAttribute('href'), li.querySelector('a').textContent, li.querySelector('dl')?.textContent || ''])`, &cards)
	if len(cards) != 3 ||
		cards[0][0] != "/board/c/id0004" || cards[0][1] != "Проверить форму регистрации" || !strings.Contains(cards[0][2], "ИсполнительОльга Смирнова") || !strings.Contains(cards[0][2], "2 дек") || !strings.HasSuffix(cards[0][2], "СтатусОткрыта") ||
		cards[1][0] != "/board/c/id0006" || cards[1][1] != "<b>Позвонить</b> Анне" ||
		cards[2][0] != "/board/c/id0001" || !strings.HasSuffix(cards[2][2], "СтатусВыполнена") {
		t.Errorf("cards = %q", cards)
	}
	b.check("an empty column says so", `document.querySelectorAll('#board-columns .board-column')[1].querySelector('.empty').textContent === 'Карточек нет.'`)
	b.check("no horizontal scrolling on a phone", `document.scrollingElement.scrollWidth <= document.scrollingElement.clientWidth`)
	b.oneScroller("the board scrolls with the page", "")
	b.noEnglish("the board")

	// A reload speaks Russian at once, before the server is asked again;
	// an unknown card says so.
	api.holdMe()
	b.do("load an unknown card's page", chromedp.Navigate(srv.URL+"/board/c/id9999"))
	b.wait("the unknown card", `document.getElementById('card-error').textContent === 'Карточки id9999 на доске нет.'`)
	b.check("Russian while the server is not yet asked", `document.documentElement.lang === 'ru' && document.querySelector('#main-nav a[data-nav="board"]').textContent === 'Доска' && document.getElementById('logout').textContent === 'Выйти'`)
	b.noEnglish("the unknown card")
	api.releaseMe()

	// A turn with a long id: its trace fits a phone's width.
	b.do("to the chat", chromedp.Click(chromedp.CSS(`#main-nav a[data-nav="chat"]`)))
	b.wait("the chat", `!document.getElementById('view-chat').hidden`)
	b.do("send long id", chromedp.SendKeys(chromedp.ID("message-input"), "long id"+kb.Enter))
	b.wait("the reply", `document.querySelector('#messages [data-turn="`+longTurnID+`"] .trace-link a') !== null`)
	b.do("open its trace", chromedp.Click(chromedp.CSS(`#messages [data-turn="`+longTurnID+`"] .trace-link a`)))
	b.wait("the trace", `document.querySelectorAll('#trace-body .timeline .step').length === 6`)
	b.check("the title is the turn's", `document.getElementById('trace-title').textContent === 'Ход `+longTurnID+`'`)
	b.check("the title fits the screen", `(() => {
		const h = document.getElementById('trace-title');
		return h.scrollWidth <= h.clientWidth && h.getBoundingClientRect().right <= document.documentElement.clientWidth;
	})()`)
	b.check("no horizontal scrolling on a phone", `window.innerWidth === 390 && document.scrollingElement.scrollWidth <= document.scrollingElement.clientWidth`)
	b.oneScroller("the trace scrolls with the page", "document")
	b.noEnglish("the trace")

	// The list of turns.
	b.do("open the list", chromedp.Click(chromedp.CSS(`#main-nav a[data-nav="turns"]`)))
	b.wait("the turns", `document.querySelectorAll('#turns-body tr').length === 6`)
	b.check("the summary", `document.getElementById('turns-summary').textContent.startsWith('Показано 6 ходов, общая стоимость $')`)
	b.check("the stacked cells are labelled in Russian", `document.querySelector('#turns-body td').dataset.label === 'Начало'`)
	b.oneScroller("the turns scroll with the page", "document")
	b.noEnglish("the turns")

	// Signing out goes back to the browser's language.
	b.do("sign out", chromedp.Click(chromedp.ID("logout")))
	b.wait("the sign-in form", `!document.getElementById('view-login').hidden && document.getElementById('login-submit').textContent === 'Войти'`)
	b.check("nothing of the user is kept", `sessionStorage.getItem('arbiter.webchat.key') === null && sessionStorage.getItem('arbiter.webchat.profile') === null`)

	b.check("no injected elements", `document.querySelectorAll('main script, main b, main i, main img').length === 0`)
	b.check("no injected script ran", `window.__pwned === undefined`)
	b.consoleClean()
}

// TestBrowserWithoutBoard: a server without the task board has no Board in
// its navigation; the Turns page says "unknown" for a turn of no known
// price, in its row and its total; the message box holds the server's
// limit from GET /v1/me, in bytes of UTF-8, and says so without sending;
// the confirmation's buttons put their words before their emoji.
func TestBrowserWithoutBoard(t *testing.T) {
	const token = "k-browser-test-0123456789"
	b, api, srv := startBrowserWith(t, token)
	api.setMe(fakeMe{Tenant: "acme", User: "alice", Name: "Alice", Language: "en", Timezone: "America/New_York",
		Scopes: []string{"read", "write:safe"}, MaxBodyBytes: 400})
	b.signIn(srv.URL, token)
	b.check("no Board in the navigation", `(() => {
		const nav = document.getElementById('main-nav');
		const board = nav.querySelector('a[data-nav="board"]');
		return !nav.hidden && board && board.hidden && !board.checkVisibility();
	})()`)
	b.check("the chat and the turns are in the navigation", `Array.from(document.querySelectorAll('#main-nav a')).filter((a) => a.checkVisibility()).map((a) => a.dataset.nav).join() === 'chat,turns'`)

	// 150 Cyrillic letters are 300 bytes of UTF-8: with the envelope over
	// the 400 the server takes, though far under any count of characters.
	long := strings.Repeat("я", 150)
	b.do("type a message over the limit", chromedp.SendKeys(chromedp.ID("message-input"), long))
	b.do("send it", chromedp.Click(chromedp.ID("send")))
	b.wait("the limit is said", `document.getElementById('chat-error').textContent.includes('bytes as sent (UTF-8); the server accepts at most 400')`)
	b.check("the text stays in the box, marked", `document.getElementById('message-input').value.length === 150 && document.getElementById('message-input').getAttribute('aria-invalid') === 'true'`)
	if sent := api.sent(); len(sent) != 0 {
		t.Errorf("a message over the limit was sent: %+v", sent)
	}
	var emptied string
	b.eval("empty the box", `document.getElementById('message-input').value = ''`, &emptied)
	b.do("shorten it", chromedp.SendKeys(chromedp.ID("message-input"), "create a task"))
	b.wait("the box is valid again", `document.getElementById('message-input').getAttribute('aria-invalid') === 'false' && document.getElementById('chat-error').textContent === ''`)
	b.do("send the short one", chromedp.Click(chromedp.ID("send")))
	b.wait("the confirmation", `document.querySelectorAll('#messages .pending button').length === 2`)
	b.check("the yes button reads Yes first, its emoji hidden from screen readers", `(() => {
		const yes = document.querySelector('#messages .pending button.yes');
		const emoji = yes.querySelector('.label-emoji');
		return yes.querySelector('.label-text').textContent === 'Yes' && emoji.textContent === '✅' &&
			emoji.getAttribute('aria-hidden') === 'true' && yes.textContent.startsWith('Yes');
	})()`)

	api.unknownCost()
	b.do("open the turns", chromedp.Navigate(srv.URL+"/turns"))
	// The fake's two turns of another conversation and this one.
	b.wait("the turns", `document.querySelectorAll('#turns-body tr').length === 3`)
	var cells []string
	b.eval("the cost cells", `Array.from(document.querySelectorAll('#turns-body td')).filter((td) => td.dataset.label === 'Cost').map((td) => td.textContent)`, &cells)
	if len(cells) != 3 {
		t.Errorf("cost cells %q, want 3", cells)
	}
	for _, c := range cells {
		if !strings.Contains(c, "unknown") || strings.Contains(c, "$") {
			t.Errorf("the cost of a turn of no known price = %q, want unknown", c)
		}
	}
	b.check("the total says unknown, not $0", `(() => {
		const s = document.getElementById('turns-summary').textContent;
		return s.includes('total cost unknown') && !s.includes('$')
	})()`)
	b.do("try the board's address", chromedp.Navigate(srv.URL+"/board"))
	b.wait("no board page", `document.body.textContent.includes('404 page not found')`)
}
