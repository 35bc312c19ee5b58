package storetest

import (
	"sync"
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewClock(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("Now = %v, want %v", got, start)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				c.Advance(time.Second)
				_ = c.Now()
			}
		})
	}
	wg.Wait()
	if got, want := c.Now(), start.Add(800*time.Second); !got.Equal(want) {
		t.Errorf("after concurrent advances Now = %v, want %v", got, want)
	}
	c.Set(start)
	if got := c.Now(); !got.Equal(start) {
		t.Errorf("after Set Now = %v, want %v", got, start)
	}
}

func TestJSONEqual(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{`{"a":1,"b":[1,2]}`, `{ "b": [1, 2], "a": 1 }`, true},
		{`{"a":1}`, `{"a":2}`, false},
		{``, ``, true},
		{``, `null`, false},
		{`not json`, `not json`, false},
	}
	for _, tt := range tests {
		if got := jsonEqual([]byte(tt.a), []byte(tt.b)); got != tt.want {
			t.Errorf("jsonEqual(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
