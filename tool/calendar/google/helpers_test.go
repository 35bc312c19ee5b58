package google

import (
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/calendar"
	"github.com/arbiterhq/arbiter/tool/internal/sqlitetest"
	"github.com/arbiterhq/arbiter/tool/tooltest"
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
	c, err := calendar.New(calendar.Config{Backend: backend, DB: sqlitetest.Open(t, ""), Members: testMembers,
		TenantTimezone: func(string) string { return "Europe/Moscow" }, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func toolNamed(t *testing.T, c *calendar.Calendar, name string) tool.Tool {
	return tooltest.Named(t, c.Tools(), name)
}

func run(t *testing.T, c *calendar.Calendar, name string, caller tool.Caller, key, args string) tool.Result {
	t.Helper()
	return tooltest.MustCall(t, toolNamed(t, c, name), caller, key, args, testNow)
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
