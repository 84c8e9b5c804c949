package unwind

import (
	"container/list"
	"sync"
)

// Cache keeps tables by key, such as a build-id, so processes mapping the
// same object share one table. It holds at most about MaxBytes of tables,
// dropping the least recently used; a dropped table is loaded again when
// asked for. Failed loads are remembered too. A Cache is safe for
// concurrent use.
type Cache struct {
	mu      sync.Mutex
	max     int
	used    int
	entries map[string]*list.Element
	lru     list.List
	// Loads and Evictions count calls of load and tables dropped.
	loads, evictions int
}

type cacheEntry struct {
	key  string
	tab  *Table
	err  error
	size int
}

// errEntrySize is what a remembered failure is charged.
const errEntrySize = 64

// NewCache returns a cache bounded to maxBytes of tables.
func NewCache(maxBytes int) *Cache {
	return &Cache{max: maxBytes, entries: make(map[string]*list.Element)}
}

// Get returns the table of key, calling load when it is not cached. A
// table larger than the bound is returned but not kept.
func (c *Cache) Get(key string, load func() (*Table, error)) (*Table, error) {
	c.mu.Lock()
	if el, ok := c.entries[key]; ok {
		c.lru.MoveToFront(el)
		e := el.Value.(*cacheEntry)
		c.mu.Unlock()
		return e.tab, e.err
	}
	c.mu.Unlock()
	tab, err := load()
	e := &cacheEntry{key: key, tab: tab, err: err, size: errEntrySize}
	if tab != nil {
		e.size = tab.Size()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.loads++
	if el, ok := c.entries[key]; ok { // loaded concurrently
		c.lru.MoveToFront(el)
		return tab, err
	}
	if e.size > c.max {
		return tab, err
	}
	for c.used+e.size > c.max {
		last := c.lru.Back()
		old := last.Value.(*cacheEntry)
		c.lru.Remove(last)
		delete(c.entries, old.key)
		c.used -= old.size
		c.evictions++
	}
	c.entries[key] = c.lru.PushFront(e)
	c.used += e.size
	return tab, err
}

// Stats returns the bytes held, the number of loads and of evictions.
func (c *Cache) Stats() (bytes, loads, evictions int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used, c.loads, c.evictions
}
