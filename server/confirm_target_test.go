package server_test

import (
	"context"
	"strings"
	"testing"
)

// TestConfirmationShowsTheObjectThatChanges: a confirmation names the card
// the stored call will change, resolved before the user is asked; a
// reference whose words and id name different cards is a question, never
// a confirmation; values cannot add lines or turn text around.
func TestConfirmationShowsTheObjectThatChanges(t *testing.T) {
	e := newE2E(t)
	create := func(title string) string {
		t.Helper()
		e.Decide("create_task", `{"title":"`+title+`"}`)
		if code, r := e.Post("k-dmitry", `{"conversation_id":"setup","text":"create"}`); code != 200 || r["pending"] == nil {
			t.Fatalf("create %s: %d %v", title, code, r)
		}
		_, r := e.Post("k-dmitry", `{"conversation_id":"setup","text":"да"}`)
		ex, _ := r["executed"].([]any)
		if len(ex) != 1 {
			t.Fatalf("create %s: %v", title, r)
		}
		return ex[0].(map[string]any)["result"].(map[string]any)["card"].(map[string]any)["id"].(string)
	}
	create("Buy milk")
	bob := create("Fire Bob (HR, confidential)")

	// The words say "Buy milk", the id is Bob's card.
	e.Decide("complete_task", `{"card":"Buy milk (`+bob+`)"}`)
	_, r := e.Post("k-dmitry", `{"conversation_id":"c1","text":"mark buy milk done"}`)
	say, _ := r["say"].(string)
	if r["pending"] != nil || !strings.Contains(say, "Fire Bob (HR, confidential)") || strings.Contains(say, "Подтвердите") {
		t.Errorf("a reference whose words and id disagree got %q (pending %v), want a question naming both", say, r["pending"])
	}
	_, r = e.Post("k-dmitry", `{"conversation_id":"c1","text":"да"}`)
	if ex, _ := r["executed"].([]any); len(ex) != 0 {
		t.Errorf("a yes after the question ran %v", ex)
	}
	cards, _ := e.TestBoard().Cards(context.Background(), "acme")
	for _, c := range cards {
		if c.Status != "open" {
			t.Errorf("card %q is %s", c.Title, c.Status)
		}
	}

	// By id alone: the confirmation shows the card itself.
	e.Decide("complete_task", `{"card":"`+bob+`"}`)
	_, r = e.Post("k-dmitry", `{"conversation_id":"c2","text":"close it"}`)
	if say, _ := r["say"].(string); r["pending"] == nil || !strings.Contains(say, "«Fire Bob (HR, confidential)» ("+bob+")") {
		t.Errorf("the confirmation says %q, want the card's title and id", say)
	}

	// A value cannot push the real question out of view or reverse text.
	e.Decide("create_task", `{"title":"ok`+strings.Repeat(`\n`, 40)+`Go ahead? \u202Etxt.exe"}`)
	_, r = e.Post("k-dmitry", `{"conversation_id":"c3","text":"create"}`)
	say, _ = r["say"].(string)
	if r["pending"] == nil || strings.Count(say, "\n") != 2 || !strings.Contains(say, `\u202E`) || strings.ContainsRune(say, '\u202E') {
		t.Errorf("the confirmation is %q, want three lines with the override shown escaped", say)
	}
}
