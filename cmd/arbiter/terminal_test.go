package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/chat"
)

func TestTerminalAsks(t *testing.T) {
	out := &lockedBuffer{}
	term := newTerminal(strings.NewReader("maybe\n2\nОтчёт\nnext message\n"), out)
	defer term.close()
	q := chat.Question{Text: "Разрешить?", Choices: []chat.Button{{Label: "Да", Value: "accept"}, {Label: "Нет", Value: "decline"}}}
	ctx := context.Background()
	if a, err := term.Ask(ctx, q); err != nil || a.Choice != "decline" {
		t.Fatalf("Ask = %+v, %v; want the second choice after a retry", a, err)
	}
	free := chat.Question{Text: "Название?", FreeText: true}
	if a, err := term.Ask(ctx, free); err != nil || a.Text != "Отчёт" {
		t.Fatalf("typed Ask = %+v, %v", a, err)
	}
	term.Progress(chat.Progress{Step: "Отчёт", Done: 1, Total: 4, Message: "шаг 1"})
	if line, ok := term.readLine(); !ok || line != "next message" {
		t.Errorf("the next line = %q, %v", line, ok)
	}
	for _, want := range []string{"? Разрешить?", "[2] Нет", "type a number from 1 to 2", "(or type the answer)", "… Отчёт: 25% — шаг 1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := term.Ask(short, q); err == nil {
		t.Error("Ask at end of input answered")
	}
}
