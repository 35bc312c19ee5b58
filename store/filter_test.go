package store

import "testing"

func TestTurnFilterPageSize(t *testing.T) {
	for _, c := range []struct{ limit, want int }{
		{-3, DefaultTurnPage}, {0, DefaultTurnPage}, {1, 1}, {499, 499},
		{MaxTurnPage, MaxTurnPage}, {MaxTurnPage + 1, MaxTurnPage}, {1 << 30, MaxTurnPage},
	} {
		if got := (TurnFilter{Limit: c.limit}).PageSize(); got != c.want {
			t.Errorf("PageSize(%d) = %d, want %d", c.limit, got, c.want)
		}
	}
}
