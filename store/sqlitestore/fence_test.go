package sqlitestore

import (
	"testing"
)

// Every fence handed out is covered by the reservation the file holds
// (store_meta's fence_high), so an opening after a crash starts above all
// of them; and the reservation is made once per block, not on every Lock.
func TestFencesStayWithinTheirReservation(t *testing.T) {
	ctx := t.Context()
	s := openTest(t, Options{})
	reserved := func() int64 {
		t.Helper()
		var high int64
		if err := s.conn.QueryRowContext(ctx, `SELECT value FROM store_meta WHERE name = 'fence_high'`).Scan(&high); err != nil {
			t.Fatal(err)
		}
		return high
	}
	var fences []int64
	for range 5 {
		lease, err := s.Lock(ctx, "t/c/u")
		if err != nil {
			t.Fatal(err)
		}
		fences = append(fences, lease.Fence())
		lease.Release()
	}
	high := reserved()
	for i, f := range fences {
		if f > high {
			t.Errorf("fence %d is above the reservation %d the file holds", f, high)
		}
		if i > 0 && f != fences[i-1]+1 {
			t.Errorf("fences %v: each Lock reserved anew", fences)
			break
		}
	}
	if high != fenceBlock {
		t.Errorf("five locks reserved up to %d, want one block (%d)", high, fenceBlock)
	}
}
