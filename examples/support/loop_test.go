package support_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/eval/evaltest"
	"github.com/arbiterhq/arbiter/llm/llmtest"
	"github.com/arbiterhq/arbiter/store/storetest"
)

// The article's mandatory checks run in a fixed order before the model is
// asked anything: the payments system and the subscription base answer
// first, the model's first request already holds both results, and the
// model's own first step is the one it chooses (the policy).
func TestMandatoryChecksRunBeforeTheModel(t *testing.T) {
	d, _ := newDesk(t, &agent{}, "")
	body := d.mustCustomer("T-4821", "m1")
	reqs := d.sim.Requests()
	if len(reqs) < 3 || reqs[0].Path != "/payments/status" || reqs[1].Path != "/subscriptions/status" || reqs[2].Path != "/policy/search" {
		t.Fatalf("the payments system saw %+v: want the payment, then the subscription, then the model's policy search", reqs)
	}
	if string(reqs[0].Body) != `{"ticket_id":"T-4821"}` || string(reqs[1].Body) != `{"ticket_id":"T-4821"}` {
		t.Errorf("the checks read %s and %s, want the bound ticket", reqs[0].Body, reqs[1].Body)
	}
	first := d.Model.Requests()[0]
	var seen []string
	for _, m := range first.Messages {
		if name := match(toolNameRE, m.Content); m.Role == "user" && name != "?" {
			seen = append(seen, name)
			// Framed as the model's own reads are: named by the call, its
			// status and its data (a time only once it is old).
			if !strings.Contains(m.Content, `{"status":"ok","data":{`) || !strings.Contains(m.Content, `T-4821`) {
				t.Errorf("the result of %s is not framed as a read's: %s", name, m.Content)
			}
		}
	}
	if strings.Join(seen, ",") != "get_payment_status,get_subscription_status" {
		t.Errorf("the model's first request holds the results of %v", seen)
	}
	_, rec := d.Do("GET", "/v1/turns/"+body["turn_id"].(string), "k-helpdesk-01", "")
	var executed []string
	for _, x := range rec["executed"].([]any) {
		executed = append(executed, x.(map[string]any)["tool"].(string))
	}
	if len(executed) < 2 || executed[0] != "get_payment_status" || executed[1] != "get_subscription_status" {
		t.Errorf("the turn ran %v", executed)
	}
	if n := strings.Count(strings.Join(executed, ","), "get_payment_status"); n != 1 {
		t.Errorf("the payment was read %d times, want once", n)
	}
}

// The article's limits hold in the example: a model that never stops is
// handed to staff at its 4th model call, one that repeats a read at its
// third run of it, one that asks for reads by the handful when the 8th
// tool call would pass — each with its reason, nothing beyond the limit run.
func TestTheArticlesLimits(t *testing.T) {
	search := func(queries ...string) llmtest.HTTPReply {
		var calls []llmtest.WireToolCall
		for i, q := range queries {
			calls = append(calls, llmtest.WireToolCall{ID: fmt.Sprint("c_", i), Name: "search_support_policy", Arguments: fmt.Sprintf(`{"query":%q}`, q)})
		}
		return llmtest.HTTPReply{ToolCalls: calls}
	}
	cases := []struct {
		name     string
		loop     func(n int) llmtest.HTTPReply
		reason   string
		searches int
		model    int
	}{
		{"never stops", func(n int) llmtest.HTTPReply { return search(fmt.Sprint("возврат, вариант ", n)) }, "model_calls", 4, 4},
		{"the same read again", func(int) llmtest.HTTPReply { return search("возврат") }, "repeated_call", 2, 3},
		{"reads by the handful", func(n int) llmtest.HTTPReply {
			return search(fmt.Sprint("a", n), fmt.Sprint("b", n), fmt.Sprint("c", n))
		}, "tool_calls", 6, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := &agent{}
			var n int
			a.loop = func(*llmtest.ChatRequest) llmtest.HTTPReply { n++; return c.loop(n) }
			d, _ := newDesk(t, a, "")
			body := d.mustCustomer("T-4821", "m1")
			_, rec := d.Do("GET", "/v1/turns/"+body["turn_id"].(string), "k-helpdesk-01", "")
			review, _ := rec["review"].(map[string]any)
			loop, _ := rec["loop"].(map[string]any)
			if rec["status"] != "needs_review" || review["reason"] != c.reason {
				raw, _ := json.Marshal(rec["review"])
				t.Errorf("turn %v, review %s: want needs_review (%s)", rec["status"], raw, c.reason)
			}
			if got := len(paths(d.sim.Requests(), "POST", "/policy/search")); got != c.searches {
				t.Errorf("%d policy searches ran, want %d", got, c.searches)
			}
			if got := len(d.Model.Requests()); got != c.model || loop["model_calls"] != float64(c.model) {
				t.Errorf("%d model requests (trace %v), want %d", got, loop["model_calls"], c.model)
			}
		})
	}
}

var subscriptionRE = regexp.MustCompile(`"status":"(active|inactive|activation_pending)"`)

// The article's stale status: the agent read the subscription inactive,
// and while it worked another process activated it. The answer comes more
// than the read's minute of freshness later, so the subscription is read
// again before it is sent; the model reads the new status and answers
// from it — the customer is never told the stale one.
func TestStaleStatusIsReadAgainBeforeTheAnswer(t *testing.T) {
	clock := storetest.NewClock(time.Now())
	a := &agent{}
	d, _ := newDeskAt(t, a, clock.Now, nil)
	var asked, slow atomic.Int32
	slow.Store(1)
	a.loop = func(r *llmtest.ChatRequest) llmtest.HTTPReply {
		if asked.Add(1) == 1 && slow.Load() == 1 { // the model takes its time; meanwhile the activation lands
			clock.Advance(2 * time.Minute)
			d.sim.ActivateSubscription("T-4821")
		}
		sub := evaltest.ToolResults(r.Messages)["get_subscription_status"]
		return llmtest.HTTPReply{Content: "Статус подписки сейчас: " + match(subscriptionRE, sub) + "."}
	}
	body := d.mustCustomer("T-4821", "m1")
	if say := body["say"].(string); say != "Статус подписки сейчас: active." {
		t.Errorf("the customer is told %q, want the status as it is now", say)
	}
	if n := len(paths(d.sim.Requests(), "POST", "/subscriptions/status")); n != 2 || asked.Load() != 2 {
		t.Errorf("%d subscription reads, %d model calls: want the read again and the model asked again", n, asked.Load())
	}

	// Within the minute nothing is read again.
	asked.Store(0)
	slow.Store(0)
	d.sim.ActivateSubscription("T-5000")
	before := len(paths(d.sim.Requests(), "POST", "/subscriptions/status"))
	status, body := d.Post("k-helpdesk-01", `{"conversation_id":"T-5000","message_id":"m1","text":"Доступа нет","context":{"ticket_id":"T-5000"}}`)
	if status != 200 || body["say"] != "Статус подписки сейчас: active." || asked.Load() != 1 ||
		len(paths(d.sim.Requests(), "POST", "/subscriptions/status")) != before+1 {
		t.Errorf("a fresh read: %d %v, %d model calls", status, body["say"], asked.Load())
	}
}
