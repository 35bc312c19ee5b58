package taskboard

import (
	"strings"
	"testing"
	"time"
)

// The cached open cards and their renderings must follow every write.
func TestCacheFollowsWrites(t *testing.T) {
	b := newBoard(t)
	ctx := t.Context()
	now := time.Now()
	contextHas := func(s string) bool {
		t.Helper()
		sections, err := b.LiveContext(ctx, dmitry, now)
		if err != nil {
			t.Fatal(err)
		}
		for _, sec := range sections {
			for _, l := range sec.Lines {
				if strings.Contains(l, s) {
					return true
				}
			}
		}
		return false
	}
	listHas := func(s string) bool {
		t.Helper()
		return strings.Contains(run(t, b, ActionListMine, dmitry, "", `{}`).Text, s)
	}
	if contextHas("Первая") || listHas("Первая") {
		t.Fatal("empty board shows a card")
	}
	id := create(t, b, dmitry, `{"title":"Первая","assignee":"me"}`)
	if !contextHas("Первая") || !listHas("Первая") {
		t.Fatal("a created card is missing from the cached views")
	}
	run(t, b, ActionUpdate, dmitry, "", `{"card":"`+id+`","title":"Переименована"}`)
	if contextHas("«Первая»") || !contextHas("Переименована") || !listHas("Переименована") {
		t.Fatal("an update is not reflected")
	}
	mustStatus(t, run(t, b, ActionComplete, dmitry, "", `{"card":"`+id+`"}`), "ok")
	if contextHas("Переименована") || listHas("Переименована") {
		t.Fatal("a completed card still shows as open")
	}
}
