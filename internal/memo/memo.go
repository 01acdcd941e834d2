// Package memo computes one value per key, once, whichever goroutine asks first: the reads a
// run shares between the releases it measures (a source artifact, a namespace's release
// storage, an envFrom source).
package memo

import "sync"

// Map holds one value per key, computed once. The zero value is ready; it is safe for
// concurrent use. A computation's error is kept as its value is: every caller of that key
// gets it.
type Map[K comparable, T any] struct {
	mu    sync.Mutex
	cells map[K]*cell[T]
}

type cell[T any] struct {
	once sync.Once
	v    T
	err  error
}

// Get returns key's value, computing it the first time key is asked for; callers asking
// while it is computed wait for it.
func (m *Map[K, T]) Get(key K, compute func() (T, error)) (T, error) {
	m.mu.Lock()
	if m.cells == nil {
		m.cells = map[K]*cell[T]{}
	}
	c := m.cells[key]
	if c == nil {
		c = &cell[T]{}
		m.cells[key] = c
	}
	m.mu.Unlock()
	c.once.Do(func() { c.v, c.err = compute() })
	return c.v, c.err
}
