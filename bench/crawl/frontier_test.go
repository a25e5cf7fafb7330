package main

import (
	"context"
	"net/url"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestFrontierRequeues checks, in fake time, that the frontier tries a URL
// again at the time its refusal names and not before, keeps one request in
// flight per origin, keeps each origin's order, and does not hold one
// origin back for another's turn.
func TestFrontierRequeues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		urls := []string{"http://a.test/1", "http://b.test/1", "http://a.test/2", "http://b.test/2"}
		var mu sync.Mutex
		inFlight := make(map[string]int)
		refused := make(map[string]bool)
		var tries []string
		sent := make(map[string]time.Duration)
		send := func(raw string) (time.Time, bool) {
			u, _ := url.Parse(raw)
			mu.Lock()
			tries = append(tries, raw)
			inFlight[u.Host]++
			if inFlight[u.Host] > 1 {
				t.Errorf("%s: %d requests in flight", u.Host, inFlight[u.Host])
			}
			mu.Unlock()
			time.Sleep(time.Millisecond) // the request's round trip
			mu.Lock()
			defer mu.Unlock()
			inFlight[u.Host]--
			if u.Host == "a.test" && !refused[raw] {
				refused[raw] = true
				return time.Now().Add(100 * time.Millisecond), true
			}
			sent[raw] = time.Since(start)
			return time.Time{}, false
		}
		if err := frontier(context.Background(), urls, 4, send); err != nil {
			t.Fatal(err)
		}
		want := map[string]time.Duration{
			"http://b.test/1": 1 * time.Millisecond,
			"http://b.test/2": 2 * time.Millisecond,
			"http://a.test/1": 102 * time.Millisecond, // refused at 1 ms until 101 ms
			"http://a.test/2": 204 * time.Millisecond, // refused at 103 ms until 203 ms
		}
		for u, at := range want {
			if sent[u] != at {
				t.Errorf("%s sent at %v, want %v", u, sent[u], at)
			}
		}
		if len(tries) != 6 {
			t.Errorf("%d tries, want 6 (two refused): %q", len(tries), tries)
		}
	})
}

// TestFrontierCancel checks that the frontier returns when its context
// ends, with URLs still waiting for their turn.
func TestFrontierCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		send := func(string) (time.Time, bool) { return time.Now().Add(time.Hour), true }
		if err := frontier(ctx, []string{"http://a.test/1"}, 2, send); err != context.DeadlineExceeded {
			t.Fatalf("got %v, want context.DeadlineExceeded", err)
		}
	})
}
