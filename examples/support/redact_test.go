package support_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/arbiterhq/arbiter/server"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/turn"
)

// redactionKey is the deployment's key in these tests
// (ARBITER_REDACTION_KEY).
const redactionKey = "test-redaction-key-0001"

// The payer's card number and e-mail the payments system answers with
// (redact: [card_number, email] on get_payment_status) appear in no
// journal row, no trace the observers receive and no log line — not in
// the read's result, not where the model repeated them in its reply or in
// a draft held for review — only their keyed hashes, which the
// deployment's key reproduces. Staff see the payment's facts with the
// same hashes; the refund's own arguments, which must run, are as asked.
func TestCardNumberAndEmailAreNeverWrittenDown(t *testing.T) {
	const card, email = "4276 1600 0000 4821", "anna@example.com"
	var mu sync.Mutex
	var traces, logs bytes.Buffer
	kinds := server.Builtin()
	kinds.Observers = append(kinds.Observers, func(context.Context, *server.Env) (server.Observer, error) {
		return server.Observer{Observe: func(tr *turn.Trace) {
			b, _ := json.Marshal(tr)
			mu.Lock()
			traces.Write(b)
			mu.Unlock()
		}}, nil
	})
	logOut := &lockedWriter{mu: &mu, w: &logs}
	a := &agent{}
	echo := "Платёж по карте " + card + " (" + email + ") подтверждён, возврат передан сотруднику."
	a.final.Store(&echo)
	d, _ := newDeskWith(t, a, kinds, server.Options{LogOut: logOut}, func(text string) string {
		return text + "log: {level: debug, format: json}\n"
	})

	if status, body := d.customer("T-4821", "m1"); status != 200 || !strings.Contains(body["say"].(string), card) {
		t.Fatalf("message: %d %v", status, body)
	}
	act := d.proposed()[0].(map[string]any)
	if status, body := d.decide(act["id"].(string), "approve"); status != 200 || len(d.sim.Refunds()) != 1 {
		t.Fatalf("approve: %d %v", status, body)
	}
	held := "Доступ восстановлен, карта " + card + "."
	a.final.Store(&held)
	if status, _ := d.customer("T-4821-held", "m1"); status != 200 {
		t.Fatal(status)
	}

	lister, ok := d.Journal.(store.TurnLister)
	if !ok {
		t.Fatal("the desk's journal lists no turns")
	}
	recs, err := lister.ListTurns(context.Background(), "support", store.TurnFilter{Limit: 500})
	if err != nil || len(recs) < 3 {
		t.Fatalf("%d turns journaled, %v", len(recs), err)
	}
	var journal bytes.Buffer
	for _, r := range recs {
		if r, err = d.Journal.GetTurn(context.Background(), "support", r.TurnID); err != nil {
			t.Fatal(err)
		}
		journal.Write(r.Trace)
		b, _ := json.Marshal(struct {
			LLM   []store.LLMCall
			Tools []store.ToolCall
		}{r.LLMCalls, r.ToolCalls})
		journal.Write(b)
	}
	hashes := []string{hashOf(card), hashOf(email)}
	for name, rows := range map[string]string{"journal": journal.String(), "traces": traces.String(), "logs": logs.String()} {
		for _, secret := range []string{card, email, "4276 1600 0000", "anna@"} {
			if strings.Contains(rows, secret) {
				t.Errorf("the %s hold %q", name, secret)
			}
		}
		if name != "logs" {
			for _, h := range hashes {
				if !strings.Contains(rows, h) {
					t.Errorf("the %s lack the keyed hash %s", name, h)
				}
			}
		}
	}
	if !strings.Contains(journal.String(), `unconfirmed_claim`) {
		t.Error("the held draft is not in the journal; the test proves less than it says")
	}
	basis, _ := json.Marshal(act["basis"])
	if strings.Contains(string(basis), card) || !strings.Contains(string(basis), hashOf(card)) {
		t.Errorf("staff see %s", basis)
	}
	if refund := d.sim.Refunds()[0]; refund.PaymentID != "pay_4821" || refund.Amount != 990 || refund.Currency != "RUB" {
		t.Errorf("refund %+v", refund)
	}
}

// hashOf is a value's keyed hash as the records show it.
func hashOf(v string) string {
	m := hmac.New(sha256.New, []byte(redactionKey))
	m.Write([]byte(v))
	return "hmac:" + hex.EncodeToString(m.Sum(nil))[:20]
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
