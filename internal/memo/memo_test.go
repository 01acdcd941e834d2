package memo

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// TestGet: concurrent callers of one key share one computation and its outcome, an error
// included; other keys compute their own.
func TestGet(t *testing.T) {
	var m Map[string, int]
	var calls atomic.Int32
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			v, err := m.Get("a", func() (int, error) { calls.Add(1); return 7, nil })
			if v != 7 || err != nil {
				t.Errorf("Get(a) = %d, %v", v, err)
			}
		})
	}
	wg.Wait()
	if calls.Load() != 1 {
		t.Errorf("%d computations of one key, want 1", calls.Load())
	}
	boom := errors.New("boom")
	for range 2 {
		if _, err := m.Get("b", func() (int, error) { calls.Add(1); return 0, boom }); err != boom {
			t.Errorf("Get(b): %v, want the computation's error", err)
		}
	}
	if calls.Load() != 2 {
		t.Errorf("%d computations, want 2: one for each key", calls.Load())
	}
}
