package wait

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// Sleep waits its time on the clock, stops when its context ends, and
// waits nothing for no time.
func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := Sleep(context.Background(), 90*time.Second); err != nil || time.Since(start) != 90*time.Second {
			t.Errorf("Sleep(90s) = %v after %s", err, time.Since(start))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start = time.Now()
		if err := Sleep(ctx, time.Hour); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 5*time.Second {
			t.Errorf("Sleep past the deadline = %v after %s", err, time.Since(start))
		}
		cancelled, cancel2 := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel2)
		start = time.Now()
		if err := Sleep(cancelled, time.Minute); !errors.Is(err, context.Canceled) || time.Since(start) != 50*time.Millisecond {
			t.Errorf("Sleep when cancelled = %v after %s", err, time.Since(start))
		}
		if err := Sleep(ctx, 0); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Sleep(0) on an ended context = %v", err)
		}
		if err := Sleep(context.Background(), -time.Second); err != nil {
			t.Errorf("Sleep(-1s) = %v", err)
		}
	})
}
