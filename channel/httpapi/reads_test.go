package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/chat"
)

// A read a tool kind adds is served for a key with the scope read only:
// its value, 404 for what the tenant lacks, 503 when its store fails; a
// server given none has no such path. GET /v1/me names the body limit.
func TestReads(t *testing.T) {
	cards := map[string]string{"acme/c1": "Check the form"}
	read := Read{Pattern: "GET /v1/board/cards/{id}", What: "card", Read: func(r *http.Request, who chat.Identity) (any, error) {
		if r.PathValue("id") == "broken" {
			return nil, errors.New("disk on fire")
		}
		title, ok := cards[who.TenantID+"/"+r.PathValue("id")]
		if !ok {
			return nil, ErrNotFound
		}
		return map[string]string{"title": title}, nil
	}}
	s, err := New(Config{
		Handler: &recorder{}, Reads: []Read{read}, MaxBodyBytes: 4096,
		Keys: []Key{{Token: "k-alice-123", Identity: alice}, {Token: "k-bob-12345", Identity: bob}},
		Turn: func(context.Context, string, string) (json.RawMessage, error) { return nil, ErrTurnNotFound },
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	for _, c := range []struct {
		token, id string
		status    int
		want      string
	}{
		{"k-alice-123", "c1", 200, "Check the form"},
		{"k-alice-123", "c9", 404, "no card c9"},
		{"k-alice-123", "broken", 503, "the card cannot be read right now"},
		{"k-bob-12345", "c1", 403, "needs a key with the scope read"},
		{"", "c1", 401, "bearer token"},
	} {
		status, body := do(t, "GET", srv.URL+"/v1/board/cards/"+c.id, c.token, "")
		raw, _ := json.Marshal(body)
		if status != c.status || !strings.Contains(string(raw), c.want) {
			t.Errorf("GET card %s as %q = %d %s, want %d with %q", c.id, c.token, status, raw, c.status, c.want)
		}
	}
	if _, me := do(t, "GET", srv.URL+"/v1/me", "k-alice-123", ""); me["max_body_bytes"] != float64(4096) {
		t.Errorf("/v1/me = %v, want max_body_bytes 4096", me)
	}

	bare := newTestServer(t, &recorder{})
	if status, body := do(t, "GET", bare.URL+"/v1/board/cards/c1", "k-alice-123", ""); status != 404 || errCode(body) != "not_found" {
		t.Errorf("a read no one added = %d %v, want 404", status, body)
	}
	_, err = New(Config{Handler: &recorder{}, Reads: []Read{read, read},
		Turn: func(context.Context, string, string) (json.RawMessage, error) { return nil, ErrTurnNotFound }})
	if err == nil || !strings.Contains(err.Error(), "GET /v1/board/cards/{id}") {
		t.Errorf("two reads of one pattern: %v, want an error naming it", err)
	}
}
