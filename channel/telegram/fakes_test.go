package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/store"
)

// fakeInbox is an in-memory store.ChannelInbox: ids are remembered forever,
// Pending follows acceptance order. Failures can be injected.
type fakeInbox struct {
	mu         sync.Mutex
	items      map[string]*fakeItem
	order      []string
	acceptErrs int // the next n Accept calls fail
}

type fakeItem struct {
	item store.ChannelItem
	done bool
}

var _ store.ChannelInbox = (*fakeInbox)(nil)

func newFakeInbox() *fakeInbox { return &fakeInbox{items: map[string]*fakeItem{}} }

func (f *fakeInbox) Accept(ctx context.Context, item store.ChannelItem) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.acceptErrs > 0 {
		f.acceptErrs--
		return false, fmt.Errorf("fake inbox: %w", store.ErrUnavailable)
	}
	k := item.Channel + "\x00" + item.ID
	if _, ok := f.items[k]; ok {
		return false, nil
	}
	item.Payload = append(json.RawMessage(nil), item.Payload...)
	f.items[k] = &fakeItem{item: item}
	f.order = append(f.order, k)
	return true, nil
}

func (f *fakeInbox) Pending(ctx context.Context, channel string, n int) ([]store.ChannelItem, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []store.ChannelItem
	for _, k := range f.order {
		if it := f.items[k]; !it.done && it.item.Channel == channel && len(out) < n {
			out = append(out, it.item)
		}
	}
	return out, nil
}

func (f *fakeInbox) Done(ctx context.Context, channel, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if it, ok := f.items[channel+"\x00"+id]; ok {
		it.done = true
	}
	return nil
}

// pendingIDs lists the ids not done yet.
func (f *fakeInbox) pendingIDs() []string {
	items, _ := f.Pending(context.Background(), ChannelName, 1000)
	var ids []string
	for _, it := range items {
		ids = append(ids, it.ID)
	}
	return ids
}

func (f *fakeInbox) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.items)
}

// fakeAPI is a Bot API server, served in process through client (no
// socket, so that tests can run in a testing/synctest bubble), that
// records the calls it gets and answers with the real JSON shapes.
type fakeAPI struct {
	t      *testing.T
	client *http.Client
	token  string

	mu      sync.Mutex
	calls   []apiCall
	nextMsg int64
	fail    map[string][]int // method -> statuses to answer before succeeding
	files   map[string]string
	updates []json.RawMessage // served by getUpdates
}

type apiCall struct {
	method string
	params map[string]any
}

const testToken = "123456:ABC-test_token"

// fakeAPIURL is the base URL of every fakeAPI; its client never dials it.
const fakeAPIURL = "http://api.telegram.test"

func newFakeAPI(t *testing.T) *fakeAPI {
	f := &fakeAPI{t: t, token: testToken, nextMsg: 5000, fail: map[string][]int{}, files: map[string]string{}}
	f.client = &http.Client{Transport: llmtest.InProcess(http.HandlerFunc(f.serve))}
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	if rest, ok := strings.CutPrefix(r.URL.Path, "/file/bot"+f.token+"/"); ok {
		f.mu.Lock()
		body, found := f.files[rest]
		f.mu.Unlock()
		if !found {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, body)
		return
	}
	method, ok := strings.CutPrefix(r.URL.Path, "/bot"+f.token+"/")
	if !ok {
		writeAPI(w, http.StatusUnauthorized, `{"ok":false,"error_code":401,"description":"Unauthorized"}`)
		return
	}
	var params map[string]any
	raw, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(raw, &params); err != nil {
		writeAPI(w, http.StatusBadRequest, `{"ok":false,"error_code":400,"description":"Bad Request: invalid JSON"}`)
		return
	}
	f.mu.Lock()
	f.calls = append(f.calls, apiCall{method: method, params: params})
	if q := f.fail[method]; len(q) > 0 {
		status := q[0]
		f.fail[method] = q[1:]
		f.mu.Unlock()
		writeAPI(w, status, fmt.Sprintf(`{"ok":false,"error_code":%d,"description":"Internal Server Error"}`, status))
		return
	}
	f.mu.Unlock()
	switch method {
	case "sendMessage":
		f.mu.Lock()
		f.nextMsg++
		id := f.nextMsg
		f.mu.Unlock()
		chatID, _ := params["chat_id"].(float64)
		text, _ := params["text"].(string)
		res, _ := json.Marshal(map[string]any{
			"message_id": id, "date": 1714558000, "text": text,
			"from": map[string]any{"id": 7000000001, "is_bot": true, "first_name": "Arbiter", "username": "arbiter_bot"},
			"chat": map[string]any{"id": int64(chatID), "type": "private"},
		})
		writeAPI(w, 200, `{"ok":true,"result":`+string(res)+`}`)
	case "sendMessageDraft":
		// Drafts go to private chats only, under a non-zero id, with at
		// most 4096 characters.
		chatID, _ := params["chat_id"].(float64)
		draftID, _ := params["draft_id"].(float64)
		text, isText := params["text"].(string)
		switch {
		case chatID <= 0:
			writeAPI(w, 400, `{"ok":false,"error_code":400,"description":"Bad Request: drafts can be sent only to private chats"}`)
		case draftID == 0 || draftID != float64(int64(draftID)):
			writeAPI(w, 400, `{"ok":false,"error_code":400,"description":"Bad Request: draft_id must be non-zero"}`)
		case !isText || utf8.RuneCountInString(text) > 4096:
			writeAPI(w, 400, `{"ok":false,"error_code":400,"description":"Bad Request: text is too long"}`)
		default:
			writeAPI(w, 200, `{"ok":true,"result":true}`)
		}
	case "getMe":
		writeAPI(w, 200, `{"ok":true,"result":{"id":7000000001,"is_bot":true,"first_name":"Arbiter","username":"arbiter_bot","can_join_groups":true}}`)
	case "getFile":
		id, _ := params["file_id"].(string)
		f.mu.Lock()
		body, found := f.files["files/"+id]
		f.mu.Unlock()
		if !found {
			writeAPI(w, 400, `{"ok":false,"error_code":400,"description":"Bad Request: invalid file_id"}`)
			return
		}
		res, _ := json.Marshal(map[string]any{"file_id": id, "file_unique_id": "u" + id, "file_size": len(body), "file_path": "files/" + id})
		writeAPI(w, 200, `{"ok":true,"result":`+string(res)+`}`)
	case "getUpdates":
		offset, _ := params["offset"].(float64)
		f.mu.Lock()
		var out []json.RawMessage
		for _, u := range f.updates {
			var head struct {
				UpdateID int64 `json:"update_id"`
			}
			_ = json.Unmarshal(u, &head)
			if head.UpdateID >= int64(offset) {
				out = append(out, u)
			}
		}
		f.mu.Unlock()
		if len(out) == 0 {
			select {
			case <-time.After(30 * time.Millisecond):
			case <-r.Context().Done():
			}
		}
		res, _ := json.Marshal(out)
		if out == nil {
			res = []byte("[]")
		}
		writeAPI(w, 200, `{"ok":true,"result":`+string(res)+`}`)
	default:
		writeAPI(w, 200, `{"ok":true,"result":true}`)
	}
}

func writeAPI(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// callsOf returns the recorded calls of method.
func (f *fakeAPI) callsOf(method string) []apiCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []apiCall
	for _, c := range f.calls {
		if c.method == method {
			out = append(out, c)
		}
	}
	return out
}

// allCalls returns every recorded call, in order.
func (f *fakeAPI) allCalls() []apiCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]apiCall(nil), f.calls...)
}

// sentTexts returns the text of every sendMessage call, in order.
func (f *fakeAPI) sentTexts() []string {
	var out []string
	for _, c := range f.callsOf("sendMessage") {
		s, _ := c.params["text"].(string)
		out = append(out, s)
	}
	return out
}

func (f *fakeAPI) failNext(method string, statuses ...int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[method] = append(f.fail[method], statuses...)
}

func (f *fakeAPI) addFile(fileID, content string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files["files/"+fileID] = content
}

// recorder is a chat.Handler that records inbound messages and, like the
// engine, answers a message id it has seen with the stored reply marked
// Duplicate. effects counts turns that were not duplicates.
type recorder struct {
	mu        sync.Mutex
	got       []chat.Inbound
	replies   map[string]chat.Outbound
	effects   int
	failFirst int
	reply     func(chat.Inbound) chat.Outbound
	block     func(chat.Inbound) // called outside the lock before replying
	active    map[chat.ConversationKey]int
	overlap   bool
	running   int
	peak      int
}

func newRecorder() *recorder {
	return &recorder{replies: map[string]chat.Outbound{}, active: map[chat.ConversationKey]int{}}
}

func (r *recorder) HandleTurn(ctx context.Context, in chat.Inbound) (chat.Outbound, error) {
	r.mu.Lock()
	if r.failFirst > 0 {
		r.failFirst--
		r.mu.Unlock()
		return chat.Outbound{}, fmt.Errorf("lock wait: %w", store.ErrLockTimeout)
	}
	dk := in.Key().String() + "#" + in.MessageID
	if out, ok := r.replies[dk]; ok && in.MessageID != "" {
		r.mu.Unlock()
		out.Duplicate = true
		return out, nil
	}
	k := in.Key()
	r.active[k]++
	if r.active[k] > 1 {
		r.overlap = true
	}
	r.running++
	r.peak = max(r.peak, r.running)
	block := r.block
	r.mu.Unlock()
	if block != nil {
		block(in)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.active[k]--
	r.running--
	if err := ctx.Err(); err != nil {
		return chat.Outbound{}, err
	}
	out := chat.Outbound{TurnID: fmt.Sprintf("t%d", len(r.got)+1), Say: "ok: " + in.Text + in.Button}
	if r.reply != nil {
		out = r.reply(in)
	}
	r.got = append(r.got, in)
	r.effects++
	r.replies[dk] = out
	return out, nil
}

func (r *recorder) inbounds() []chat.Inbound {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

func (r *recorder) sideEffects() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.effects
}

var (
	ivan = chat.Identity{TenantID: "acme", UserID: "ivan", Name: "Иван", Role: "owner", Language: "ru", Scopes: []chat.Scope{chat.ScopeRead, chat.ScopeWriteSafe}}
	olga = chat.Identity{TenantID: "acme", UserID: "olga", Name: "Ольга", Role: "manager", Language: "ru"}
)

func identify(id int64) (chat.Identity, bool) {
	switch id {
	case 1001:
		return ivan, true
	case 1002:
		return olga, true
	}
	return chat.Identity{}, false
}

const testSecret = "s3cr3t-Token_42"

// harness wires a channel to the fakes; start runs it until the test ends.
type harness struct {
	t     *testing.T
	ch    *Channel
	api   *fakeAPI
	inbox *fakeInbox
	h     *recorder
}

func newHarness(t *testing.T, mod func(*Config)) *harness {
	t.Helper()
	return newHarnessWith(t, newFakeAPI(t), newFakeInbox(), newRecorder(), mod)
}

func newHarnessWith(t *testing.T, api *fakeAPI, inbox *fakeInbox, h *recorder, mod func(*Config)) *harness {
	t.Helper()
	cfg := Config{
		Token:        testToken,
		APIBaseURL:   fakeAPIURL,
		HTTPClient:   api.client,
		SecretToken:  testSecret,
		PublicURL:    "https://bot.example.com",
		Handler:      h,
		Inbox:        inbox,
		Identify:     identify,
		ForwardHold:  -1,
		CommentGrace: -1,
		PollInterval: 20 * time.Millisecond,
		TypingDelay:  time.Hour,
		RetryBackoff: 10 * time.Millisecond,
	}
	if mod != nil {
		mod(&cfg)
	}
	ch, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, ch: ch, api: api, inbox: inbox, h: h}
}

// start runs the channel; the returned func stops it and waits.
func (h *harness) start() (stop func()) {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.ch.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					h.t.Errorf("Run: %v", err)
				}
			case <-time.After(10 * time.Second):
				h.t.Error("Run did not return after cancel")
			}
		})
	}
	h.t.Cleanup(stop)
	return stop
}

// webhook serves one request of method to the channel's webhook, with
// secrets as the secret token headers, and returns the answer's status.
func (h *harness) webhook(method, body string, secrets ...string) int {
	req := httptest.NewRequest(method, "/", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for _, s := range secrets {
		req.Header.Add("X-Telegram-Bot-Api-Secret-Token", s)
	}
	rec := httptest.NewRecorder()
	h.ch.ServeHTTP(rec, req)
	return rec.Code
}

// post delivers body to the webhook with the given secret ("" = none).
func (h *harness) post(body, secret string) int {
	if secret == "" {
		return h.webhook(http.MethodPost, body)
	}
	return h.webhook(http.MethodPost, body, secret)
}

// deliver posts body with the right secret and wants 200.
func (h *harness) deliver(body string) {
	h.t.Helper()
	if code := h.post(body, testSecret); code != http.StatusOK {
		h.t.Fatalf("webhook answered %d, want 200", code)
	}
}

// wantOneTurn waits for the background work to rest and checks that the
// handler ran one turn, one reply went out and no item is left pending.
func (h *harness) wantOneTurn(t *testing.T) {
	t.Helper()
	waitIdle()
	if n := h.h.sideEffects(); n != 1 {
		t.Errorf("handler ran %d turns, want 1", n)
	}
	if got := h.api.sentTexts(); len(got) != 1 {
		t.Fatalf("sent %q, want one reply", got)
	}
	if p := h.inbox.pendingIDs(); len(p) != 0 {
		t.Errorf("pending after processing: %q", p)
	}
}

// noticeFor runs the channel on update, which must be answered with one
// message and no turn, and returns that sendMessage call.
func (h *harness) noticeFor(t *testing.T, update string) apiCall {
	t.Helper()
	h.start()
	h.deliver(update)
	waitFor(t, "the notice", func() bool { return len(h.api.sentTexts()) == 1 })
	waitIdle()
	if n := len(h.h.inbounds()); n != 0 {
		t.Errorf("the update reached the handler %d times", n)
	}
	return h.api.callsOf("sendMessage")[0]
}

// waitFor polls cond every 5 ms until it holds or fails the test after
// 5 s — of the bubble's clock, in a testing/synctest bubble, where the
// channel's timers run as fast as the work allows.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitIdle lets 150 ms of the bubble's time pass and waits for the
// background work to rest, for "nothing else happens" checks. It must run
// in a testing/synctest bubble.
func waitIdle() {
	time.Sleep(150 * time.Millisecond)
	synctest.Wait()
}

func fixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "updates", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// textUpdate is a text message update of user in chat (private when the
// ids are equal, a supergroup otherwise).
func textUpdate(updateID, chatID, userID, messageID int64, text string) string {
	return messageUpdate(updateID, chatID, userID, messageID, map[string]any{"text": text})
}

// forwardUpdate is a forwarded text from a known user.
func forwardUpdate(updateID, chatID, userID, messageID int64, text string) string {
	return messageUpdate(updateID, chatID, userID, messageID, map[string]any{
		"text": text,
		"forward_origin": map[string]any{"type": "user", "date": 1714550400,
			"sender_user": map[string]any{"id": 2002, "is_bot": false, "first_name": "Dmitry", "username": "dorlov"}},
	})
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func messageUpdate(updateID, chatID, userID, messageID int64, fields map[string]any) string {
	chatObj := map[string]any{"id": chatID, "type": "private", "first_name": "User"}
	if chatID != userID {
		chatObj = map[string]any{"id": chatID, "type": "supergroup", "title": "Команда"}
	}
	msg := map[string]any{
		"message_id": messageID, "date": 1714557600, "chat": chatObj,
		"from": map[string]any{"id": userID, "is_bot": false, "first_name": "User", "language_code": "ru"},
	}
	for k, v := range fields {
		msg[k] = v
	}
	b, err := json.Marshal(map[string]any{"update_id": updateID, "message": msg})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// failingTransport refuses every request at once.
type failingTransport struct{}

func (failingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("network disabled in this test")
}
