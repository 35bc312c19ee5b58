package storetest

import (
	"testing"

	"github.com/arbiterhq/arbiter/store"
)

// RunJournal runs the journal part of the suite against a backend that is a
// store.Journal only, such as a journal kept in another database than the
// conversation state. open must return a fresh, empty journal and register
// its own cleanup with t.Cleanup; it is called once per subtest, possibly
// from parallel subtests, with the clock of that subtest. Subtests that need
// the backend's State as well (a turn carried by a Commit) are skipped, and
// so are the ListTurns subtests unless the journal implements
// store.TurnLister. Subtests are named Journal/<name>, as under Run.
func RunJournal(t *testing.T, open func(t *testing.T, clock *Clock) store.Journal) {
	t.Helper()
	t.Run("Journal", func(t *testing.T) {
		for _, st := range journalTests {
			t.Run(st.name, func(t *testing.T) {
				t.Parallel()
				opts := st.options()
				clock := NewClock(startTime)
				j := open(t, clock)
				if j == nil {
					t.Fatal("open returned a nil Journal")
				}
				st.run(t, env{j: j, clock: clock, opts: opts})
			})
		}
	})
}
