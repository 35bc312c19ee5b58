package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/chat"
)

// approver is a hand-written chat.Approver that records every decision it
// is asked to take and answers with what the test set.
type approver struct {
	mu        sync.Mutex
	decisions []decision
	listed    []listing
	view      chat.ActionView
	out       chat.Outbound
	err       error
	list      []chat.ActionView
}

type decision struct {
	who     chat.Identity
	id      string
	approve bool
}

type listing struct {
	who    chat.Identity
	status string
}

func (a *approver) Actions(ctx context.Context, who chat.Identity, status string) ([]chat.ActionView, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.listed = append(a.listed, listing{who, status})
	return a.list, a.err
}

func (a *approver) Decide(ctx context.Context, who chat.Identity, id string, approve bool) (chat.ActionView, chat.Outbound, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.decisions = append(a.decisions, decision{who, id, approve})
	return a.view, a.out, a.err
}

func newApprovalServer(t *testing.T, a chat.Approver) *httptest.Server {
	t.Helper()
	cfg := Config{Handler: &recorder{}, Keys: []Key{{Token: "k-alice-123", Identity: alice}, {Token: "k-bob-12345", Identity: bob}}, MaxBodyBytes: 4096,
		Turn: func(ctx context.Context, tenant, id string) (json.RawMessage, error) { return nil, ErrTurnNotFound }}
	if a != nil {
		cfg.Approvals = a
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv
}

// A decision is exactly "approve" or "reject": anything else — a typo, a
// "yes", nothing, another case, another type — is a clear 400 and the
// approver is never asked.
func TestDecisionMustBeApproveOrReject(t *testing.T) {
	for _, body := range []string{
		`{"decision":"aprove"}`, `{"decision":"yes"}`, `{"decision":""}`, `{"decision":"APPROVE"}`, `{"decision":"Reject"}`,
		`{"decision":" approve"}`, `{"decision":"approve "}`, `{"decision":"approved"}`, `{"decision":"ok"}`,
		`{"decision":true}`, `{"decision":1}`, `{"decision":null}`, `{}`, ``, `{"decision":"approve","by":"root"}`,
		`{"decision":"approve"}{"decision":"reject"}`,
	} {
		t.Run(body, func(t *testing.T) {
			a := &approver{view: chat.ActionView{ID: "a1", Status: "confirmed"}}
			srv := newApprovalServer(t, a)
			status, resp := do(t, "POST", srv.URL+"/v1/approvals/a1", "k-alice-123", body)
			if status != 400 || errCode(resp) != "bad_request" {
				t.Errorf("got %d %v, want 400 bad_request", status, resp)
			}
			e, _ := resp["error"].(map[string]any)
			if msg, _ := e["message"].(string); msg == "" {
				t.Errorf("a refusal without a message: %v", resp)
			}
			if len(a.decisions) != 0 {
				t.Errorf("the approver was asked: %+v", a.decisions)
			}
		})
	}
}

// "approve" approves and "reject" rejects, as the caller and for the
// action the path names.
func TestDecisionReachesTheApprover(t *testing.T) {
	for _, tt := range []struct {
		decision string
		approve  bool
	}{{"approve", true}, {"reject", false}} {
		t.Run(tt.decision, func(t *testing.T) {
			a := &approver{view: chat.ActionView{ID: "a1", Status: "confirmed"}, out: chat.Outbound{TurnID: "t9", Say: "done"}}
			srv := newApprovalServer(t, a)
			status, resp := do(t, "POST", srv.URL+"/v1/approvals/a1", "k-alice-123", `{"decision":"`+tt.decision+`"}`)
			if status != 200 {
				t.Fatalf("got %d %v", status, resp)
			}
			if len(a.decisions) != 1 || a.decisions[0].who.UserID != "alice" || a.decisions[0].who.TenantID != "acme" ||
				a.decisions[0].id != "a1" || a.decisions[0].approve != tt.approve {
				t.Errorf("decisions %+v, want one by alice on a1 with approve=%v", a.decisions, tt.approve)
			}
			action, _ := resp["action"].(map[string]any)
			reply, _ := resp["reply"].(map[string]any)
			if action["id"] != "a1" || action["status"] != "confirmed" || reply["say"] != "done" || reply["buttons"] == nil || reply["executed"] == nil {
				t.Errorf("response %v", resp)
			}
		})
	}
}

// What the approver answers maps onto the API: not found (including an
// action another role or the requester may not decide) is 404, decided
// already is 409 with the action, a store failure before any decision is
// 503 with Retry-After, and a decision taken whose turn could not run is
// 200 with no reply.
func TestDecisionOutcomes(t *testing.T) {
	closed := chat.ActionView{ID: "a1", Status: "rejected"}
	for _, tt := range []struct {
		name   string
		view   chat.ActionView
		err    error
		status int
		code   string
	}{
		{"not found", chat.ActionView{}, fmt.Errorf("decide a1: %w", chat.ErrActionNotFound), 404, "not_found"},
		{"closed", closed, fmt.Errorf("decide a1: %w", chat.ErrActionClosed), 409, "already_decided"},
		{"store down", chat.ActionView{}, errors.New("database is locked"), 503, "unavailable"},
		{"turn failed after the decision", chat.ActionView{ID: "a1", Status: "approved"}, errors.New("lock wait timed out"), 200, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := &approver{view: tt.view, err: tt.err}
			srv := newApprovalServer(t, a)
			status, resp := do(t, "POST", srv.URL+"/v1/approvals/a1", "k-alice-123", `{"decision":"approve"}`)
			if status != tt.status || errCode(resp) != tt.code {
				t.Errorf("got %d %v, want %d %q", status, resp, tt.status, tt.code)
			}
			action, _ := resp["action"].(map[string]any)
			switch tt.status {
			case 409:
				if action["status"] != "rejected" {
					t.Errorf("a 409 without the action: %v", resp)
				}
			case 200:
				if action["status"] != "approved" || resp["reply"] != nil {
					t.Errorf("response %v, want the action and a null reply", resp)
				}
			}
		})
	}
}

func TestApprovalsNeedAKeyAndAnApprover(t *testing.T) {
	a := &approver{}
	srv := newApprovalServer(t, a)
	for _, tt := range []struct{ method, path, token, body string }{
		{"POST", "/v1/approvals/a1", "", `{"decision":"approve"}`},
		{"POST", "/v1/approvals/a1", "k-nobody-00", `{"decision":"approve"}`},
		{"GET", "/v1/approvals", "", ""},
	} {
		if status, resp := do(t, tt.method, srv.URL+tt.path, tt.token, tt.body); status != 401 || errCode(resp) != "unauthorized" {
			t.Errorf("%s %s with token %q: %d %v", tt.method, tt.path, tt.token, status, resp)
		}
	}
	if len(a.decisions) != 0 || len(a.listed) != 0 {
		t.Errorf("the approver was asked without a key: %+v %+v", a.decisions, a.listed)
	}
	none := newApprovalServer(t, nil)
	for _, tt := range []struct{ method, path, body string }{
		{"POST", "/v1/approvals/a1", `{"decision":"approve"}`},
		{"GET", "/v1/approvals", ""},
	} {
		if status, resp := do(t, tt.method, none.URL+tt.path, "k-alice-123", tt.body); status != 501 || errCode(resp) != "not_implemented" {
			t.Errorf("%s %s without approvals: %d %v", tt.method, tt.path, status, resp)
		}
	}
}

// The list is the caller's, filtered by a known status only.
func TestListApprovals(t *testing.T) {
	a := &approver{list: []chat.ActionView{{ID: "a1", Status: "proposed", CreatedAt: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}}}
	srv := newApprovalServer(t, a)
	status, resp := do(t, "GET", srv.URL+"/v1/approvals?status=proposed", "k-bob-12345", "")
	list, _ := resp["approvals"].([]any)
	if status != 200 || len(list) != 1 || list[0].(map[string]any)["id"] != "a1" {
		t.Errorf("list: %d %v", status, resp)
	}
	if len(a.listed) != 1 || a.listed[0].who.UserID != "bob" || a.listed[0].who.TenantID != "globex" || a.listed[0].status != "proposed" {
		t.Errorf("listed %+v, want bob's proposed", a.listed)
	}
	for _, q := range []string{"?status=PROPOSED", "?status=pending", "?status=proposed%20"} {
		if status, resp := do(t, "GET", srv.URL+"/v1/approvals"+q, "k-bob-12345", ""); status != 400 || errCode(resp) != "bad_request" {
			t.Errorf("status filter %s: %d %v", q, status, resp)
		}
	}
	if len(a.listed) != 1 {
		t.Errorf("the approver listed on a refused filter: %+v", a.listed)
	}
	// No actions is an empty list, never null.
	a.list = nil
	if status, resp := do(t, "GET", srv.URL+"/v1/approvals", "k-bob-12345", ""); status != 200 || resp["approvals"] == nil {
		t.Errorf("empty list: %d %v", status, resp)
	}
	a.err = errors.New("database is locked")
	if status, resp := do(t, "GET", srv.URL+"/v1/approvals", "k-bob-12345", ""); status != 503 || errCode(resp) != "unavailable" {
		t.Errorf("store down: %d %v", status, resp)
	}
}
