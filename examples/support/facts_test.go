package support_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/examples/support/sim"
)

// ticketMessage is the customer's message about ticket, in conversation.
func (d *desk) ticketMessage(conversation, ticket string) (int, map[string]any) {
	d.T.Helper()
	return d.Post("k-helpdesk-01", fmt.Sprintf(`{"conversation_id":%q,"message_id":"m1","text":%q,"context":{"ticket_id":%q}}`,
		conversation, customerMessage, ticket))
}

// basisOf is the facts an approval shows, as JSON.
func basisOf(t *testing.T, act map[string]any) []map[string]any {
	t.Helper()
	var out []map[string]any
	raw, _ := json.Marshal(act["basis"])
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("basis %s: %v", raw, err)
	}
	return out
}

// Staff see the payment as it was checked — which system said it and
// when — next to the refund's values; right before the refund the payment
// is read again, then prechecked, then refunded.
func TestApprovalShowsTheFactsChecked(t *testing.T) {
	d, _ := newDesk(t, &agent{}, "")
	d.mustCustomer("T-4821", "m1")
	act := d.proposed()[0].(map[string]any)
	basis := basisOf(t, act)
	if len(basis) != 1 || basis[0]["tool"] != "get_payment_status" || basis[0]["source"] != "get_payment_status" || basis[0]["observed_at"] == "" {
		t.Fatalf("basis %v", basis)
	}
	data, _ := json.Marshal(basis[0]["data"])
	for _, want := range []string{`"status":"confirmed"`, `"amount":990`, `"currency":"RUB"`, `"refunded":false`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the approval's payment %s lacks %s", data, want)
		}
	}
	before := len(d.sim.Requests())
	if status, body := d.decide(act["id"].(string), "approve"); status != 200 || body["action"].(map[string]any)["status"] != "confirmed" {
		t.Fatalf("approve: %d %v", status, body)
	}
	var after []string
	for _, r := range d.sim.Requests()[before:] {
		after = append(after, r.Path)
	}
	if strings.Join(after, " ") != "/payments/status /refunds/precheck /refunds" {
		t.Errorf("after the approval the payments system saw %v: want the payment read again, the precheck, the refund", after)
	}
}

// The payment changes between the check and the approval (a chargeback
// opened): the approval does not refund; the action goes back to staff
// with the payment as it is now and what changed, and staff's second
// approval meets the precheck, which refuses a refund of a disputed
// payment. Nothing is refunded.
func TestChangedFactsGoBackToStaff(t *testing.T) {
	d, _ := newDesk(t, &agent{}, "")
	d.mustCustomer("T-4821", "m1")
	id := d.proposed()[0].(map[string]any)["id"].(string)
	d.sim.SetPayment("T-4821", func(p *sim.Payment) { p.Status = "chargeback" })

	status, body := d.decide(id, "approve")
	if status != 200 {
		t.Fatalf("approve: %d %v", status, body)
	}
	act := body["action"].(map[string]any)
	reason, _ := act["reason"].(string)
	if act["status"] != "proposed" || !strings.Contains(reason, `payment.status: "confirmed" → "chargeback"`) {
		t.Errorf("after the approval: status %v, reason %q: want it back with staff, saying what changed", act["status"], reason)
	}
	if n := len(paths(d.sim.Requests(), "POST", "/refunds")) + len(paths(d.sim.Requests(), "POST", "/refunds/precheck")); n != 0 || len(d.sim.Refunds()) != 0 {
		t.Fatalf("%d refund requests, %d refunds after facts changed", n, len(d.sim.Refunds()))
	}
	if say := sayOf(body); strings.Contains(say, "Возврат выполнен") || !strings.Contains(say, receiptProposed) {
		t.Errorf("the customer is told %q", say)
	}
	list := d.proposed()
	if len(list) != 1 || list[0].(map[string]any)["id"] != id || list[0].(map[string]any)["decided_by"] != nil {
		t.Fatalf("staff's queue %v: want the action back, undecided", list)
	}
	now, _ := json.Marshal(basisOf(t, list[0].(map[string]any))[0]["data"])
	if !strings.Contains(string(now), `"status":"chargeback"`) {
		t.Errorf("the approval shows %s, want the payment as it is now", now)
	}

	status, body = d.decide(id, "approve")
	act = body["action"].(map[string]any)
	if status != 200 || act["status"] != "failed" || !strings.Contains(act["reason"].(string), "pay_4821 is chargeback") || len(d.sim.Refunds()) != 0 {
		t.Errorf("second approval: %d, action %v, refunds %v", status, act, d.sim.Refunds())
	}
}

// The precheck covers the article's currency and tariff terms, not only
// the payment's state: a promotional plan is not refundable, a monthly
// one only within 14 days and in full, and only in the payment's
// currency. Each refund is approved by staff and refused by the payments
// system before anything is written.
func TestRefundTermsRefuseBeforeTheWrite(t *testing.T) {
	cases := []struct{ ticket, currency, amount, want string }{
		{sim.TicketPromoTariff, "", "", "tariff annual_promo is not refundable"},
		{sim.TicketWindowPassed, "", "", "tariff monthly refunds within 14 days"},
		{"T-5000", "USD", "", `currency "USD" is not the payment's RUB`},
		{"T-5000", "", "500", "tariff monthly refunds the whole payment (990 RUB), not 500"},
	}
	for _, c := range cases {
		t.Run(c.ticket+c.currency+c.amount, func(t *testing.T) {
			d, _ := newDesk(t, &agent{currency: c.currency, amount: c.amount}, "")
			if status, body := d.ticketMessage(c.ticket, c.ticket); status != 200 {
				t.Fatalf("message: %d %v", status, body)
			}
			status, body := d.decide(d.oneProposed()["id"].(string), "approve")
			act := body["action"].(map[string]any)
			if status != 200 || act["status"] != "failed" || !strings.Contains(fmt.Sprint(act["reason"]), c.want) {
				t.Errorf("approve: %d, action %v: want failed, %q", status, act, c.want)
			}
			if n := len(paths(d.sim.Requests(), "POST", "/refunds")); n != 0 || len(d.sim.Refunds()) != 0 {
				t.Errorf("%d refund writes, refunds %v", n, d.sim.Refunds())
			}
		})
	}
}
