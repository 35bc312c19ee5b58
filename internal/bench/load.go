package bench

import (
	"fmt"
	"strconv"
	"sync"
	"time"
)

// Load runs turns from `conversations` clients at once, each its own
// conversation, `perConversation` turns each, and returns the turns per
// second it sustained.
func (e *Engine) Load(conversations, perConversation int) (float64, error) {
	var wg sync.WaitGroup
	errs := make(chan error, conversations)
	start := time.Now()
	for c := range conversations {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conv := "load-" + strconv.Itoa(c)
			for range perConversation {
				body := `{"conversation_id":"` + conv + `","text":"Что у меня по задачам?"}`
				if _, err := post(e.client, e.api.URL+"/v1/messages", body); err != nil {
					errs <- fmt.Errorf("%s: %w", conv, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return float64(conversations*perConversation) / time.Since(start).Seconds(), nil
}
