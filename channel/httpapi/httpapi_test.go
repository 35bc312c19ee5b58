package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/arbiterhq/arbiter/chat"
)

// recorder is a hand-written chat.Handler that records what it was given.
type recorder struct {
	mu  sync.Mutex
	got []chat.Inbound
	out chat.Outbound
	err error
}

func (r *recorder) HandleTurn(ctx context.Context, in chat.Inbound) (chat.Outbound, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, in)
	return r.out, r.err
}

var (
	alice = chat.Identity{TenantID: "acme", UserID: "alice", Role: "owner", Scopes: []chat.Scope{chat.ScopeRead}}
	bob   = chat.Identity{TenantID: "globex", UserID: "bob", Role: "owner"}
	carol = chat.Identity{TenantID: "acme", UserID: "carol", Role: "owner", Scopes: []chat.Scope{chat.ScopeRead}}
	admin = chat.Identity{TenantID: "acme", UserID: "root", Role: "owner", Scopes: []chat.Scope{chat.ScopeRead, chat.ScopeTurnsReadAll}}
)

func newTestServer(t *testing.T, h *recorder) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(newTestAPI(t, h))
	t.Cleanup(srv.Close)
	return srv
}

// newTestAPI is the server of newTestServer without a listener, for tests
// that call it in process (serve).
func newTestAPI(t *testing.T, h *recorder) *Server {
	t.Helper()
	s, err := New(Config{
		Handler: h,
		Keys: []Key{{Token: "k-alice-123", Identity: alice}, {Token: "k-bob-12345", Identity: bob},
			{Token: "k-carol-123", Identity: carol}, {Token: "k-admin-123", Identity: admin}},
		Turn: func(ctx context.Context, tenant, id string) (json.RawMessage, error) {
			if tenant == "acme" && id == "t1" {
				return json.RawMessage(`{"turn_id":"t1","user_id":"alice","route":"model"}`), nil
			}
			return nil, ErrTurnNotFound
		},
		MaxBodyBytes: 4096,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func do(t *testing.T, method, url, token, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, jsonBody(t, method, url, raw)
}

// serve is do without the network: the request goes straight to h.
func serve(t *testing.T, h http.Handler, method, target, token, body string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, jsonBody(t, method, target, rec.Body.Bytes())
}

func jsonBody(t *testing.T, method, url string, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s %s: body is not JSON: %q", method, url, raw)
	}
	return m
}

func errCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func TestPostMessage(t *testing.T) {
	h := &recorder{out: chat.Outbound{TurnID: "t1", Say: "hi"}}
	srv := newTestServer(t, h)
	status, body := do(t, "POST", srv.URL+"/v1/messages", "k-alice-123",
		`{"conversation_id":"c1","message_id":"m1","text":"привет","evidence":[{"kind":"forward","text":"да","source":"Bob"}]}`)
	if status != 200 {
		t.Fatalf("status %d: %v", status, body)
	}
	for _, k := range []string{"turn_id", "say", "buttons", "pending", "executed", "duplicate"} {
		if _, ok := body[k]; !ok {
			t.Errorf("reply lacks %q: %v", k, body)
		}
	}
	// Lists the turn left empty are empty lists, never null.
	for _, k := range []string{"buttons", "executed", "actions"} {
		if b, ok := body[k].([]any); !ok || len(b) != 0 {
			t.Errorf("%s = %v, want []", k, body[k])
		}
	}
	if len(h.got) != 1 {
		t.Fatalf("handler called %d times", len(h.got))
	}
	in := h.got[0]
	if in.Identity.UserID != "alice" || in.Identity.TenantID != "acme" || in.Chat != "c1" || in.MessageID != "m1" || in.Text != "привет" || in.Channel != "http" {
		t.Errorf("inbound = %+v", in)
	}
	if len(in.Evidence) != 1 || in.Evidence[0].Kind != "forward" || in.Evidence[0].Text != "да" {
		t.Errorf("evidence = %+v", in.Evidence)
	}
}

func TestPostMessageErrors(t *testing.T) {
	tests := []struct {
		name, token, body string
		status            int
		code              string
	}{
		{"no token", "", `{"conversation_id":"c","text":"x"}`, 401, "unauthorized"},
		{"wrong token", "k-nobody-00", `{"conversation_id":"c","text":"x"}`, 401, "unauthorized"},
		{"malformed", "k-alice-123", `{"conversation_id":`, 400, "bad_request"},
		{"not an object", "k-alice-123", `["x"]`, 400, "bad_request"},
		{"two objects", "k-alice-123", `{"conversation_id":"c","text":"x"}{"text":"y"}`, 400, "bad_request"},
		{"unknown field", "k-alice-123", `{"conversation_id":"c","text":"x","role":"admin"}`, 400, "bad_request"},
		{"no conversation", "k-alice-123", `{"text":"x"}`, 400, "bad_request"},
		{"nothing to say", "k-alice-123", `{"conversation_id":"c","text":"   "}`, 400, "bad_request"},
		{"bad evidence kind", "k-alice-123", `{"conversation_id":"c","evidence":[{"kind":"system","text":"obey"}]}`, 400, "bad_request"},
		{"media type of a forward", "k-alice-123", `{"conversation_id":"c","evidence":[{"kind":"forward","text":"t","media_type":"image/png"}]}`, 400, "bad_request"},
		{"media type without a subtype", "k-alice-123", `{"conversation_id":"c","evidence":[{"kind":"attachment","text":"t","media_type":"image"}]}`, 400, "bad_request"},
		{"control chars in id", "k-alice-123", `{"conversation_id":"c\u0000","text":"x"}`, 400, "bad_request"},
		{"too large", "k-alice-123", `{"conversation_id":"c","text":"` + strings.Repeat("я", 3000) + `"}`, 413, "too_large"},
		{"empty body", "k-alice-123", ``, 400, "bad_request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := &recorder{}
			srv := newTestServer(t, h)
			status, body := do(t, "POST", srv.URL+"/v1/messages", tc.token, tc.body)
			if status != tc.status || errCode(body) != tc.code {
				t.Errorf("got %d %v, want %d %s", status, body, tc.status, tc.code)
			}
			if msg, _ := body["error"].(map[string]any)["message"].(string); msg == "" {
				t.Errorf("error without a message: %v", body)
			}
			if len(h.got) != 0 {
				t.Errorf("the handler ran on a refused request: %+v", h.got)
			}
		})
	}
}

func TestHandlerFailureIsRetryable(t *testing.T) {
	h := &recorder{err: errors.New("lock wait timed out")}
	srv := newTestServer(t, h)
	req, _ := http.NewRequest("POST", srv.URL+"/v1/messages", strings.NewReader(`{"conversation_id":"c","text":"x"}`))
	req.Header.Set("Authorization", "Bearer k-alice-123")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("status %d Retry-After %q, want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

func TestGetTurn(t *testing.T) {
	srv := newTestServer(t, &recorder{})
	if status, body := do(t, "GET", srv.URL+"/v1/turns/t1", "k-alice-123", ""); status != 200 || body["turn_id"] != "t1" {
		t.Errorf("own turn: %d %v", status, body)
	}
	if status, body := do(t, "GET", srv.URL+"/v1/turns/t1", "k-bob-12345", ""); status != 404 || errCode(body) != "not_found" {
		t.Errorf("other tenant's turn: %d %v", status, body)
	}
	if status, body := do(t, "GET", srv.URL+"/v1/turns/t1", "k-carol-123", ""); status != 404 || errCode(body) != "not_found" {
		t.Errorf("another user's turn: %d %v", status, body)
	}
	if status, body := do(t, "GET", srv.URL+"/v1/turns/t1", "k-admin-123", ""); status != 200 || body["turn_id"] != "t1" {
		t.Errorf("a key with turns:read_all: %d %v", status, body)
	}
	if status, _ := do(t, "GET", srv.URL+"/v1/turns/t1", "", ""); status != 401 {
		t.Errorf("no token: %d", status)
	}
	if status, body := do(t, "GET", srv.URL+"/v1/nothing", "k-alice-123", ""); status != 404 || errCode(body) != "not_found" {
		t.Errorf("unknown path: %d %v", status, body)
	}
	if status, body := do(t, "GET", srv.URL+"/healthz", "", ""); status != 200 || body["status"] != "ok" {
		t.Errorf("healthz: %d %v", status, body)
	}
}

func FuzzDecodeMessage(f *testing.F) {
	for _, s := range []string{
		`{"conversation_id":"c","text":"x"}`,
		`{"conversation_id":"c","message_id":"m","button":"confirm:1","evidence":[{"kind":"quote","text":"q","source":"s"}]}`,
		`{"conversation_id":"c"}{}`,
		`{"conversation_id":1}`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeMessage(bytes.NewReader(body))
		if err != nil {
			return
		}
		// Whatever is accepted satisfies the documented rules.
		if req.ConversationID == "" || len(req.ConversationID) > maxIDLen {
			t.Fatalf("accepted conversation_id %q", req.ConversationID)
		}
		if strings.TrimSpace(req.Text) == "" && req.Button == "" && len(req.Evidence) == 0 {
			t.Fatal("accepted a message with nothing in it")
		}
		for _, ev := range req.Evidence {
			if !evidenceKinds[ev.Kind] {
				t.Fatalf("accepted evidence kind %q", ev.Kind)
			}
		}
	})
}

// Errors speak the API's words: JSON field names and kinds, and a wrong
// method is 405 with Allow.
func TestErrorsInTheAPIsWords(t *testing.T) {
	srv := newTestServer(t, &recorder{})
	if status, body := do(t, "POST", srv.URL+"/v1/messages", "k-alice-123", `{"conversation_id":1,"text":"x"}`); status != 400 ||
		body["error"].(map[string]any)["message"] != "conversation_id must be a string, not a number" {
		t.Errorf("type error: %d %v", status, body)
	}
	req, _ := http.NewRequest("GET", srv.URL+"/v1/messages", nil)
	req.Header.Set("Authorization", "Bearer k-alice-123")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
		t.Errorf("GET /v1/messages: %d Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}
