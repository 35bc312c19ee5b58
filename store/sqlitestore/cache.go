package sqlitestore

import (
	"sync"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
)

// cache is a write-through copy of recent conversations' memory and
// pending action. The store is the only writer of those tables (one
// process per file), so once it committed or read a conversation it knows
// what SQLite holds for it, and a turn's LoadConversation and GetPending
// cost no transaction. Entries keep the stored expiry times, so visibility
// is decided at read time exactly as a query would. The cache is bounded
// in bytes, least recently used out first.
//
// It has a lock of its own, mu: a turn's reads of a conversation the cache
// knows (view) take only mu, never the store's connection, so they do not
// wait behind a commit in progress. Its contents change only holding the
// connection too (committed, known, TakePending, cleanup), and only after
// the change is in the file: a read sees the state before a commit or
// after it, never one the file does not hold. Methods other than view
// are called holding mu.
type cache struct {
	mu    sync.Mutex
	limit int // bytes; <= 0 keeps nothing
	size  int
	m     map[chat.ConversationKey]*entry
	lru   entry // sentinel of a circular list, most recently used first
}

// entry is what the cache knows of one conversation. A field group is
// valid only when its known flag is set.
type entry struct {
	key        chat.ConversationKey
	prev, next *entry
	size       int

	memKnown   bool
	memory     []byte // encoded memory; nil when none is stored
	memExpires int64

	pendKnown   bool
	pending     *store.PendingAction // nil when none is stored
	pendExpires int64                // delete_after
}

// entryOverhead approximates the bytes an entry costs besides its memory
// and pending arguments.
const entryOverhead = 256

func (c *cache) init(limit int) {
	c.limit = limit
	c.m = make(map[chat.ConversationKey]*entry)
	c.lru.next, c.lru.prev = &c.lru, &c.lru
}

// view is what the cache knows of a conversation, copied out: the
// memory bytes and the pending action are never changed once cached (a
// commit caches new ones), so a view stays valid after mu is released.
type view struct {
	memory      []byte
	memExpires  int64
	pending     *store.PendingAction
	pendExpires int64
}

func (e *entry) view() view {
	return view{memory: e.memory, memExpires: e.memExpires, pending: e.pending, pendExpires: e.pendExpires}
}

// known returns the view of key when both its memory and its pending
// action are known, marking it used. Takes mu; safe for concurrent use.
func (c *cache) known(key chat.ConversationKey) (view, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[key]
	if e == nil || !e.memKnown || !e.pendKnown {
		return view{}, false
	}
	c.unlink(e)
	c.pushFront(e)
	return e.view(), true
}

// get returns the entry of key, or nil, and marks it used.
func (c *cache) get(key chat.ConversationKey) *entry {
	e := c.m[key]
	if e != nil {
		c.unlink(e)
		c.pushFront(e)
	}
	return e
}

// put returns the entry of key, creating it if needed, and marks it used.
// The entry may be evicted by the next resize; callers use it at once.
func (c *cache) put(key chat.ConversationKey) *entry {
	if e := c.get(key); e != nil {
		return e
	}
	e := &entry{key: key, size: entryOverhead}
	c.m[key] = e
	c.pushFront(e)
	c.size += e.size
	return e
}

func (c *cache) setMemory(e *entry, memory []byte, expires int64) {
	e.memKnown, e.memory, e.memExpires = true, memory, expires
	c.resize(e)
}

func (c *cache) setPending(e *entry, p *store.PendingAction, expires int64) {
	e.pendKnown, e.pending, e.pendExpires = true, p, expires
	c.resize(e)
}

// resize recomputes e's size and evicts until the cache fits its limit.
func (c *cache) resize(e *entry) {
	size := entryOverhead + len(e.memory)
	if e.pending != nil {
		size += entryOverhead + len(e.pending.Args)
	}
	if e.next == nil { // evicted already: no longer counted
		e.size = size
		return
	}
	c.size += size - e.size
	e.size = size
	for c.size > c.limit && c.lru.prev != &c.lru {
		c.remove(c.lru.prev)
	}
}

// sweep drops entries whose memory and pending action both expired.
func (c *cache) sweep(now int64) {
	for e := c.lru.next; e != &c.lru; {
		next := e.next
		if (e.memory == nil || e.memExpires < now) && (e.pending == nil || e.pendExpires < now) {
			c.remove(e)
		}
		e = next
	}
}

func (c *cache) remove(e *entry) {
	c.unlink(e)
	delete(c.m, e.key)
	c.size -= e.size
}

func (c *cache) unlink(e *entry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

func (c *cache) pushFront(e *entry) {
	e.prev, e.next = &c.lru, c.lru.next
	c.lru.next.prev = e
	c.lru.next = e
}
