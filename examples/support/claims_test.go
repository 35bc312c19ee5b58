package support_test

import (
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/examples/support/sim"
)

// What the assistant tells a customer about the refund is checked against
// what happened, over the HTTP API: each disguise and paraphrase of "the
// refund is done", and a bare «Готово.», said while the refund only waits
// for staff, goes to a person — the draft kept for staff, nothing of it
// sent; the same words after the refund ran go out as they are, with the
// server's line on the refund.
func TestClaimsHeldUntilTheRefundRan(t *testing.T) {
	replies := []string{
		// declared phrases, disguised
		"Воз\u200bврат выполнен.",       // a zero-width space
		"Возврат вы\u2060полнен.",       // a word joiner
		"Возврат вы\u00adпол\u00adнен.", // soft hyphens
		"Возврат **выполнен**.",
		"Возврат <b>выполнен</b>.",
		"Вoзврат выполнен.", // a Latin o
		"Возврат — выполнен.",
		"Воз-врат выполнен.",
		// paraphrases
		"Возврат успешно выполнен.",
		"Мы вернули деньги.",
		"Средства возвращены.",
		"Платёж возвращён.",
		"Your refund was issued.",
		"Die Rückerstattung wurde durchgeführt.",
		// general words while the refund waits
		"Готово.",
	}
	a := &agent{}
	d, sw := newDesk(t, a, "")
	for i, reply := range replies {
		payments, err := sim.New() // the payments system of a fresh ticket
		if err != nil {
			t.Fatal(err)
		}
		sw.set(payments)
		a.final.Store(&reply)
		conv := "T-4821-claim-" + string(rune('a'+i))
		status, body := d.customer(conv, "m1")
		if status != 200 {
			t.Fatalf("%q: message: %d %v", reply, status, body)
		}
		say := body["say"].(string)
		if strings.Contains(say, reply) || !strings.HasPrefix(say, "Я передал обращение сотруднику") {
			t.Errorf("%q while the refund waits: the customer is told %q", reply, say)
		}
		if !strings.Contains(say, receiptProposed) || !hasAction(body, "create_refund", "proposed", receiptProposed) {
			t.Errorf("%q: the reply lacks the refund's true state: %q, actions %v", reply, say, body["actions"])
		}
		_, rec := d.Do("GET", "/v1/turns/"+body["turn_id"].(string), "k-helpdesk-01", "")
		review, _ := rec["review"].(map[string]any)
		if rec["status"] != "needs_review" || review["reason"] != "unconfirmed_claim" || review["draft"] != reply {
			t.Errorf("%q: turn %v, review %v: want needs_review (unconfirmed_claim) with the draft kept", reply, rec["status"], review)
		}

		// Staff approve; the refund runs; the same words now go out.
		id := d.proposedIn(conv)
		status, body = d.decide(id, "approve")
		if status != 200 {
			t.Fatalf("%q: approve: %d %v", reply, status, body)
		}
		out := body["reply"].(map[string]any)
		if out["say"] != reply+"\n"+receiptDone || !hasAction(out, "create_refund", "confirmed", receiptDone) {
			t.Errorf("%q after the refund ran: the customer is told %q, actions %v", reply, out["say"], out["actions"])
		}
		if n := len(payments.Refunds()); n != 1 {
			t.Errorf("%q: %d refunds", reply, n)
		}
	}
}

// The article's own words: «доступ восстановлен» where no tool restores
// access, and «подписка активна» when the subscription system said it
// was never activated, go to a person even after the refund ran.
func TestClaimsNoToolConfirms(t *testing.T) {
	a := &agent{}
	d, sw := newDesk(t, a, "")
	for i, reply := range []string{"Доступ восстановлен.", "Мы восстановили вам доступ.", "Подписка активна.", "Your subscription is active again."} {
		payments, err := sim.New()
		if err != nil {
			t.Fatal(err)
		}
		sw.set(payments)
		a.final.Store(&reply)
		conv := "T-4821-access-" + string(rune('a'+i))
		_, body := d.customer(conv, "m1")
		_, rec := d.Do("GET", "/v1/turns/"+body["turn_id"].(string), "k-helpdesk-01", "")
		if rec["status"] != "needs_review" || strings.Contains(body["say"].(string), reply) {
			t.Errorf("%q: status %v, the customer is told %q", reply, rec["status"], body["say"])
		}
		id := d.proposedIn(conv)
		_, body = d.decide(id, "approve")
		out := body["reply"].(map[string]any)
		if say := out["say"].(string); strings.Contains(say, reply) || len(payments.Refunds()) != 1 {
			t.Errorf("%q after the refund (%d refunds): the customer is told %q", reply, len(payments.Refunds()), say)
		}
	}
}

// hasAction reports whether a reply's actions hold the write in status
// with the server's line text.
func hasAction(reply map[string]any, tool, status, text string) bool {
	list, _ := reply["actions"].([]any)
	for _, x := range list {
		if v, _ := x.(map[string]any); v["tool"] == tool && v["status"] == status && v["text"] == text {
			return true
		}
	}
	return false
}
