package httptool

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/tool"
)

// A refund endpoint with its precheck and reconcile endpoints: the paths
// tell them apart.
func refundTool(t *testing.T, rec *recorder, handle http.HandlerFunc) *Tool {
	srv := rec.server(t, handle)
	return newTool(t, Config{
		Name: "create_refund", Description: "Refund a payment.", URL: srv.URL + "/refunds", Risk: tool.RiskWriteFull,
		InputSchema: json.RawMessage(`{"type":"object"}`), Approve: []string{"staff"}, Timeout: 300 * time.Millisecond,
		PrecheckURL: srv.URL + "/refunds/precheck", ReconcileURL: srv.URL + "/refunds/find",
	})
}

func TestPrecheck(t *testing.T) {
	c := tool.Call{Caller: olga, Args: json.RawMessage(`{"payment_id":"pay_4821"}`), IdempotencyKey: "a:1"}
	for _, tt := range []struct {
		status int
		body   string
		want   string // "" = may go ahead
	}{
		{200, `{}`, ""},
		{409, `{"error":{"message":"already refunded"}}`, "already refunded"},
		{412, ``, "precondition does not hold"},
		{500, ``, "could not check: status 500"},
	} {
		rec := &recorder{}
		tl := refundTool(t, rec, reply(tt.status, "application/json", tt.body))
		err := tl.Precheck(context.Background(), c)
		switch {
		case tt.want == "" && err != nil, tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("status %d: err = %v, want %q", tt.status, err, tt.want)
		}
		got := rec.last(t)
		if got.path != "/refunds/precheck" || got.method != "POST" || got.body != `{"payment_id":"pay_4821"}` || got.header.Get(HeaderTenant) != "acme" {
			t.Errorf("precheck request %+v", got)
		}
	}
	// An unreachable precheck stops the write too.
	tl := newTool(t, Config{Name: "x", Description: "x", URL: "http://127.0.0.1:1/x", Risk: tool.RiskWriteFull,
		InputSchema: json.RawMessage(`{"type":"object"}`), PrecheckURL: "http://127.0.0.1:1/check"})
	if err := tl.Precheck(context.Background(), c); err == nil || !strings.Contains(err.Error(), "could not check") {
		t.Errorf("unreachable precheck: %v", err)
	}
}

func TestReconcile(t *testing.T) {
	c := tool.Call{Caller: olga, Args: json.RawMessage(`{"payment_id":"pay_4821"}`), IdempotencyKey: "a:42"}
	rec := &recorder{}
	found := true
	tl := refundTool(t, rec, func(w http.ResponseWriter, r *http.Request) {
		if !found {
			reply(404, "", "")(w, r)
			return
		}
		reply(200, "application/json", `{"id":"re_1","amount":990}`)(w, r)
	})
	res, err := tl.Reconcile(context.Background(), c)
	if err != nil || res.Status != tool.StatusOK || !strings.Contains(string(res.Data), "re_1") {
		t.Errorf("found: %+v %v", res, err)
	}
	if got := rec.last(t); got.path != "/refunds/find" || got.header.Get(HeaderIdempotencyKey) != "a:42" {
		t.Errorf("reconcile request %+v", got)
	}
	found = false
	if res, err := tl.Reconcile(context.Background(), c); err != nil || res.Status != tool.StatusNotFound {
		t.Errorf("not found: %+v %v", res, err)
	}
	c.IdempotencyKey = ""
	if _, err := tl.Reconcile(context.Background(), c); err == nil {
		t.Error("reconcile without a key answered")
	}
	// Without a reconcile endpoint nothing ever can tell: asking again is
	// no use (a precheck is not asked in its place).
	c.IdempotencyKey = "a:42"
	none := newTool(t, Config{Name: "y", Description: "y", URL: "http://127.0.0.1:1/y", Risk: tool.RiskWriteFull,
		InputSchema: json.RawMessage(`{"type":"object"}`), PrecheckURL: "http://127.0.0.1:1/check"})
	if _, err := none.Reconcile(context.Background(), c); !errors.Is(err, tool.ErrNoReadBack) {
		t.Errorf("no reconcile endpoint: %v, want tool.ErrNoReadBack", err)
	}
}

// A write whose answer never comes, or comes as a server error, may have
// taken effect: the result says so; a 503 or a refused connection do not.
func TestWriteOutcomeUnknown(t *testing.T) {
	c := tool.Call{Caller: olga, Args: json.RawMessage(`{}`), IdempotencyKey: "a:1"}
	for _, tt := range []struct {
		name   string
		handle http.HandlerFunc
		want   bool
	}{
		{"timeout", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, true}, // answers only once the caller hung up
		{"500", reply(500, "", ""), true},
		{"503", reply(503, "", ""), false},
		{"409", reply(409, "", ""), false},
	} {
		rec := &recorder{}
		tl := refundTool(t, rec, tt.handle)
		res := call(t, tl, c)
		if res.Status != tool.StatusError || res.OutcomeUnknown != tt.want {
			t.Errorf("%s: %+v, want outcome unknown %v", tt.name, res, tt.want)
		}
	}
	tl := newTool(t, Config{Name: "x", Description: "x", URL: "http://127.0.0.1:1/x", Risk: tool.RiskWriteFull, InputSchema: json.RawMessage(`{"type":"object"}`)})
	if res := call(t, tl, c); res.OutcomeUnknown {
		t.Errorf("a refused connection left the outcome unknown: %+v", res)
	}
}
