package keyring

import (
	"net/http"
	"testing"
)

func TestRing(t *testing.T) {
	if _, err := New([]string{"k-1", ""}); err == nil {
		t.Error("an empty token was taken")
	}
	r, err := New([]string{"k-alice", "k-bob", "k-alice"})
	if err != nil {
		t.Fatal(err)
	}
	for token, want := range map[string]int{"k-alice": 0, "k-bob": 1} {
		if i, ok := r.Find(token); !ok || i != want {
			t.Errorf("Find(%q) = %d, %v; want %d", token, i, ok, want)
		}
	}
	for _, token := range []string{"", "k-ali", "k-alice ", "K-ALICE"} {
		if _, ok := r.Find(token); ok {
			t.Errorf("Find(%q) found a key", token)
		}
	}
	for header, want := range map[string]string{"Bearer k-bob": "k-bob", "Bearer  k-bob ": "k-bob", "Basic k-bob": "", "k-bob": "", "": ""} {
		req, _ := http.NewRequest("GET", "/", nil)
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		if got := Bearer(req); got != want {
			t.Errorf("Bearer(%q) = %q, want %q", header, got, want)
		}
	}
}
