package server_test

import (
	"slices"
	"sync"
)

// seen is what a fake service was sent, added by its handler and read by
// the test, each under the lock.
type seen struct {
	mu    sync.Mutex
	items []string
}

func (s *seen) add(item string) {
	s.mu.Lock()
	s.items = append(s.items, item)
	s.mu.Unlock()
}

func (s *seen) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.items)
}
