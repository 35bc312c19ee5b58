package sqlitestore

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/store"
)

// Arguments reach the driver as database/sql would pass them: driver
// types as they are, others converted (a named byte slice becomes bytes,
// an int an int64), and what cannot be converted is an error, not a panic.
func TestDriverValue(t *testing.T) {
	type note string
	for _, tt := range []struct {
		in, want any
	}{
		{nil, nil}, {int64(7), int64(7)}, {"s", "s"}, {[]byte("b"), []byte("b")}, {true, true}, {1.5, 1.5},
		{json.RawMessage(`{}`), []byte(`{}`)}, {7, int64(7)}, {uint16(9), int64(9)}, {note("n"), "n"},
	} {
		got, err := driverValue(tt.in)
		if err != nil {
			t.Errorf("driverValue(%#v): %v", tt.in, err)
			continue
		}
		if gb, ok := got.([]byte); ok {
			if wb, _ := tt.want.([]byte); string(gb) != string(wb) || wb == nil {
				t.Errorf("driverValue(%#v) = %#v, want %#v", tt.in, got, tt.want)
			}
			continue
		}
		if got != tt.want {
			t.Errorf("driverValue(%#v) = %#v (%T), want %#v (%T)", tt.in, got, got, tt.want, tt.want)
		}
	}
	if _, err := driverValue(struct{}{}); err == nil {
		t.Error("a struct converted without error")
	}
}

// The commit path's statements live on the store's connection: prepared
// once, they survive any number of commits and are closed with the store,
// which then commits nothing more.
func TestCommitStatementsLiveWithTheStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for i := range 3 {
		if err := s.AppendTurn(ctx, store.TurnRecord{TurnID: "t" + string(rune('0'+i)), Tenant: "x", Chat: "c", UserID: "u",
			Status: "ok", StartedAt: time.Now(), Trace: json.RawMessage(`{"n":1}`)}); err != nil {
			t.Fatal(err)
		}
	}
	on := s.cq.on
	if on == nil || s.cq.turnInsert == nil {
		t.Fatal("the commit statements were not prepared")
	}
	if err := s.AppendTurn(ctx, store.TurnRecord{TurnID: "t9", Tenant: "x", Chat: "c", UserID: "u", Status: "ok", StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if s.cq.on != on {
		t.Error("the statements were prepared again on another connection")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if s.cq.on != nil || s.cq.turnInsert != nil {
		t.Error("Close left the commit statements open")
	}
	if err := s.AppendTurn(ctx, store.TurnRecord{TurnID: "late", Tenant: "x"}); err == nil {
		t.Error("a closed store journaled a turn")
	}
	r, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got, err := r.GetTurn(ctx, "x", "t2"); err != nil || string(got.Trace) != `{"n":1}` {
		t.Errorf("after reopening: %+v, %v", got, err)
	}
}
