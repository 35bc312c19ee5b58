package storetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/store"
)

var channelTests = []subtest{
	{name: "AcceptDedupe", run: testChannelAcceptDedupe},
	{name: "AcceptRace", run: testChannelAcceptRace},
	{name: "PendingOrder", run: testChannelPendingOrder},
	{name: "Done", run: testChannelDone},
	{name: "DedupeWindow", run: testChannelDedupeWindow},
	{name: "ChannelsSeparate", run: testChannelsSeparate},
	{name: "PayloadRoundTrip", run: testChannelPayload},
}

// needInbox skips a subtest of a backend without a channel inbox.
func needInbox(t *testing.T, e env) {
	t.Helper()
	if e.in == nil {
		t.Skip("the backend has no channel inbox")
	}
}

// channelItem returns an item of channel with the given id; its payload
// names both, its order key groups items by chat, and its time is now.
func channelItem(channel, id string, now time.Time) store.ChannelItem {
	return store.ChannelItem{
		Channel: channel, ID: id, OrderKey: "chat-" + strings.SplitN(id, ":", 2)[0],
		Payload:    json.RawMessage(fmt.Sprintf(`{"channel": %q, "update": %q}`, channel, id)),
		AcceptedAt: now,
	}
}

func mustAccept(t *testing.T, e env, item store.ChannelItem) bool {
	t.Helper()
	fresh, err := e.in.Accept(t.Context(), item)
	if err != nil {
		t.Fatalf("Accept(%s %s): %v", item.Channel, item.ID, err)
	}
	return fresh
}

func mustPending(t *testing.T, e env, channel string, n int) []store.ChannelItem {
	t.Helper()
	items, err := e.in.Pending(t.Context(), channel, n)
	if err != nil {
		t.Fatalf("Pending(%s, %d): %v", channel, n, err)
	}
	return items
}

func mustDone(t *testing.T, e env, channel, id string) {
	t.Helper()
	if err := e.in.Done(t.Context(), channel, id); err != nil {
		t.Fatalf("Done(%s, %s): %v", channel, id, err)
	}
}

// checkItem compares an item Pending returned with the one accepted.
func checkItem(t *testing.T, what string, got, want store.ChannelItem) {
	t.Helper()
	if got.Channel != want.Channel || got.ID != want.ID || got.OrderKey != want.OrderKey ||
		!bytes.Equal(got.Payload, want.Payload) || !got.AcceptedAt.Equal(want.AcceptedAt) {
		t.Errorf("%s: item = %+v (payload %q), want %+v (payload %q)", what, got, got.Payload, want, want.Payload)
	}
}

// ids lists the ids of items, in order.
func ids(items []store.ChannelItem) []string {
	return idsOf(items, func(it store.ChannelItem) string { return it.ID })
}

func wantIDs(t *testing.T, what string, items []store.ChannelItem, want ...string) {
	t.Helper()
	wantIDList(t, what+": pending ids", ids(items), want)
}

func testChannelAcceptDedupe(t *testing.T, e env) {
	needInbox(t, e)
	now := e.clock.Now()
	first := channelItem("telegram", "100:1", now)
	if !mustAccept(t, e, first) {
		t.Fatal("first Accept of an id: fresh=false, want true")
	}
	e.clock.Advance(time.Second)
	again := channelItem("telegram", "100:1", e.clock.Now())
	again.OrderKey, again.Payload = "chat-other", json.RawMessage(`{"redelivered":true}`)
	if mustAccept(t, e, again) {
		t.Error("second Accept of an id: fresh=true, want false")
	}
	items := mustPending(t, e, "telegram", 10)
	if len(items) != 1 {
		t.Fatalf("Pending after a duplicate Accept = %q, want the one item", ids(items))
	}
	checkItem(t, "item after a duplicate Accept", items[0], first)
}

func testChannelAcceptRace(t *testing.T, e env) {
	needInbox(t, e)
	const n = 16
	now := e.clock.Now()
	var (
		mu     sync.Mutex
		winner = -1
		wins   int
	)
	atOnce(n, func(i int) {
		item := channelItem("telegram", "100:1", now)
		item.Payload = json.RawMessage(fmt.Sprintf(`{"copy":%d}`, i))
		fresh, err := e.in.Accept(t.Context(), item)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			t.Errorf("Accept %d: %v", i, err)
			return
		}
		if fresh {
			wins++
			winner = i
		}
	})
	if wins != 1 {
		t.Fatalf("%d concurrent Accepts of one id: %d fresh, want exactly 1", n, wins)
	}
	items := mustPending(t, e, "telegram", n)
	if len(items) != 1 {
		t.Fatalf("Pending after concurrent Accepts of one id = %q, want one item", ids(items))
	}
	if want := fmt.Sprintf(`{"copy":%d}`, winner); string(items[0].Payload) != want {
		t.Errorf("pending payload = %s, want the fresh Accept's %s", items[0].Payload, want)
	}
}

// testChannelPendingOrder accepts items while the clock runs backwards:
// Pending must follow the order of acceptance, not the items' times.
func testChannelPendingOrder(t *testing.T, e env) {
	needInbox(t, e)
	want := []string{"7:3", "5:1", "7:1", "6:9", "5:2"}
	accepted := map[string]store.ChannelItem{}
	for _, id := range want {
		e.clock.Advance(-time.Minute)
		item := channelItem("telegram", id, e.clock.Now())
		accepted[id] = item
		if !mustAccept(t, e, item) {
			t.Fatalf("Accept(%s): fresh=false, want true", id)
		}
	}
	items := mustPending(t, e, "telegram", 10)
	wantIDs(t, "Pending(10)", items, want...)
	for _, it := range items {
		checkItem(t, "pending item "+it.ID, it, accepted[it.ID])
	}
	wantIDs(t, "Pending(3)", mustPending(t, e, "telegram", 3), want[:3]...)
	wantIDs(t, "Pending(1)", mustPending(t, e, "telegram", 1), want[0])
	wantIDs(t, "Pending(0)", mustPending(t, e, "telegram", 0))
	wantIDs(t, "Pending(-1)", mustPending(t, e, "telegram", -1))

	// Marking items done keeps the others in order; a later item goes last.
	mustDone(t, e, "telegram", "7:3")
	mustDone(t, e, "telegram", "6:9")
	e.clock.Advance(-time.Hour)
	if !mustAccept(t, e, channelItem("telegram", "1:1", e.clock.Now())) {
		t.Fatal("Accept(1:1): fresh=false, want true")
	}
	wantIDs(t, "Pending after Done and a new item", mustPending(t, e, "telegram", 10), "5:1", "7:1", "5:2", "1:1")
	wantIDs(t, "Pending(2) after Done", mustPending(t, e, "telegram", 2), "5:1", "7:1")
}

func testChannelDone(t *testing.T, e env) {
	needInbox(t, e)
	now := e.clock.Now()
	for _, id := range []string{"1:1", "1:2", "1:3"} {
		mustAccept(t, e, channelItem("telegram", id, now))
	}
	mustDone(t, e, "telegram", "1:2")
	wantIDs(t, "Pending after Done(1:2)", mustPending(t, e, "telegram", 10), "1:1", "1:3")
	if mustAccept(t, e, channelItem("telegram", "1:2", now)) {
		t.Error("Accept of a done id: fresh=true, want false (the id stays deduplicated)")
	}
	wantIDs(t, "Pending after a done id was redelivered", mustPending(t, e, "telegram", 10), "1:1", "1:3")

	// Harmless: twice, unknown ids, another channel's id.
	mustDone(t, e, "telegram", "1:2")
	mustDone(t, e, "telegram", "9:9")
	mustDone(t, e, "other", "1:1")
	mustDone(t, e, "", "")
	wantIDs(t, "Pending after harmless Dones", mustPending(t, e, "telegram", 10), "1:1", "1:3")
	mustDone(t, e, "telegram", "1:1")
	mustDone(t, e, "telegram", "1:3")
	wantIDs(t, "Pending after every item is done", mustPending(t, e, "telegram", 10))
}

// testChannelDedupeWindow: ids are remembered, done or not, as the clock
// moves up to the 24h window.
func testChannelDedupeWindow(t *testing.T, e env) {
	needInbox(t, e)
	start := e.clock.Now()
	mustAccept(t, e, channelItem("telegram", "1:done", start))
	mustAccept(t, e, channelItem("telegram", "1:open", start))
	mustDone(t, e, "telegram", "1:done")
	for _, step := range []time.Duration{time.Hour, 22 * time.Hour, time.Hour} {
		e.clock.Advance(step)
		// Give a backend with lazy cleanup its chances at the new time.
		mustAccept(t, e, channelItem("telegram", fmt.Sprintf("2:%d", e.clock.Now().Unix()), e.clock.Now()))
		if e.s != nil {
			touch(t, e)
		}
		for _, id := range []string{"1:done", "1:open"} {
			if mustAccept(t, e, channelItem("telegram", id, e.clock.Now())) {
				t.Fatalf("%v after acceptance, %s was accepted again: the inbox forgot it", e.clock.Now().Sub(start), id)
			}
		}
		items := mustPending(t, e, "telegram", 100)
		if len(items) == 0 || items[0].ID != "1:open" || !items[0].AcceptedAt.Equal(start) {
			t.Fatalf("%v after acceptance, Pending = %q; want 1:open first, as accepted", e.clock.Now().Sub(start), ids(items))
		}
	}
}

func testChannelsSeparate(t *testing.T, e env) {
	needInbox(t, e)
	now := e.clock.Now()
	for _, ch := range []string{"telegram", "slack", "telegram2"} {
		for _, id := range []string{"1:1", "1:2"} {
			if !mustAccept(t, e, channelItem(ch, id, now)) {
				t.Errorf("Accept(%s %s): fresh=false; an id of another channel must not count", ch, id)
			}
		}
	}
	mustDone(t, e, "slack", "1:1")
	for _, ch := range []string{"telegram", "telegram2"} {
		items := mustPending(t, e, ch, 10)
		wantIDs(t, "Pending("+ch+")", items, "1:1", "1:2")
		for _, it := range items {
			checkItem(t, "item of "+ch, it, channelItem(ch, it.ID, now))
		}
	}
	wantIDs(t, "Pending(slack)", mustPending(t, e, "slack", 10), "1:2")
	wantIDs(t, "Pending of an unknown channel", mustPending(t, e, "teams", 10))
	if mustAccept(t, e, channelItem("slack", "1:1", now)) {
		t.Error("Accept of slack's done id: fresh=true, want false")
	}
}

func testChannelPayload(t *testing.T, e env) {
	needInbox(t, e)
	now := e.clock.Now()
	big := make([]byte, 0, 200<<10)
	big = append(big, `{"text":"`...)
	for len(big) < 200<<10 {
		big = append(big, "длинный текст "...)
	}
	big = append(big, `"}`...)
	items := []store.ChannelItem{
		{Channel: "telegram", ID: "1:spaces", OrderKey: "1", AcceptedAt: now,
			Payload: json.RawMessage("{ \"b\" : [1, 2.50, 1e3],\n\t\"a\": \"\\u00e9\\n\" }")},
		{Channel: "telegram", ID: "2:unicode %x/{}", OrderKey: "-100/{2}%", AcceptedAt: now.Add(-time.Hour),
			Payload: json.RawMessage(`"Привет, \"мир\" \\ 🌍"`)},
		{Channel: "telegram", ID: "3:big", OrderKey: "3", AcceptedAt: now.Add(time.Hour), Payload: big},
		{Channel: "telegram", ID: "4:empty", OrderKey: "", AcceptedAt: now},
	}
	for _, it := range items {
		if !mustAccept(t, e, it) {
			t.Fatalf("Accept(%s): fresh=false, want true", it.ID)
		}
	}
	// A zero AcceptedAt is the clock's time.
	e.clock.Advance(time.Minute)
	untimed := store.ChannelItem{Channel: "telegram", ID: "5:untimed", OrderKey: "5", Payload: json.RawMessage(`{}`)}
	if !mustAccept(t, e, untimed) {
		t.Fatal("Accept(5:untimed): fresh=false, want true")
	}
	untimed.AcceptedAt = e.clock.Now()
	items = append(items, untimed)

	got := mustPending(t, e, "telegram", 10)
	if len(got) != len(items) {
		t.Fatalf("Pending = %q, want %d items", ids(got), len(items))
	}
	for i := range items {
		checkItem(t, "item "+items[i].ID, got[i], items[i])
	}
}
