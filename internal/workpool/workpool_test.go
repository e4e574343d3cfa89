package workpool

import (
	"sync"
	"testing"
	"time"
)

// TestEachPieceRunsOnce: every piece started runs, once.
func TestEachPieceRunsOnce(t *testing.T) {
	const n = 200
	var mu sync.Mutex
	var wg sync.WaitGroup
	ran := map[int]int{}
	p := New(time.Hour, func(i int) {
		mu.Lock()
		ran[i]++
		mu.Unlock()
		wg.Done()
	})
	wg.Add(n)
	for i := range n {
		p.Start(i)
	}
	wg.Wait()
	for i := range n {
		if ran[i] != 1 {
			t.Errorf("piece %d ran %d times", i, ran[i])
		}
	}
}

// TestPiecesDoNotQueue: while every goroutine is busy, a new piece runs
// at once on a goroutine of its own (a queue behind a busy one would
// never start it, and the test would not end).
func TestPiecesDoNotQueue(t *testing.T) {
	const n = 8
	started, release := make(chan int, n), make(chan struct{})
	p := New(time.Hour, func(i int) {
		started <- i
		<-release
	})
	for i := range n {
		p.Start(i)
	}
	for range n {
		<-started
	}
	close(release)
}

// TestIdleGoroutineWaitsForWork: once its piece is done, a goroutine
// waits for the next one rather than exiting (a blocking send succeeds
// only when one waits).
func TestIdleGoroutineWaitsForWork(t *testing.T) {
	done := make(chan int)
	p := New(time.Hour, func(i int) { done <- i })
	p.Start(1)
	<-done
	p.idle <- 2
	if got := <-done; got != 2 {
		t.Fatalf("ran %d, want 2", got)
	}
}
