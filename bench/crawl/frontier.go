package main

import (
	"container/heap"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/f9014239/robots"
)

// crawlFrontier is crawler (b): a robots.Transport with MaxWait set, under
// a frontier of per-origin queues. Each origin has at most one request in
// flight; a worker takes the origin whose next URL is due soonest, and a URL
// refused with robots.ErrNotYet goes back to the head of its origin's
// queue, due at the refusal's TurnError.At, so that no worker waits for an
// origin's turn. Any other refusal or failure drops the URL.
func crawlFrontier(ctx context.Context, j job) error {
	t := newTransport(j)
	t.MaxWait = j.maxWait
	client := &http.Client{Transport: t}
	return frontier(ctx, j.urls, j.workers, func(u string) (time.Time, bool) {
		req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
		if err != nil {
			return time.Time{}, false
		}
		resp, err := client.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return time.Time{}, false
		}
		if te, ok := errors.AsType[*robots.TurnError](err); ok && errors.Is(err, robots.ErrNotYet) {
			return te.At, true
		}
		return time.Time{}, false
	})
}

// queue is the URLs of one origin still to be sent, in the frontier.
type queue struct {
	urls []string
	due  time.Time // when urls[0] may be tried
	seq  int       // tie-break: the order in which queues became due
	i    int       // index in the heap; -1 while a worker holds it
}

// dueHeap orders queues by due, then seq.
type dueHeap []*queue

func (h dueHeap) Len() int { return len(h) }
func (h dueHeap) Less(a, b int) bool {
	if c := h[a].due.Compare(h[b].due); c != 0 {
		return c < 0
	}
	return h[a].seq < h[b].seq
}
func (h dueHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a]; h[a].i = a; h[b].i = b }
func (h *dueHeap) Push(x any)   { q := x.(*queue); q.i = len(*h); *h = append(*h, q) }
func (h *dueHeap) Pop() any {
	old := *h
	q := old[len(old)-1]
	*h = old[:len(old)-1]
	q.i = -1
	return q
}

// frontier sends every URL of urls with n workers calling send, origin by
// origin: urls of one origin are tried in their order, one at a time. When
// send reports that a URL is not yet due, it is tried again from the time
// send returned. It returns when every URL has been sent or dropped, or
// ctx ends.
func frontier(ctx context.Context, urls []string, n int, send func(u string) (retry time.Time, again bool)) error {
	byOrigin := make(map[string]*queue)
	h := dueHeap{}
	seq := 0
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		q := byOrigin[u.Scheme+"://"+u.Host]
		if q == nil {
			q = &queue{seq: seq}
			seq++
			byOrigin[u.Scheme+"://"+u.Host] = q
			heap.Push(&h, q)
		}
		q.urls = append(q.urls, raw)
	}

	type result struct {
		q     *queue
		retry time.Time
		again bool
	}
	work := make(chan *queue)
	done := make(chan result)
	for range n {
		go func() {
			for q := range work {
				retry, again := send(q.urls[0])
				done <- result{q, retry, again}
			}
		}()
	}
	defer close(work)

	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	busy := 0
	for h.Len() > 0 || busy > 0 {
		var out chan *queue
		var next *queue
		if h.Len() > 0 {
			next = h[0]
			if wait := time.Until(next.due); wait <= 0 {
				out = work
			} else {
				timer.Reset(wait)
			}
		}
		select {
		case out <- next:
			heap.Pop(&h)
			busy++
		case r := <-done:
			busy--
			q := r.q
			if r.again {
				q.due = r.retry
			} else {
				q.urls = q.urls[1:]
				q.due = time.Now()
			}
			if len(q.urls) > 0 {
				q.seq = seq
				seq++
				heap.Push(&h, q)
			}
		case <-timer.C:
		case <-ctx.Done():
			for busy > 0 {
				<-done
				busy--
			}
			return ctx.Err()
		}
	}
	return nil
}
