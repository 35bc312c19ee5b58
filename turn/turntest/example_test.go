package turntest_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/turn"
	"github.com/arbiterhq/arbiter/turn/turntest"
)

// exampleT gives the kit what a test would, for an example that runs
// outside one: a temporary directory, and cleanups run at the end.
type exampleT struct {
	dir      string
	cleanups []func()
}

func (e *exampleT) Helper()           {}
func (e *exampleT) Fatal(args ...any) { panic(fmt.Sprint(args...)) }
func (e *exampleT) TempDir() string   { return e.dir }
func (e *exampleT) Cleanup(f func())  { e.cleanups = append(e.cleanups, f) }

func (e *exampleT) done() {
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
	os.RemoveAll(e.dir)
}

// An engine with one read tool, a scripted model and a fake clock: the
// model proposes the read, the engine runs it and answers with its
// result; a day later the journal holds the turn as it happened.
func Example() {
	dir, _ := os.MkdirTemp("", "turntest")
	t := &exampleT{dir: dir}
	defer t.done()

	weather, _ := tool.Func(tool.Spec{Name: "weather", Description: "Today's weather in a city.", Policy: tool.Policy{Risk: tool.RiskRead}},
		func(_ context.Context, _ tool.Call, in struct {
			City string `json:"city"`
		}) (string, error) {
			return "Sunny in " + in.City + ".", nil
		})
	tools, _ := tool.NewRegistry(weather)
	clock := turntest.NewClock()
	e := turntest.New(t, turn.Config{Tools: tools,
		Tenants: map[string]turn.Tenant{"t": {ID: "t", Language: "en", Roles: map[string]turn.Role{"user": {Tools: []string{"*"}}}}},
	}, turntest.WithClock(clock))

	e.Model.Push(turntest.Decide("weather", `{"city":"Riga"}`))
	user := chat.Identity{TenantID: "t", UserID: "u", Role: "user", Scopes: []chat.Scope{chat.ScopeRead}}
	out := e.Send(chat.Inbound{Identity: user, Chat: "c", Text: "weather in Riga?"})
	fmt.Println(out.Say)
	for _, x := range out.Executed {
		fmt.Println(x.Tool, x.Status)
	}

	clock.Advance(24 * time.Hour)
	var trace struct {
		Route string `json:"route"`
	}
	rec := e.Turn("t", out.TurnID, &trace)
	fmt.Println(rec.Status, trace.Route, clock.Now().Sub(turntest.Start))
	// Output:
	// Sunny in Riga.
	// weather ok
	// ok model 24h0m0s
}
