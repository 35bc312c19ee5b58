package google

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/calendar"
)

// The fixtures of the calendar package's own tests, for the same acme team
// on this backend.

// testNow is Tuesday 1 December 2026, 10:30 in Moscow, 08:30 in Berlin.
var testNow = time.Date(2026, 12, 1, 7, 30, 0, 0, time.UTC)

var (
	dmitry = tool.Caller{TenantID: "acme", UserID: "u1", Name: "Дмитрий Иванов", Language: "ru", Timezone: "Europe/Moscow"}
	olga   = tool.Caller{TenantID: "acme", UserID: "u3", Name: "Ольга Смирнова", Language: "en", Timezone: "Europe/Berlin"}
)

func testMembers(tenant string) []calendar.Member {
	if tenant != "acme" {
		return nil
	}
	return []calendar.Member{
		{ID: "u1", Name: "Дмитрий Иванов", Timezone: "Europe/Moscow", Email: "dmitry@acme.test"},
		{ID: "u2", Name: "Дмитрий Петров", Timezone: "Europe/Moscow", Email: "petrov@acme.test"},
		{ID: "u3", Name: "Ольга Смирнова", Timezone: "Europe/Berlin", Email: "olga@acme.test"},
	}
}

func newCalendar(t *testing.T, backend calendar.Backend) *calendar.Calendar {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "calendar.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c, err := calendar.New(calendar.Config{Backend: backend, DB: db, Members: testMembers,
		TenantTimezone: func(string) string { return "Europe/Moscow" }, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func toolNamed(t *testing.T, c *calendar.Calendar, name string) tool.Tool {
	t.Helper()
	for _, tl := range c.Tools() {
		if tl.Spec().Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}

func run(t *testing.T, c *calendar.Calendar, name string, caller tool.Caller, key, args string) tool.Result {
	t.Helper()
	res, err := toolNamed(t, c, name).Call(context.Background(), tool.Call{Caller: caller, Args: json.RawMessage(args), IdempotencyKey: key, Now: testNow})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func wantStatus(t *testing.T, res tool.Result, want tool.Status) {
	t.Helper()
	if res.Status != want {
		t.Fatalf("status %s, want %s: %+v", res.Status, want, res)
	}
}

func decode[T any](t *testing.T, res tool.Result) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(res.Data, &v); err != nil {
		t.Fatalf("data %s: %v", res.Data, err)
	}
	return v
}

// createdData is create_event's answer, as far as these tests read it.
type createdData struct {
	Event struct {
		ID           string   `json:"id"`
		StartUTC     string   `json:"startUtc"`
		When         string   `json:"when"`
		Participants []string `json:"participants"`
		URL          string   `json:"url"`
	} `json:"event"`
}
