package support_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/store/storetest"
)

// The support desk's state over days, on this directory's configuration:
// the conversation's memory ends after 30 minutes, its case binding and the
// action waiting for staff do not.

const day = 24 * time.Hour

// A refund approved two days after the customer's last message is made,
// once, in the ticket's case, and the customer is told.
func TestApprovalAfterTwoDays(t *testing.T) {
	clock := storetest.NewClock(time.Date(2026, 11, 27, 18, 0, 0, 0, time.UTC)) // a Friday evening
	d, _ := newDeskAt(t, &agent{}, clock.Now, nil)
	d.mustCustomer("T-4821", "m1")
	id := d.oneProposed()["id"].(string)

	clock.Advance(2 * day) // the memory's window and pause are long gone
	status, body := d.decide(id, "approve")
	if status != 200 {
		t.Fatalf("approve after two days: %d %v", status, body)
	}
	final := body["action"].(map[string]any)
	reply, _ := body["reply"].(map[string]any)
	if final["status"] != "confirmed" || final["reason"] != nil || !strings.HasPrefix(reply["say"].(string), refundDone+"\n") {
		t.Errorf("after two days: action %v, reply %v; want confirmed and told", final, reply)
	}
	refunds := d.sim.Refunds()
	if len(refunds) != 1 || refunds[0].PaymentID != "pay_4821" || refunds[0].Amount != 990 {
		t.Fatalf("refunds %+v, want one of pay_4821", refunds)
	}
	if got := paths(d.sim.Requests(), "POST", "/refunds"); len(got) != 1 || !strings.Contains(got[0], `"ticket_id":"T-4821"`) {
		t.Errorf("refund requests %v: want one, in ticket T-4821", got)
	}
	// Asked again, nothing more happens.
	if status, _ := d.decide(id, "approve"); status != 409 || len(d.sim.Refunds()) != 1 {
		t.Errorf("a second approval: %d, %d refunds", status, len(d.sim.Refunds()))
	}
	status, view := d.Do("GET", "/v1/approvals?status=confirmed", "k-staff-01", "")
	if got, _ := view["approvals"].([]any); status != 200 || len(got) != 1 {
		t.Errorf("confirmed approvals: %d %v", status, view)
	}
}

// An approved action lives until it ends, whatever its approval_ttl and
// whatever its conversation still holds: with staff given 60 days, a
// refund approved after 35 — the conversation's case binding (30 days)
// long gone — is made once, in its own ticket.
func TestApprovalOutlivesTheCaseBinding(t *testing.T) {
	clock := storetest.NewClock(time.Date(2026, 11, 27, 18, 0, 0, 0, time.UTC))
	d, _ := newDeskAt(t, &agent{}, clock.Now, func(text string) string {
		return strings.Replace(text, "approval_ttl: 72h", "approval_ttl: 60d", 1)
	})
	d.mustCustomer("T-4821", "m1")
	id := d.oneProposed()["id"].(string)
	clock.Advance(35 * day)
	status, body := d.decide(id, "approve")
	if status != 200 || body["action"].(map[string]any)["status"] != "confirmed" {
		t.Fatalf("approve after 35 days: %d %v", status, body)
	}
	got := paths(d.sim.Requests(), "POST", "/refunds")
	if len(got) != 1 || !strings.Contains(got[0], `"ticket_id":"T-4821"`) || len(d.sim.Refunds()) != 1 {
		t.Errorf("refund requests %v: want one, in ticket T-4821", got)
	}
}

// The conversation stays bound to its ticket after the memory's window:
// another ticket is refused (409) an hour, a day and a week later, and
// nothing of it is recorded. Only when the case lifetime (30 days) has
// passed since the conversation's last turn may it take another.
func TestRebindAfterMemoryWindow(t *testing.T) {
	clock := storetest.NewClock(time.Date(2026, 11, 27, 18, 0, 0, 0, time.UTC))
	d, _ := newDeskAt(t, &agent{}, clock.Now, nil)
	d.mustCustomer("T-4821", "m1")
	other := func(msg string) (int, map[string]any) {
		return d.Post("k-helpdesk-01", fmt.Sprintf(`{"conversation_id":"T-4821","message_id":%q,"text":"и ещё вопрос","context":{"ticket_id":"T-9999"}}`, msg))
	}
	start := clock.Now()
	for i, after := range []time.Duration{time.Hour, day, 7 * day, 30 * day} {
		clock.Set(start.Add(after))
		status, body := other(fmt.Sprintf("x%d", i))
		if e, _ := body["error"].(map[string]any); status != 409 || e["code"] != "case_conflict" {
			t.Fatalf("another ticket %v later: %d %v; want 409 case_conflict", after, status, body)
		}
	}
	if n := len(paths(d.sim.Requests(), "POST", "/payments/status")); n != 1 {
		t.Errorf("%d payment reads: a refused message read for another case", n)
	}
	clock.Set(start.Add(30*day + time.Minute))
	if status, body := other("late"); status != 200 {
		t.Errorf("another ticket after the case lifetime: %d %v; want it bound anew", status, body)
	}
	if got := paths(d.sim.Requests(), "POST", "/payments/status"); len(got) != 2 || got[1] != `{"ticket_id":"T-9999"}` {
		t.Errorf("payment reads %v: want the new case's", got)
	}
}

// When the helpdesk closes the ticket (close_case), the conversation's
// binding ends at once: it starts afresh, and may be bound to another
// ticket. A user's key cannot close it, and the refund proposed in the
// closed case stays in that case.
func TestCloseCase(t *testing.T) {
	d, _ := newDesk(t, &agent{}, "")
	d.mustCustomer("T-4821", "m1")
	if status, _ := d.Post("k-staff-01", `{"conversation_id":"T-4821","close_case":true}`); status != 403 {
		t.Errorf("close_case with a key lacking context:bind: %d, want 403", status)
	}
	status, body := d.Post("k-helpdesk-01", `{"conversation_id":"T-4821","message_id":"close","close_case":true}`)
	if status != 200 || body["say"] != "Обращение закрыто." {
		t.Fatalf("close: %d %v", status, body)
	}
	_, rec := d.Do("GET", "/v1/turns/"+body["turn_id"].(string), "k-helpdesk-01", "")
	if rec["route"] != "case_closed" {
		t.Errorf("the closing turn's route = %v", rec["route"])
	}
	status, body = d.Post("k-helpdesk-01", `{"conversation_id":"T-4821","message_id":"m2","text":"новый вопрос","context":{"ticket_id":"T-9999"}}`)
	if status != 200 {
		t.Fatalf("bound to another ticket after the close: %d %v", status, body)
	}
	if got := paths(d.sim.Requests(), "POST", "/payments/status"); len(got) != 2 || got[1] != `{"ticket_id":"T-9999"}` {
		t.Errorf("payment reads %v: want the new case's", got)
	}
	// The model saw nothing of the closed case.
	reqs := d.Model.Requests()
	for _, m := range reqs[len(reqs)-1].Messages {
		if strings.Contains(m.Content, customerMessage) {
			t.Errorf("the closed case's message is in the new case's view: %q", m.Content)
		}
	}
	for _, a := range d.proposed() {
		if c := a.(map[string]any)["case"].(map[string]any); c["ticket_id"] == "T-4821" {
			return
		}
	}
	t.Errorf("the action proposed in the closed case lost its case: %v", d.proposed())
}
