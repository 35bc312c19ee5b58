package questions

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/chat"
)

var yesNo = chat.Question{Text: "Allow?", Choices: []chat.Button{{Label: "Yes", Value: "accept"}, {Label: "No", Value: "decline"}}}

// ask runs Ask in the background and returns the shown id and the result.
func ask(t *testing.T, b *Board, ctx context.Context, owner string, q chat.Question) (string, <-chan error, *chat.Answer) {
	t.Helper()
	shown := make(chan string, 1)
	done := make(chan error, 1)
	var got chat.Answer
	go func() {
		a, err := b.Ask(ctx, owner, "", q, func(id string) error { shown <- id; return nil })
		got = a
		done <- err
	}()
	select {
	case id := <-shown:
		return id, done, &got
	case <-time.After(5 * time.Second):
		t.Fatal("the question was never shown")
	}
	return "", nil, nil
}

func TestAnswerReachesTheAsker(t *testing.T) {
	b := New(nil)
	id, done, got := ask(t, b, context.Background(), "c:1", yesNo)
	if l := b.List("c:1", nil); len(l) != 1 || l[0].ID != id || len(b.List("c:2", nil)) != 0 {
		t.Fatalf("List = %+v", l)
	}
	if v, ok := b.ChoiceAt(id, 1); !ok || v != "decline" {
		t.Errorf("ChoiceAt(1) = %q, %v", v, ok)
	}
	if _, ok := b.ChoiceAt(id, 2); ok {
		t.Error("ChoiceAt past the choices")
	}
	for _, tc := range []struct {
		owner string
		a     chat.Answer
		want  error
	}{
		{"c:2", chat.Answer{Choice: "accept"}, ErrNotYours},
		{"c:1", chat.Answer{Choice: "maybe"}, ErrInvalid},
		{"c:1", chat.Answer{Text: "free words"}, ErrInvalid},
		{"c:1", chat.Answer{Choice: "accept", Text: "and words"}, ErrInvalid},
	} {
		if err := b.Answer(id, tc.owner, nil, tc.a); !errors.Is(err, tc.want) {
			t.Errorf("Answer(%s, %+v) = %v, want %v", tc.owner, tc.a, err, tc.want)
		}
	}
	if err := b.Answer(id, "c:1", nil, chat.Answer{Choice: "decline"}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || got.Choice != "decline" {
		t.Fatalf("Ask = %+v, %v", got, err)
	}
	if err := b.Answer(id, "c:1", nil, chat.Answer{Choice: "accept"}); !errors.Is(err, ErrUnknown) {
		t.Errorf("a second answer = %v", err)
	}
	if len(b.List("c:1", nil)) != 0 {
		t.Error("an answered question is still open")
	}
}

func TestTypedAnswersAndTimeouts(t *testing.T) {
	b := New(nil)
	ctx, cancel := context.WithCancel(context.Background())
	free := chat.Question{Text: "Name?", FreeText: true, Choices: []chat.Button{{Label: "Cancel", Value: "cancel"}}}
	id, done, got := ask(t, b, ctx, "c:1", free)
	if tid, ok := b.Typing("c:1", nil); !ok || tid != id {
		t.Fatalf("Typing = %q, %v", tid, ok)
	}
	if _, ok := b.Typing("c:2", nil); ok {
		t.Error("another user's typing goes to this question")
	}
	if err := b.Answer(id, "c:1", nil, chat.Answer{Text: "Дмитрий"}); err != nil || <-done != nil || got.Text != "Дмитрий" {
		t.Fatalf("typed answer: %v %+v", err, got)
	}

	_, done, _ = ask(t, b, ctx, "c:1", yesNo)
	cancel()
	if _, err := b.Ask(ctx, "c:1", "", yesNo, func(string) error { t.Error("shown after its wait ended"); return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("Ask with an ended ctx = %v", err)
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Ask after ctx ended = %v", err)
	}
	if len(b.List("c:1", nil)) != 0 {
		t.Error("a question whose wait ended is still open")
	}
}

func TestOpenQuestionsAreBounded(t *testing.T) {
	b := New(nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < maxOpen; i++ {
		_, done, _ := ask(t, b, ctx, "c:1", yesNo)
		wg.Add(1)
		go func() { defer wg.Done(); <-done }()
	}
	if _, err := b.Ask(ctx, "c:1", "", yesNo, func(string) error { t.Error("shown past the bound"); return nil }); !errors.Is(err, ErrTooMany) {
		t.Errorf("Ask past the bound = %v", err)
	}
	cancel()
	wg.Wait()
}

func TestAnswerNeedsTheCallsScope(t *testing.T) {
	b := New(nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := yesNo
	q.Scope = chat.ScopeWriteFull
	id, done, got := ask(t, b, ctx, "c:1", q)
	readOnly := []chat.Scope{chat.ScopeRead}
	full := []chat.Scope{chat.ScopeRead, chat.ScopeWriteFull}
	if l := b.List("c:1", readOnly); len(l) != 0 {
		t.Errorf("a read-only key lists %v", l)
	}
	if err := b.Answer(id, "c:1", readOnly, chat.Answer{Choice: "accept"}); !errors.Is(err, ErrNotYours) {
		t.Errorf("a read-only key's answer = %v, want ErrNotYours", err)
	}
	if l := b.List("c:1", full); len(l) != 1 {
		t.Errorf("the full key lists %v", l)
	}
	if err := b.Answer(id, "c:1", full, chat.Answer{Choice: "accept"}); err != nil || <-done != nil || got.Choice != "accept" {
		t.Errorf("the full key's answer = %v (%+v)", err, got)
	}
}
