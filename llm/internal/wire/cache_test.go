package wire

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/arbiterhq/arbiter/llm"
)

func TestCacheGet(t *testing.T) {
	errEncode := errors.New("encode failed")
	type call struct {
		key      string
		src      int  // the current source, compared by same
		nilSame  bool // pass a nil same
		fail     bool // encode fails
		want     string
		wantCall bool // encode is called
	}
	tests := []struct {
		name  string
		calls []call
	}{
		{"miss then hit", []call{
			{key: "a", src: 1, want: "a1", wantCall: true},
			{key: "a", src: 1, want: "a1"},
		}},
		{"nil same always hits", []call{
			{key: "a", src: 1, nilSame: true, want: "a1", wantCall: true},
			{key: "a", src: 2, nilSame: true, want: "a1"},
		}},
		{"changed source is encoded afresh", []call{
			{key: "a", src: 1, want: "a1", wantCall: true},
			{key: "a", src: 2, want: "a2", wantCall: true},
			{key: "a", src: 2, want: "a2"},
		}},
		{"keys are apart", []call{
			{key: "a", src: 1, want: "a1", wantCall: true},
			{key: "b", src: 1, want: "b1", wantCall: true},
			{key: "a", src: 1, want: "a1"},
		}},
		{"a failed encoding is not cached", []call{
			{key: "a", src: 1, fail: true, wantCall: true},
			{key: "a", src: 1, want: "a1", wantCall: true},
			{key: "a", src: 1, want: "a1"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Cache[string, int]
			for i, cl := range tt.calls {
				called := false
				var same func(int) bool
				if !cl.nilSame {
					same = func(old int) bool { return old == cl.src }
				}
				got, err := c.Get(cl.key, same, func() (int, []byte, error) {
					called = true
					if cl.fail {
						return 0, nil, errEncode
					}
					return cl.src, fmt.Appendf(nil, "%s%d", cl.key, cl.src), nil
				})
				if called != cl.wantCall {
					t.Errorf("call %d: encode called %v, want %v", i, called, cl.wantCall)
				}
				switch {
				case cl.fail && !errors.Is(err, errEncode):
					t.Errorf("call %d: error %v, want the encoder's", i, err)
				case !cl.fail && (err != nil || string(got) != cl.want):
					t.Errorf("call %d: got %q, %v; want %q", i, got, err, cl.want)
				}
			}
		})
	}
}

func TestCacheBound(t *testing.T) {
	var c Cache[int, struct{}]
	encode := func() (struct{}, []byte, error) { return struct{}{}, []byte("x"), nil }
	for i := range MaxCached {
		if _, err := c.Get(i, nil, encode); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.Len(); n != MaxCached {
		t.Fatalf("Len = %d after %d keys, want %d", n, MaxCached, MaxCached)
	}
	if _, err := c.Get(MaxCached, nil, encode); err != nil {
		t.Fatal(err)
	}
	if n := c.Len(); n != 1 {
		t.Errorf("Len = %d past the bound, want 1 (started over)", n)
	}
}

func TestCacheConcurrent(t *testing.T) {
	var c Cache[int, int]
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				key := (g + i) % 16
				got, err := c.Get(key, func(old int) bool { return old == key },
					func() (int, []byte, error) { return key, fmt.Append(nil, key), nil })
				if err != nil || string(got) != fmt.Sprint(key) {
					t.Errorf("Get(%d) = %q, %v", key, got, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := c.Len(); n != 16 {
		t.Errorf("Len = %d, want 16", n)
	}
}

func TestToolsKeyOf(t *testing.T) {
	defs := []llm.ToolDef{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	clone := append([]llm.ToolDef(nil), defs...)
	tests := []struct {
		name string
		a, b []llm.ToolDef
		same bool
	}{
		{"same slice", defs, defs, true},
		{"same array and length", defs[:2], defs[:2:2], true},
		{"shorter", defs, defs[:2], false},
		{"other start", defs[1:], defs[:2], false},
		{"copy", defs, clone, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ToolsKeyOf(tt.a) == ToolsKeyOf(tt.b); got != tt.same {
				t.Errorf("keys equal = %v, want %v", got, tt.same)
			}
		})
	}
}
