package turn

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/tool"
)

// The values of redacted fields are found at any depth, in arguments and
// results, and replaced wherever the record's JSON writes them — escaped
// characters included — by the same keyed hash; other keys' values and
// values too short to be secrets stay.
func TestRedactionReplacer(t *testing.T) {
	e := &Engine{cfg: Config{RedactionKey: []byte("k")}}
	fields := []string{"card_number", "email"}
	result := []byte(`{"payment":{"card_number":"4276 1600 0000 4821","email":"a&b<c>@пример.рф","amount":990,"short":{"email":"x"}},"list":[{"email":["d@e.f"]}]}`)
	secrets := secretValues(fields, []byte(`{"email":"d@e.f"}`), result)
	if len(secrets) != 4 { // the card, two e-mails, and d@e.f again from the arguments
		t.Fatalf("secrets %q", secrets)
	}
	record, _ := json.Marshal(map[string]any{"say": "Карта 4276 1600 0000 4821, почта a&b<c>@пример.рф, d@e.f", "result": json.RawMessage(result)})
	out := e.redactionReplacer(secrets).Replace(string(record))
	for _, secret := range []string{"4276", "a&b", `a\u0026b`, "пример", "d@e.f"} {
		if strings.Contains(out, secret) {
			t.Errorf("%q left in %s", secret, out)
		}
	}
	card := redactedValue(e.cfg.RedactionKey, "4276 1600 0000 4821")
	if strings.Count(out, card) != 2 || !strings.Contains(out, `"amount":990`) || !strings.Contains(out, `"email":"x"`) {
		t.Errorf("redacted record %s", out)
	}
	if other := redactedValue([]byte("another key"), "4276 1600 0000 4821"); other == card {
		t.Error("the hash does not depend on the key")
	}
}

// The record an observer sees is redacted field by field: the call's
// arguments, the router's proposed calls and the sections of modes from
// outside the engine among them.
func TestRedactTraceReachesTheModesRecords(t *testing.T) {
	reg, err := tool.NewRegistry(specTool{tool.Spec{
		Name:        "card_status",
		Description: "card",
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Policy:      tool.Policy{Risk: tool.RiskRead, Redact: []string{"card"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{cfg: Config{RedactionKey: []byte("k"), Tools: reg}}
	const card = "4111111111111111"
	s := &state{trace: Trace{
		Executed: []ExecutionTrace{{Tool: "card_status", Args: json.RawMessage(`{"card":"` + card + `"}`)}},
		Sections: Sections{
			"router": &struct{ Proposed []string }{[]string{`card_status {"card":"` + card + `"}`}},
			"tally":  json.RawMessage(`{"last":"` + card + `"}`),
		},
	}}
	if e.redactTrace(s) == nil {
		t.Fatal("no secret found in the executed call")
	}
	var router struct{ Proposed []string }
	if !s.trace.Section("router", &router) || len(router.Proposed) != 1 {
		t.Fatalf("router section %+v", s.trace.Sections["router"])
	}
	var tally json.RawMessage
	s.trace.Section("tally", &tally)
	for what, text := range map[string]string{"args": string(s.trace.Executed[0].Args), "router": router.Proposed[0], "tally": string(tally)} {
		if strings.Contains(text, card) || !strings.Contains(text, "hmac:") {
			t.Errorf("%s: %s, want the card hashed", what, text)
		}
	}
}
