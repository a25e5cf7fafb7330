package frontier_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/f9014239/robots"
	"github.com/f9014239/robots/frontier"
)

func TestOrigin(t *testing.T) {
	cases := []struct{ in, want string }{
		{"http://example.com/a", "http://example.com"},
		{"HTTP://Example.COM/a", "http://example.com"},
		{"http://example.com:80/a", "http://example.com"},
		{"http://example.com:080/a", "http://example.com"},
		{"https://example.com:443", "https://example.com"},
		{"https://example.com:80/", "https://example.com:80"},
		{"http://example.com:8080?q", "http://example.com:8080"},
		{"http://example.com:/a", "http://example.com"},
		{"http://user:pw@example.com/a", "http://example.com"},
		{"http://[0:0::1]:8080/", "http://[::1]:8080"},
		{"http://[::1]/", "http://[::1]"},
		{"http://EXÄMPLE.com/", "http://xn--exmple-cua.com"},
		{"http://bücher.example/", "http://xn--bcher-kva.example"},
		{"http://example.com./", "http://example.com."},
		{"https://a.example#frag", "https://a.example"},
	}
	for _, c := range cases {
		if got, err := frontier.Origin(c.in); got != c.want || err != nil {
			t.Errorf("Origin(%q) = %q, %v want %q", c.in, got, err, c.want)
		}
		// The name a robots.Transport gives it.
		if o, err := robots.OriginOf(mustParse(t, c.in)); o != c.want || err != nil {
			t.Errorf("robots.OriginOf(%q) = %q, %v want %q", c.in, o, err, c.want)
		}
	}
}

func mustParse(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestBadInput: each kind of bad input is a clear error, and changes
// nothing.
func TestBadInput(t *testing.T) {
	var f frontier.Frontier
	for _, c := range []struct {
		url  string
		want error
	}{
		{"ftp://example.com/a", frontier.ErrScheme},
		{"mailto:a@example.com", frontier.ErrScheme},
		{"/relative/path", frontier.ErrScheme},
		{"example.com/a", frontier.ErrScheme},
		{"http:///a", frontier.ErrNoHost},
		{"http:opaque", frontier.ErrNoHost},
		{"http://:80/a", frontier.ErrNoHost},
		{"http://example.com:99999/", nil}, // url.Parse's error, wrapped
		{"http://exa mple.com/", nil},
		{"http://example.com/" + strings.Repeat("a", frontier.MaxURLLen), frontier.ErrTooLong},
	} {
		err := f.Push(c.url)
		if err == nil || c.want != nil && !errors.Is(err, c.want) || !strings.HasPrefix(err.Error(), "frontier: ") {
			t.Errorf("Push(%.40q) = %v, want %v", c.url, err, c.want)
		}
	}
	if n := f.Len(); n != 0 {
		t.Fatalf("Len = %d after bad input, want 0", n)
	}
	ok := "http://example.com/" + strings.Repeat("a", frontier.MaxURLLen-len("http://example.com/"))
	if err := f.Push(ok); err != nil {
		t.Fatalf("Push of a URL of MaxURLLen bytes: %v", err)
	}
	if err := f.Push(ok); err != frontier.ErrDuplicate {
		t.Errorf("Push of a queued URL = %v, want ErrDuplicate", err)
	}
	if err := f.Done("http://example.com/never", nil); err != frontier.ErrNotOut {
		t.Errorf("Done of a URL never pushed = %v, want ErrNotOut", err)
	}
	if err := f.Done(ok, nil); err != frontier.ErrNotOut {
		t.Errorf("Done of a queued URL = %v, want ErrNotOut", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if u, err := f.Next(ctx); err != context.Canceled {
		t.Errorf("Next after cancel = %q, %v, want context.Canceled", u, err)
	}
	u, err := f.Next(t.Context())
	if u != ok || err != nil {
		t.Fatalf("Next = %.40q, %v", u, err)
	}
	if err := f.Push(ok); err != frontier.ErrDuplicate {
		t.Errorf("Push of a URL out = %v, want ErrDuplicate", err)
	}
	if err := f.Requeue("http://example.com/other", time.Time{}); err != frontier.ErrNotOut {
		t.Errorf("Requeue of a URL not out = %v, want ErrNotOut", err)
	}
	if err := f.Done(ok, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.Done(ok, nil); err != frontier.ErrNotOut {
		t.Errorf("Done twice = %v, want ErrNotOut", err)
	}
	if u, err := f.Next(t.Context()); err != frontier.ErrEmpty {
		t.Errorf("Next of an empty frontier = %q, %v, want ErrEmpty", u, err)
	}
	// Done forgets: the URL may be pushed again.
	if err := f.Push(ok); err != nil {
		t.Errorf("Push after Done = %v, want nil", err)
	}
}

// web is a fake web behind a fake Transport, in a synctest bubble: each
// host has an interval, its next turn is that long after the answer to its
// last request, and a request takes rtt. Asked first about a host, it
// fetches its robots.txt, at once. It fails the test if a request leaves
// before its host's turn, or while another of its host is out.
type web struct {
	t     *testing.T
	rtt   time.Duration
	every map[string]time.Duration // by host

	mu       sync.Mutex
	answered map[string]time.Time // by host: the answer to its last request
	out      map[string]string    // by host: the URL in flight
	sent     []sent
	asked    int
	asks     []string      // the hosts Turns was asked about, in order
	hold     chan struct{} // if not nil, NextTurn waits for it to close
}

type sent struct {
	url      string
	at, done time.Time
}

func newWeb(t *testing.T, rtt time.Duration, every map[string]time.Duration) *web {
	return &web{t: t, rtt: rtt, every: every, answered: map[string]time.Time{}, out: map[string]string{}}
}

// NextTurn is Turns' method.
func (w *web) NextTurn(_ context.Context, u *url.URL) (time.Time, error) {
	if w.hold != nil {
		<-w.hold
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.asked++
	w.asks = append(w.asks, u.Host)
	a, ok := w.answered[u.Host]
	if !ok {
		a = time.Now() // robots.txt
		w.answered[u.Host] = a
	}
	return a.Add(w.every[u.Host]), nil
}

// send sends a request for raw.
func (w *web) send(raw string) {
	u, _ := url.Parse(raw)
	now := time.Now()
	w.mu.Lock()
	if o := w.out[u.Host]; o != "" {
		w.t.Errorf("%s sent while %s is out", raw, o)
	}
	if a, ok := w.answered[u.Host]; ok && now.Before(a.Add(w.every[u.Host])) {
		w.t.Errorf("%s sent %v after the answer before, before its turn (every %v)", raw, now.Sub(a), w.every[u.Host])
	}
	w.out[u.Host] = raw
	w.mu.Unlock()
	time.Sleep(w.rtt)
	w.mu.Lock()
	w.out[u.Host] = ""
	w.answered[u.Host] = time.Now()
	w.sent = append(w.sent, sent{raw, now, time.Now()})
	w.mu.Unlock()
}

// crawl takes from f with n workers, sending each URL to w, until f is
// empty.
func crawl(t *testing.T, f *frontier.Frontier, w *web, n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				u, err := f.Next(t.Context())
				if err == frontier.ErrEmpty {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				w.send(u)
				if err := f.Done(u, nil); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
}

// TestTurns: with Turns, no URL is handed out before its site's turn or
// while another URL of its site is out; each site's URLs go in the order
// pushed; every URL once; and the crawl takes the longest chain.
func TestTurns(t *testing.T) {
	for _, workers := range []int{1, 3, 16} {
		t.Run(strconv.Itoa(workers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				every := map[string]time.Duration{"a.test": time.Second, "b.test": 3 * time.Second, "c.test": 0, "d.test": 500 * time.Millisecond}
				w := newWeb(t, 10*time.Millisecond, every)
				f := &frontier.Frontier{Turns: w}
				var want []string
				for i := range 5 {
					for _, h := range []string{"a.test", "b.test", "c.test", "d.test"} {
						u := "http://" + h + "/" + strconv.Itoa(i)
						want = append(want, u)
						if err := f.Push(u); err != nil {
							t.Fatal(err)
						}
					}
				}
				start := time.Now()
				crawl(t, f, w, workers)
				var got []string
				byHost := map[string][]string{}
				for _, s := range w.sent {
					got = append(got, s.url)
					u, _ := url.Parse(s.url)
					byHost[u.Host] = append(byHost[u.Host], u.Path)
				}
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Errorf("sent %q, want each of %q once", got, want)
				}
				for h, ps := range byHost {
					if !slices.IsSorted(ps) {
						t.Errorf("%s sent in the order %q, want the order pushed", h, ps)
					}
				}
				// b.test: robots.txt at once, then 5 requests, each 3
				// s after the answer before, 10 ms each: the longest
				// chain.
				if workers > 1 {
					if d, want := time.Since(start), 5*3*time.Second+5*10*time.Millisecond; d != want {
						t.Errorf("crawl took %v, want %v", d, want)
					}
				}
				c := f.Counts()
				if c.Finished != 20 || c.Pushed != 20 || c.Queued != 0 || c.Out != 0 || c.Sites != 0 || c.NotYet != 0 {
					t.Errorf("Counts = %+v", c)
				}
				if w.asked != 24 {
					t.Errorf("Turns asked %d times, want once a new site (4) and once per answer (20)", w.asked)
				}
			})
		})
	}
}

// TestNotYet: a URL refused with ErrNotYet goes back to the head of its
// site's queue and is offered again at the TurnError's RetryAt, not before; the
// other sites go on meanwhile.
func TestNotYet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var f frontier.Frontier
		for _, u := range []string{"http://a.test/1", "http://a.test/2", "http://b.test/1"} {
			f.Push(u)
		}
		start := time.Now()
		u, _ := f.Next(t.Context())
		if u != "http://a.test/1" {
			t.Fatalf("Next = %q, want a.test/1: the site with the most URLs first", u)
		}
		at := start.Add(2 * time.Second)
		if err := f.Done(u, &robots.TurnError{Origin: "http://a.test", RetryAt: at}); err != nil {
			t.Fatal(err)
		}
		if u, _ := f.Next(t.Context()); u != "http://b.test/1" || time.Since(start) != 0 {
			t.Errorf("Next = %q after %v, want b.test/1 at once", u, time.Since(start))
		}
		u, _ = f.Next(t.Context())
		if u != "http://a.test/1" || !time.Now().Equal(at) {
			t.Errorf("Next = %q after %v, want a.test/1 again after 2s", u, time.Since(start))
		}
		if err := f.Done("http://b.test/1", nil); err != nil {
			t.Fatal(err)
		}
		if c := f.Counts(); c.NotYet != 1 || c.Queued != 1 || c.Out != 1 || c.Finished != 1 {
			t.Errorf("Counts = %+v", c)
		}
	})
}

// TestRefusals: URLs refused by robots.txt are counted and forgotten, not
// retried; Requeue retries an unreachable one at its RetryAt.
func TestRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var f frontier.Frontier
		f.Push("http://a.test/private")
		f.Push("http://a.test/down")
		f.Push("http://a.test/again")
		u, _ := f.Next(t.Context())
		f.Done(u, fmt.Errorf("get: %w", &robots.DisallowedError{Rule: "Disallow: /private"}))
		u, _ = f.Next(t.Context())
		f.Done(u, &robots.DisallowedError{Err: errors.New("503"), RetryAt: time.Now().Add(time.Minute)})
		start := time.Now()
		u, _ = f.Next(t.Context())
		de := &robots.DisallowedError{Err: errors.New("503"), RetryAt: time.Now().Add(time.Minute)}
		if err := f.Requeue(u, de.RetryAt); err != nil {
			t.Fatal(err)
		}
		if u2, _ := f.Next(t.Context()); u2 != u || time.Since(start) != time.Minute {
			t.Errorf("Next = %q after %v, want %q after 1m", u2, time.Since(start), u)
		}
		f.Done(u, nil)
		c := f.Counts()
		want := frontier.Counts{Pushed: 3, Finished: 3, Refused: 1, Unreachable: 1, Requeued: 1,
			TurnWaits: 1, TurnWaitTime: time.Minute, IdleWaits: 1, IdleTime: time.Minute} // the requeued URL's minute
		if c != want {
			t.Errorf("Counts = %+v, want %+v", c, want)
		}
		if _, err := f.Next(t.Context()); err != frontier.ErrEmpty {
			t.Errorf("Next = %v, want ErrEmpty", err)
		}
	})
}

// TestLongestChainFirst: new sites are asked about first, most URLs
// first; among the sites that may be sent a request, those with the
// longest chain (interval × URLs queued) go first.
func TestLongestChainFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		every := map[string]time.Duration{"a.test": time.Second, "b.test": 4 * time.Second, "c.test": 2 * time.Second, "d.test": 0}
		w := newWeb(t, 0, every)
		w.hold = make(chan struct{})
		f := &frontier.Frontier{Turns: w, Probes: 1}
		push := func(host string, n int) {
			for i := range n {
				if err := f.Push("http://" + host + "/" + strconv.Itoa(i)); err != nil {
					t.Fatal(err)
				}
			}
		}
		push("a.test", 3)
		push("b.test", 1)
		push("c.test", 3)
		push("d.test", 9)
		close(w.hold)
		synctest.Wait()
		// One at a time: a, the first pushed, was asked about at once;
		// then d (9 URLs), c (3, pushed after a) and b.
		if got, want := strings.Join(w.asks, " "), "a.test d.test c.test b.test"; got != want {
			t.Errorf("Turns asked about %s, want %s", got, want)
		}
		take := func(n int) string {
			var order []string
			for range n {
				u, err := f.Next(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				h, _, _ := strings.Cut(strings.TrimPrefix(u, "http://"), ".")
				order = append(order, h)
				w.send(u)
				defer f.Done(u, nil)
			}
			return strings.Join(order, " ")
		}
		// By 5 s every turn has come: c 3 URLs × 2 s, b 1 × 4 s, a 3
		// × 1 s, d 9 × 0.
		time.Sleep(5 * time.Second)
		if got, want := take(4), "c b a d"; got != want {
			t.Errorf("sites offered in the order %s, want %s", got, want)
		}
		time.Sleep(5 * time.Second)
		if got, want := take(3), "c a d"; got != want {
			t.Errorf("then in the order %s, want %s (c 2 × 2 s, a 2 × 1 s, d 8 × 0)", got, want)
		}
	})
}

// TestManyTakers: goroutines that take, and a goroutine that pushes while
// they take, hand out every URL once and end together, with no site having
// two URLs out.
func TestManyTakers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const sites, perSite = 40, 25
		every := map[string]time.Duration{}
		for i := range sites {
			every["s"+strconv.Itoa(i)+".test"] = time.Duration(i%5) * 100 * time.Millisecond
		}
		w := newWeb(t, time.Millisecond, every)
		f := &frontier.Frontier{Turns: w}
		// The first URL of each site; each page links to the next.
		for i := range sites {
			f.Push("http://s" + strconv.Itoa(i) + ".test/0")
		}
		var wg sync.WaitGroup
		for range 12 {
			wg.Go(func() {
				for {
					u, err := f.Next(t.Context())
					if err == frontier.ErrEmpty {
						return
					}
					if err != nil {
						t.Error(err)
						return
					}
					w.send(u)
					host, page, _ := strings.Cut(strings.TrimPrefix(u, "http://"), "/")
					if n, _ := strconv.Atoi(page); n+1 < perSite {
						if err := f.Push("http://" + host + "/" + strconv.Itoa(n+1)); err != nil {
							t.Error(err)
						}
					}
					f.Done(u, nil)
				}
			})
		}
		wg.Wait()
		if len(w.sent) != sites*perSite {
			t.Errorf("%d sent, want %d", len(w.sent), sites*perSite)
		}
	})
}

// TestNextCancel: a Next that waits returns when its context is done, with
// its error, and leaves nothing behind (synctest would report a goroutine
// left blocked); the others go on.
func TestNextCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var f frontier.Frontier
		f.Push("http://a.test/1")
		f.Push("http://a.test/2")
		u, _ := f.Next(t.Context())
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		errs := make(chan error, 3)
		for range 3 {
			go func() {
				_, err := f.Next(ctx)
				errs <- err
			}()
		}
		for range 3 {
			if err := <-errs; err != context.DeadlineExceeded {
				t.Errorf("Next = %v, want context.DeadlineExceeded", err)
			}
		}
		got := make(chan string)
		go func() {
			u, _ := f.Next(t.Context())
			got <- u
		}()
		synctest.Wait()
		f.Done(u, nil)
		if u := <-got; u != "http://a.test/2" {
			t.Errorf("Next = %q, want a.test/2", u)
		}
	})
}

// TestFleet splits a crawl between two frontiers, as two processes of a
// fleet would, by a hash of each URL's origin: each site is crawled by one
// of them, every URL once, and a site never has two URLs out, though both
// send through one web.
func TestFleet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		every := map[string]time.Duration{}
		var urls []string
		for i := range 30 {
			h := "s" + strconv.Itoa(i) + ".test"
			every[h] = time.Duration(i%3) * time.Second
			for p := range 4 {
				urls = append(urls, "http://"+h+"/"+strconv.Itoa(p))
			}
		}
		w := newWeb(t, 5*time.Millisecond, every)
		fleet := []*frontier.Frontier{{Turns: w}, {Turns: w}}
		for _, u := range urls {
			origin, err := frontier.Origin(u)
			if err != nil {
				t.Fatal(err)
			}
			fleet[owner(origin, len(fleet))].Push(u)
		}
		for i, f := range fleet {
			if f.Len() == 0 {
				t.Fatalf("process %d has nothing to crawl", i)
			}
		}
		var wg sync.WaitGroup
		for _, f := range fleet {
			wg.Go(func() { crawl(t, f, w, 4) })
		}
		wg.Wait()
		if len(w.sent) != len(urls) {
			t.Errorf("%d sent, want %d", len(w.sent), len(urls))
		}
	})
}

// owner returns which of n processes crawls origin: FNV-1a of the origin,
// modulo n.
func owner(origin string, n int) int {
	h := uint32(2166136261)
	for i := 0; i < len(origin); i++ {
		h = (h ^ uint32(origin[i])) * 16777619
	}
	return int(h % uint32(n))
}
