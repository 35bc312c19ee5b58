package turn

import (
	"encoding/json"
	"strings"
	"testing"
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
