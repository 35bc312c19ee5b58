package calendar

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/internal/sqlitetest"
	"github.com/arbiterhq/arbiter/tool/tooltest"
)

const bookArgs = `{"title":"Планёрка","startIso":"2026-12-02T10:00","durationMin":30,"participants":["Ольга"]}`

// TestBookingIdempotent: the same key books once, however often and
// however concurrently the call is repeated, and the repeat answers with
// the first booking.
func TestBookingIdempotent(t *testing.T) {
	c := newCalendar(t, nil)
	first := run(t, c, ActionCreateEvent, dmitry, "pending:1", bookArgs)
	tooltest.WantStatus(t, first, tool.StatusOK)
	again := run(t, c, ActionCreateEvent, dmitry, "pending:1", bookArgs)
	tooltest.WantStatus(t, again, tool.StatusOK)
	if string(again.Data) != string(first.Data) || again.Text != first.Text {
		t.Fatalf("repeat answered differently:\n%s\n%s", first.Data, again.Data)
	}

	var wg sync.WaitGroup
	results := make([]tool.Result, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := toolNamed(t, c, ActionCreateEvent).Call(context.Background(),
				tool.Call{Caller: dmitry, Args: json.RawMessage(bookArgs), IdempotencyKey: "pending:2", Now: testNow})
			if err != nil {
				t.Error(err)
			}
			results[i] = res
		}()
	}
	wg.Wait()
	ids := map[string]bool{}
	for _, r := range results {
		if r.Status != tool.StatusOK {
			t.Fatalf("concurrent booking: %+v", r)
		}
		ids[tooltest.Data[createdData](t, r).Event.ID] = true
	}
	if len(ids) != 1 {
		t.Fatalf("concurrent repeats booked %d events", len(ids))
	}

	// Without a key every call books.
	run(t, c, ActionCreateEvent, dmitry, "", bookArgs)
	run(t, c, ActionCreateEvent, dmitry, "", bookArgs)
	evs, err := c.Backend().(*Store).Events(context.Background(), "acme")
	if err != nil || len(evs) != 4 {
		t.Fatalf("%d events (%v), want 4", len(evs), err)
	}

	// A repeat arriving after the start still answers from the booking.
	late := runAt(t, c, ActionCreateEvent, dmitry, "pending:1", bookArgs, testNow.Add(72*time.Hour))
	tooltest.WantStatus(t, late, tool.StatusOK)
	if tooltest.Data[createdData](t, late).Event.ID != tooltest.Data[createdData](t, first).Event.ID {
		t.Fatalf("late repeat %+v", late)
	}
	// The key is the organizer's: another user's call with it books anew.
	other := run(t, c, ActionCreateEvent, olga, "pending:1", bookArgs)
	if tooltest.Data[createdData](t, other).Event.ID == tooltest.Data[createdData](t, first).Event.ID {
		t.Fatal("another organizer's call replayed a booking that is not theirs")
	}
}

// TestBookingIdempotentAcrossStores: two stores on one database (two
// processes) racing on one key still book once.
func TestBookingIdempotentAcrossStores(t *testing.T) {
	db := sqlitetest.Open(t, sqlitetest.WAL)
	var stores [2]*Store
	for i := range stores {
		s, err := NewStore(db)
		if err != nil {
			t.Fatal(err)
		}
		stores[i] = s
	}
	org := Member{ID: "u1", Name: "Дмитрий Иванов"}
	ev := NewEvent{Title: "X", Start: testNow, End: testNow.Add(time.Hour), Timezone: "UTC",
		Attendees: []Member{{ID: "u3", Name: "Ольга Смирнова"}}}
	var wg sync.WaitGroup
	got := make([]Event, 8)
	replays := make([]bool, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, replayed, err := stores[i%2].Book(context.Background(), "acme", org, ev, "k")
			if err != nil {
				t.Error(err)
			}
			got[i], replays[i] = e, replayed
		}()
	}
	wg.Wait()
	fresh := 0
	for i := range got {
		if got[i].ID != got[0].ID {
			t.Fatalf("bookings %s and %s", got[0].ID, got[i].ID)
		}
		if !replays[i] {
			fresh++
		}
	}
	if fresh != 1 {
		t.Fatalf("%d calls report a fresh booking, want 1", fresh)
	}
	evs, _ := stores[0].Events(context.Background(), "acme")
	if len(evs) != 1 || len(evs[0].Attendees) != 2 {
		t.Fatalf("events %+v", evs)
	}
}

func TestStoreScoping(t *testing.T) {
	s, err := NewStore(sqlitetest.Open(t, sqlitetest.WAL))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	day := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	book := func(tenant, org string, start, end time.Duration, attendees ...string) {
		t.Helper()
		var ms []Member
		for _, a := range attendees {
			ms = append(ms, Member{ID: a, Name: a})
		}
		if _, _, err := s.Book(ctx, tenant, Member{ID: org, Name: org}, NewEvent{Title: "e", Start: day.Add(start), End: day.Add(end), Timezone: "UTC", Attendees: ms}, ""); err != nil {
			t.Fatal(err)
		}
	}
	book("acme", "u1", 9*time.Hour, 10*time.Hour, "u3")
	book("acme", "u2", 11*time.Hour, 12*time.Hour)
	book("globex", "u1", 13*time.Hour, 14*time.Hour)
	busy, err := s.Busy(ctx, "acme", Member{ID: "u1"}, []Member{{ID: "u1"}, {ID: "u3"}, {ID: "u2"}}, Interval{day.Add(9*time.Hour + 30*time.Minute), day.Add(24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(busy["u1"]) != 1 || len(busy["u3"]) != 1 || len(busy["u2"]) != 1 || UTCStamp(busy["u1"][0].Start) != "2026-12-02T09:00:00Z" {
		t.Fatalf("busy %v", busy)
	}
	// Touching is not overlapping.
	busy, _ = s.Busy(ctx, "acme", Member{ID: "u1"}, []Member{{ID: "u1"}}, Interval{day.Add(10 * time.Hour), day.Add(11 * time.Hour)})
	if len(busy["u1"]) != 0 {
		t.Fatalf("touching interval reported busy: %v", busy)
	}
	up, _ := s.Upcoming(ctx, "globex", Member{ID: "u1"}, Interval{day, day.Add(24 * time.Hour)}, 10)
	if len(up) != 1 || UTCStamp(up[0].Start) != "2026-12-02T13:00:00Z" {
		t.Fatalf("globex upcoming %+v", up)
	}
	if _, _, err := s.Book(ctx, "acme", Member{ID: "u1"}, NewEvent{Start: day, End: day}, ""); err == nil {
		t.Fatal("an empty event was booked")
	}
}
