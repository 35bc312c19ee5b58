package llmtest

import (
	"crypto/sha256"
	"encoding/json"
)

// promptCache emulates the Messages API's prompt cache for an
// AnthropicServer with PromptCache set: the prompt is read in its order —
// tools, system, then the messages' blocks — and at each block carrying
// cache_control the prefix so far is a cache entry. An entry an earlier
// request wrote is read (cache_read_input_tokens); the ones after it are
// written (cache_creation_input_tokens); the rest is input_tokens. Tokens
// are estimated as bytes/4, as the server's other estimates.
type promptCache struct {
	seen map[[32]byte]bool
}

// usage returns req's input usage and records its cache entries. The
// caller holds the server's lock.
func (c *promptCache) usage(req *AnthropicRequest) (input, read, created int) {
	if c.seen == nil {
		c.seen = map[[32]byte]bool{}
	}
	h := sha256.New()
	bytes := 0
	add := func(v any) {
		b, _ := json.Marshal(v)
		h.Write(b)
		bytes += len(b)
	}
	lastRead, lastPoint := 0, 0
	mark := func() {
		var key [32]byte
		copy(key[:], h.Sum(nil))
		if c.seen[key] {
			lastRead = bytes
		}
		c.seen[key] = true
		lastPoint = bytes
	}
	for _, t := range req.Tools {
		add(t)
		if t.CacheControl != nil {
			mark()
		}
	}
	for _, b := range req.System {
		add(b.Text)
		if b.CacheControl != nil {
			mark()
		}
	}
	for _, m := range req.Messages {
		add(m.Role)
		for _, b := range m.Content {
			cc := b.CacheControl
			b.CacheControl = nil
			add(b)
			if cc != nil {
				mark()
			}
		}
	}
	read = lastRead / 4
	created = (lastPoint - lastRead) / 4
	if lastPoint < lastRead {
		created = 0
	}
	return (bytes-max(lastPoint, lastRead))/4 + 1, read, created
}
