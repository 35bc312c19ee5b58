package wire

import (
	"sync"

	"github.com/arbiterhq/arbiter/llm"
)

// CacheMinLen is the length from which a message's text is worth caching
// in encoded form; shorter texts (the conversation) are cheap to encode
// on every call.
const CacheMinLen = 512

// MaxCached bounds the entries of a Cache; past it the cache starts over.
const MaxCached = 256

// Cache holds the encoded JSON of request parts that recur from call to
// call (a system prompt, a schema, a tool catalog), so that each is
// encoded once and copied afterwards. K identifies a part; V is what an
// entry keeps of the part it was encoded from, for a hit to be checked
// against the part at hand when K is an identity (a pointer) whose value
// may have changed since. A Cache holds at most MaxCached entries.
//
// The zero value is an empty cache ready for use. A Cache is safe for
// concurrent use; it must not be copied after first use.
type Cache[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]cacheEntry[V]
}

type cacheEntry[V any] struct {
	src V
	enc []byte
}

// Get returns the encoding cached under key if there is one and same is
// nil or reports that the entry's source still matches the current part.
// Otherwise it calls encode, which returns what to keep of the source and
// the encoding, caches both under key and returns the encoding; an error
// from encode is returned as it is and nothing is cached.
//
// The returned bytes are shared with other callers and must not be
// modified. Concurrent misses on one key may each call encode; the last
// to finish stays cached.
func (c *Cache[K, V]) Get(key K, same func(V) bool, encode func() (V, []byte, error)) ([]byte, error) {
	c.mu.RLock()
	e, ok := c.m[key]
	c.mu.RUnlock()
	if ok && (same == nil || same(e.src)) {
		return e.enc, nil
	}
	src, enc, err := encode()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= MaxCached {
		c.m = make(map[K]cacheEntry[V])
	}
	c.m[key] = cacheEntry[V]{src: src, enc: enc}
	c.mu.Unlock()
	return enc, nil
}

// Len returns the number of entries cached. It is safe for concurrent
// use.
func (c *Cache[K, V]) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}

// ToolsKey identifies a tool catalog by its backing array and length: a
// caller passes the same []llm.ToolDef on every request, so this finds
// its encoding again without reading the catalog. It says nothing of the
// contents, which a cache keyed by it checks on a hit. It is a plain
// value, safe to use from any goroutine.
type ToolsKey struct {
	first *llm.ToolDef
	n     int
}

// ToolsKeyOf returns the key of defs, which must not be empty.
func ToolsKeyOf(defs []llm.ToolDef) ToolsKey {
	return ToolsKey{first: &defs[0], n: len(defs)}
}
