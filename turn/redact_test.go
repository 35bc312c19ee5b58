package turn

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/store/sqlitestore"
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
	if e.redactTrace(&s.trace) == nil {
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

// The journal's hash of a call's arguments is keyed for a tool that
// redacts fields — a guess of a card number cannot be tested against it —
// and plain SHA-256 for any other; and the record of a turn a crash
// interrupted hashes the redacted values of the calls it began, as any
// record does.
func TestRedactedCallsInTheJournal(t *testing.T) {
	schema := json.RawMessage(`{"type":"object"}`)
	reg, err := tool.NewRegistry(
		specTool{tool.Spec{Name: "card_status", Description: "card", InputSchema: schema, Policy: tool.Policy{Risk: tool.RiskWriteSafe, Redact: []string{"card"}}}},
		specTool{tool.Spec{Name: "add_note", Description: "note", InputSchema: schema, Policy: tool.Policy{Risk: tool.RiskWriteSafe}}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "turn.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e, err := New(Config{State: st, Locker: st, Journal: st, Tools: reg, Modes: Modes{"only": slotKeeper{}}, RedactionKey: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	const card = "4111111111111111"
	cardArgs, noteArgs := []byte(`{"card":"`+card+`"}`), []byte(`{"text":"hello"}`)
	plain := func(args []byte) string { d := sha256.Sum256(args); return hex.EncodeToString(d[:]) }

	s := &state{}
	s.key, s.id, s.interrupted, s.interruptedAt = chat.ConversationKey{Tenant: "t", Chat: "c", User: "u"}, "turn-2", "turn-1", time.Now()
	s.unfinished = []store.ExecutionRecord{
		{Tool: "card_status", Args: cardArgs, IdempotencyKey: "k1", State: store.ExecStarted},
		{Tool: "add_note", Args: noteArgs, IdempotencyKey: "k2", State: store.ExecStarted},
	}
	e.journalInterrupted(context.Background(), s)
	rec, err := st.GetTurn(context.Background(), "t", "turn-1")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(rec.Trace), card) || !strings.Contains(string(rec.Trace), "hmac:") || !strings.Contains(string(rec.Trace), "hello") {
		t.Errorf("the interrupted turn's record %s, want the card hashed and the note as it was", rec.Trace)
	}
	if len(rec.ToolCalls) != 2 {
		t.Fatalf("tool calls %+v", rec.ToolCalls)
	}
	if h := rec.ToolCalls[0].ArgsHash; !strings.HasPrefix(h, "hmac:") || strings.Contains(h, plain(cardArgs)) {
		t.Errorf("a redacting tool's args_hash %q, want it keyed", h)
	}
	if h := rec.ToolCalls[1].ArgsHash; h != plain(noteArgs) {
		t.Errorf("a plain tool's args_hash %q, want the SHA-256 of its arguments", h)
	}
	other := &Engine{cfg: Config{RedactionKey: []byte("another key")}}
	if entry, _ := reg.Lookup("card_status"); other.auditHash(entry.Spec, cardArgs) == e.auditHash(entry.Spec, cardArgs) {
		t.Error("the keyed hash does not depend on the key")
	}
}
