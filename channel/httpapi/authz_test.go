package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/chat"
)

// journalLister is a hand-written Config.Turns that records every query
// and answers with n turns.
type journalLister struct {
	mu      sync.Mutex
	tenants []string
	queries []TurnQuery
	n       int
	err     error
}

func (j *journalLister) list(ctx context.Context, tenant string, q TurnQuery) ([]TurnSummary, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.tenants, j.queries = append(j.tenants, tenant), append(j.queries, q)
	var out []TurnSummary
	for i := range j.n {
		out = append(out, TurnSummary{TurnID: fmt.Sprint("t", i), UserID: q.UserID, StartedAt: time.Date(2026, 12, 1, 9, 0, i, 0, time.UTC)})
	}
	return out, j.err
}

func newTurnsServer(t *testing.T, j *journalLister) *httptest.Server {
	t.Helper()
	s, err := New(Config{Handler: &recorder{}, Turns: j.list,
		Keys: []Key{{Token: "k-alice-123", Identity: alice}, {Token: "k-admin-123", Identity: admin}, {Token: "k-bob-12345", Identity: bob}},
		Turn: func(ctx context.Context, tenant, id string) (json.RawMessage, error) { return nil, ErrTurnNotFound }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv
}

// GET /v1/turns lists the caller's tenant only, and a user's own turns
// only unless the key may read all (turns:read_all): asking for another
// user's turns lists nothing and asks the journal nothing.
func TestListTurnsIsTheCallersOwn(t *testing.T) {
	j := &journalLister{n: 1}
	srv := newTurnsServer(t, j)
	for _, tt := range []struct {
		token, query, tenant, user string
	}{
		{"k-alice-123", "", "acme", "alice"},
		{"k-alice-123", "?user_id=alice", "acme", "alice"},
		{"k-bob-12345", "?user_id=", "globex", "bob"},
		{"k-admin-123", "", "acme", ""},
		{"k-admin-123", "?user_id=alice", "acme", "alice"},
	} {
		before := len(j.queries)
		status, body := do(t, "GET", srv.URL+"/v1/turns"+tt.query, tt.token, "")
		if status != 200 || len(j.queries) != before+1 {
			t.Fatalf("%s %s: %d %v, %d queries", tt.token, tt.query, status, body, len(j.queries)-before)
		}
		if got, q := j.tenants[before], j.queries[before]; got != tt.tenant || q.UserID != tt.user {
			t.Errorf("%s %s: the journal was asked for tenant %q user %q, want %q %q", tt.token, tt.query, got, q.UserID, tt.tenant, tt.user)
		}
	}
	before := len(j.queries)
	status, body := do(t, "GET", srv.URL+"/v1/turns?user_id=carol", "k-alice-123", "")
	if list, _ := body["turns"].([]any); status != 200 || list == nil || len(list) != 0 || len(j.queries) != before {
		t.Errorf("alice asking for carol's turns: %d %v, %d queries", status, body, len(j.queries)-before)
	}
	if status, body := do(t, "GET", srv.URL+"/v1/turns", "", ""); status != 401 || errCode(body) != "unauthorized" {
		t.Errorf("no key: %d %v", status, body)
	}
}

// The list's filters and page: the limit is 1 to 500 (50 by default),
// before is an RFC 3339 time, a full page names the next cursor, a short
// one does not.
func TestListTurnsPages(t *testing.T) {
	j := &journalLister{n: 2}
	srv := newTurnsServer(t, j)
	status, body := do(t, "GET", srv.URL+"/v1/turns?limit=2&before=2026-12-01T10:00:00Z&conversation_id=c1&status=ok&provider=p", "k-alice-123", "")
	q := j.queries[len(j.queries)-1]
	if status != 200 || q.Limit != 2 || !q.Before.Equal(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)) || q.ConversationID != "c1" || q.Status != "ok" || q.Provider != "p" {
		t.Errorf("%d %v, query %+v", status, body, q)
	}
	if body["next_before"] != "2026-12-01T09:00:01Z" {
		t.Errorf("a full page's cursor = %v, want the last turn's start", body["next_before"])
	}
	if _, body := do(t, "GET", srv.URL+"/v1/turns?limit=3", "k-alice-123", ""); body["next_before"] != nil {
		t.Errorf("a short page names a cursor: %v", body)
	}
	if do(t, "GET", srv.URL+"/v1/turns", "k-alice-123", ""); j.queries[len(j.queries)-1].Limit != 50 {
		t.Errorf("default limit %d, want 50", j.queries[len(j.queries)-1].Limit)
	}
	for _, l := range []string{"1", "500"} {
		if status, body := do(t, "GET", srv.URL+"/v1/turns?limit="+l, "k-alice-123", ""); status != 200 {
			t.Errorf("limit %s: %d %v", l, status, body)
		}
	}
	asked := len(j.queries)
	for _, bad := range []string{"?limit=0", "?limit=501", "?limit=x", "?before=yesterday"} {
		if status, body := do(t, "GET", srv.URL+"/v1/turns"+bad, "k-alice-123", ""); status != 400 || errCode(body) != "bad_request" {
			t.Errorf("%s: %d %v", bad, status, body)
		}
	}
	if len(j.queries) != asked {
		t.Errorf("the journal was asked on a refused query")
	}
	j.n, j.err = 0, errors.New("database is locked")
	if status, body := do(t, "GET", srv.URL+"/v1/turns", "k-alice-123", ""); status != 503 || errCode(body) != "unavailable" {
		t.Errorf("journal down: %d %v", status, body)
	}
	j.err = nil
	if status, body := do(t, "GET", srv.URL+"/v1/turns", "k-alice-123", ""); status != 200 || body["turns"] == nil {
		t.Errorf("no turns: %d %v, want an empty list", status, body)
	}
	none, err := New(Config{Handler: &recorder{}, Keys: []Key{{Token: "k-alice-123", Identity: alice}},
		Turn: func(ctx context.Context, tenant, id string) (json.RawMessage, error) { return nil, ErrTurnNotFound }})
	if err != nil {
		t.Fatal(err)
	}
	noneSrv := httptest.NewServer(none)
	defer noneSrv.Close()
	if status, body := do(t, "GET", noneSrv.URL+"/v1/turns", "k-alice-123", ""); status != 501 {
		t.Errorf("a journal that cannot list: %d %v", status, body)
	}
}

// An unset body limit is the default, not zero: an ordinary message goes
// through.
func TestDefaultBodyLimit(t *testing.T) {
	h := &recorder{out: chat.Outbound{TurnID: "t1", Say: "ok"}}
	s, err := New(Config{Handler: h, Keys: []Key{{Token: "k-alice-123", Identity: alice}},
		Turn: func(ctx context.Context, tenant, id string) (json.RawMessage, error) { return nil, ErrTurnNotFound }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	if status, body := do(t, "POST", srv.URL+"/v1/messages", "k-alice-123", `{"conversation_id":"c","text":"`+strings.Repeat("x", 8000)+`"}`); status != 200 {
		t.Errorf("an 8 kB message under the default limit: %d %v", status, body)
	}
}

// A reply lists what ran as it ran, and an empty list when nothing did.
func TestReplyListsExecutions(t *testing.T) {
	h := &recorder{out: chat.Outbound{TurnID: "t1", Say: "done", Executed: []chat.Execution{{Tool: "create_task", Status: "ok"}}}}
	srv := newTestServer(t, h)
	_, body := do(t, "POST", srv.URL+"/v1/messages", "k-alice-123", `{"conversation_id":"c","text":"x"}`)
	if ex, _ := body["executed"].([]any); len(ex) != 1 || ex[0].(map[string]any)["tool"] != "create_task" {
		t.Errorf("executed = %v, want the one execution", body["executed"])
	}
	h.out = chat.Outbound{TurnID: "t2", Say: "hi"}
	_, body = do(t, "POST", srv.URL+"/v1/messages", "k-alice-123", `{"conversation_id":"c","text":"x"}`)
	if ex, ok := body["executed"].([]any); !ok || len(ex) != 0 {
		t.Errorf("executed = %v, want []", body["executed"])
	}
}
