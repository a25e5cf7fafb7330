package robots

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/f9014239/robots/fleet"
	"github.com/f9014239/robots/internal/pacing"
)

// recPacer is a Memory Pacer that records every call after an answer and
// takes delay over each of them, so that calls made on goroutines of their
// own are still under way when RoundTrip returns.
type recPacer struct {
	pacing.Memory
	delay time.Duration

	mu       sync.Mutex
	answers  []fleet.Answer
	pauses   []string
	pushes   int
	calls    int // calls begun
	inFlight int // calls begun and not returned
}

func (p *recPacer) begin() {
	p.mu.Lock()
	p.calls++
	p.inFlight++
	p.mu.Unlock()
}

func (p *recPacer) end() {
	p.mu.Lock()
	p.inFlight--
	p.mu.Unlock()
}

func (p *recPacer) Release(ctx context.Context, origin string, a fleet.Answer) error {
	p.begin()
	defer p.end()
	time.Sleep(p.delay)
	p.mu.Lock()
	p.answers = append(p.answers, a)
	p.mu.Unlock()
	return p.Memory.Release(ctx, origin, a)
}

func (p *recPacer) Pause(ctx context.Context, origin string, until time.Time, why string) error {
	p.begin()
	defer p.end()
	time.Sleep(p.delay)
	p.mu.Lock()
	p.pauses = append(p.pauses, why)
	p.mu.Unlock()
	return p.Memory.Pause(ctx, origin, until, why)
}

func (p *recPacer) PushBack(ctx context.Context, origin string, sent time.Time, b fleet.Backoff) (time.Time, error) {
	p.begin()
	defer p.end()
	time.Sleep(p.delay)
	p.mu.Lock()
	p.pushes++
	p.mu.Unlock()
	return p.Memory.PushBack(ctx, origin, sent, b)
}

// snapshot returns the calls begun and under way.
func (p *recPacer) snapshot() (calls, inFlight int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls, p.inFlight
}

func (p *recPacer) answered() []fleet.Answer {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]fleet.Answer(nil), p.answers...)
}

// recStore is a MemoryStore whose Put takes delay and is counted.
type recStore struct {
	fleet.MemoryStore
	delay time.Duration
	puts  atomic.Int64
	busy  atomic.Int64
}

func (s *recStore) Put(ctx context.Context, origin string, e *fleet.Entry) error {
	s.busy.Add(1)
	defer s.busy.Add(-1)
	time.Sleep(s.delay)
	s.puts.Add(1)
	return s.MemoryStore.Put(ctx, origin, e)
}

// site is a fake server as a RoundTripper: robots.txt after robotsDelay,
// pages after pageDelay, with a status and header a page may choose; it
// logs the arrival of each page and whether its context was live then.
type atkSite struct {
	robotsDelay, pageDelay time.Duration
	robots                 string
	page                   func(req *http.Request) (int, http.Header)

	mu       sync.Mutex
	arrivals []time.Time
	paths    []string
	deadOnes int // pages that arrived with their context done
}

func (s *atkSite) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	d := s.pageDelay
	status, hdr := 200, http.Header{}
	body := "page"
	if req.URL.Path == "/robots.txt" {
		d, body = s.robotsDelay, s.robots
		if body == "" {
			body = "User-agent: *\nDisallow: /private\n"
		}
	} else {
		s.mu.Lock()
		s.arrivals = append(s.arrivals, time.Now())
		s.paths = append(s.paths, req.URL.Path)
		if ctx.Err() != nil {
			s.deadOnes++
		}
		s.mu.Unlock()
		if s.page != nil {
			status, hdr = s.page(req)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err // as net/http's Transport does
	}
	if d > 0 {
		timer := time.NewTimer(d)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		}
	}
	return &http.Response{StatusCode: status, Header: hdr, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

func (s *atkSite) arrived(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, p := range s.paths {
		if p == path {
			n++
		}
	}
	return n
}

func (s *atkSite) pages() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.arrivals...)
}

// TestFlushAttackOwedCalls: requests under MaxWait (the Transport's, and
// WithMaxWait's) whose answers pause the origin (RateLimit), push back
// (429 without Retry-After) or only release their turn, on a Pacer whose
// every call takes a second, and fetches of robots.txt their callers gave
// up on, into a Store whose Put takes a second: once Flush returns, no call
// is under way and none begins afterwards.
func TestFlushAttackOwedCalls(t *testing.T) {
	for _, perRequest := range []bool{false, true} {
		t.Run(fmt.Sprintf("WithMaxWait=%v", perRequest), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &recPacer{delay: time.Second}
				store := &recStore{delay: time.Second}
				var n atomic.Int64
				base := &atkSite{robotsDelay: 3 * time.Second, pageDelay: 100 * time.Millisecond,
					page: func(req *http.Request) (int, http.Header) {
						switch n.Add(1) % 3 {
						case 0:
							return 200, http.Header{"Ratelimit": {`"d";r=0;t=5`}}
						case 1:
							return 429, http.Header{}
						}
						return 200, http.Header{}
					}}
				tr := &Transport{Base: base, Agent: "ExampleBot", Pacer: p, Store: store}
				ctxOf := func() context.Context { return WithMaxWait(t.Context(), 2*time.Hour) }
				if !perRequest {
					tr.MaxWait = 2 * time.Hour
					ctxOf = t.Context
				}
				client := &http.Client{Transport: tr}
				var wg sync.WaitGroup
				for o := range 4 {
					wg.Go(func() {
						// A caller that gives up on robots.txt at once.
						short, cancel := context.WithTimeout(ctxOf(), time.Second)
						getCtx(short, client, fmt.Sprintf("https://o%d.example/gaveup", o))
						cancel()
						for i := range 4 {
							getCtx(ctxOf(), client, fmt.Sprintf("https://o%d.example/p%d", o, i))
						}
					})
				}
				wg.Wait()
				if err := tr.Flush(t.Context()); err != nil {
					t.Fatal(err)
				}
				calls, busy := p.snapshot()
				if busy != 0 || store.busy.Load() != 0 {
					t.Fatalf("Flush returned with %d Pacer calls and %d Puts under way", busy, store.busy.Load())
				}
				puts := store.puts.Load()
				time.Sleep(time.Hour)
				synctest.Wait()
				if c, _ := p.snapshot(); c != calls || store.puts.Load() != puts {
					t.Fatalf("after Flush, %d more Pacer calls and %d more Puts began", c-calls, store.puts.Load()-puts)
				}
				if calls == 0 || puts < 4 {
					t.Fatalf("%d Pacer calls, %d Puts: the test proves nothing", calls, puts)
				}
				if len(p.pauses) == 0 || p.pushes == 0 {
					t.Fatalf("pauses %v, pushbacks %d: the test proves nothing", p.pauses, p.pushes)
				}
			})
		})
	}
}

// TestFlushAttackConcurrent: Flush called while requests keep coming, from
// many goroutines, returns (never hangs) and leaks no goroutine (synctest
// fails the test if one outlives it).
func TestFlushAttackConcurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &recPacer{delay: 1500 * time.Millisecond}
		base := &atkSite{pageDelay: 10 * time.Millisecond,
			page: func(*http.Request) (int, http.Header) {
				return 200, http.Header{"Ratelimit": {`"d";r=0;t=1`}}
			}}
		tr := &Transport{Base: base, Agent: "ExampleBot", Pacer: p, MaxWait: time.Minute}
		client := &http.Client{Transport: tr}
		var wg sync.WaitGroup
		for w := range 3 {
			wg.Go(func() {
				for i := range 10 {
					getCtx(t.Context(), client, fmt.Sprintf("https://w%d.example/p%d", w, i))
				}
			})
			wg.Go(func() {
				for range 10 {
					ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
					if err := tr.Flush(ctx); err != nil {
						t.Errorf("Flush: %v", err)
					}
					cancel()
					time.Sleep(700 * time.Millisecond)
				}
			})
		}
		wg.Wait()
		if err := tr.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		if _, busy := p.snapshot(); busy != 0 {
			t.Fatalf("%d calls under way after Flush", busy)
		}
	})
}

// slowFirst makes the first page of a site answer after 2 s, so that the
// Pacer's estimate of it is 2 s.
const slowEstimate = 2 * time.Second

// TestCancelAttackStages: a request cancelled while it waits for its
// turn, at each stage (for a request of the same process in flight, for a
// turn the Pacer granted ahead, for a turn held by another user of the
// Pacer, for a fetch of robots.txt), is released as unsent if it took a
// turn, never as an answer, and leaves the Pacer's estimate of a slow site
// where it was. Nothing reaches the site.
func TestCancelAttackStages(t *testing.T) {
	const origin = "https://slow.example"
	stages := []struct {
		name string
		// run sets the stage, then sends the request to cancel, cancels
		// it after the returned delay, and waits for the stage to end
		run func(t *testing.T, client, other *http.Client, cancelIn *time.Duration)
	}{
		{"in flight in memory", func(t *testing.T, client, other *http.Client, cancelIn *time.Duration) {
			// another request of this Transport is in flight 2 s
			time.Sleep(10 * time.Second)
			go getCtx(t.Context(), client, origin+"/busy")
			*cancelIn = time.Second
		}},
		{"turn granted ahead", func(t *testing.T, client, other *http.Client, cancelIn *time.Duration) {
			// the other Transport's answer came just now: the Pacer's
			// turn is 2×2 s away, which this Transport's memory does
			// not know, so the Pacer grants it ahead
			time.Sleep(10 * time.Second)
			getCtx(t.Context(), other, origin+"/busy")
			*cancelIn = time.Second
		}},
		{"interval in memory", func(t *testing.T, client, other *http.Client, cancelIn *time.Duration) {
			// this Transport's own answer came just now: it waits out
			// the interval it knows before it asks the Pacer
			*cancelIn = time.Second
		}},
		{"in flight in the Pacer", func(t *testing.T, client, other *http.Client, cancelIn *time.Duration) {
			time.Sleep(10 * time.Second)
			go getCtx(t.Context(), other, origin+"/busy")
			*cancelIn = time.Second
		}},
	}
	for _, st := range stages {
		t.Run(st.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &recPacer{}
				store := &fleet.MemoryStore{}
				base := &atkSite{pageDelay: slowEstimate}
				tr := &Transport{Base: base, Agent: "ExampleBot", Pacer: p, Store: store}
				other := &Transport{Base: base, Agent: "ExampleBot", Pacer: p, Store: store}
				client := &http.Client{Transport: tr}
				if err := get(client, origin+"/first"); err != nil {
					t.Fatal(err)
				}
				// other reads robots.txt from the Store
				if _, err := other.Origin(t.Context(), mustURL(origin+"/")); err != nil {
					t.Fatal(err)
				}
				est := p.Estimate(origin)
				if est < slowEstimate {
					t.Fatalf("estimate %v after a 2 s answer", est)
				}
				nAnswers := len(p.answered())
				var cancelIn time.Duration
				st.run(t, client, &http.Client{Transport: other}, &cancelIn)
				synctest.Wait()
				ctx, cancel := context.WithCancel(t.Context())
				time.AfterFunc(cancelIn, cancel)
				err := getCtx(ctx, client, origin+"/cancelled")
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("cancelled request: %v", err)
				}
				time.Sleep(time.Minute)
				if err := tr.Flush(t.Context()); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				if got := base.arrived("/cancelled"); got != 0 {
					t.Errorf("the cancelled request reached the site (%d)", got)
				}
				unsent := 0
				for _, a := range p.answered()[nAnswers:] {
					if a.Unsent {
						unsent++
					} else if a.Took < time.Second {
						t.Errorf("the Pacer heard an answer %+v that no request got", a)
					}
				}
				if st.name == "turn granted ahead" && unsent != 1 {
					t.Errorf("%d turns released as unsent; want the cancelled one's", unsent)
				}
				if got := p.Estimate(origin); got < est {
					t.Errorf("estimate %v after the cancel; was %v", got, est)
				}
			})
		})
	}
}

// TestCancelAttackRobotsTxtWait: a request cancelled while it waits for
// its origin's robots.txt takes no turn; the fetch goes on, and the Pacer
// hears of that fetch's answer only.
func TestCancelAttackRobotsTxtWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &recPacer{}
		base := &atkSite{robotsDelay: 5 * time.Second}
		tr := &Transport{Base: base, Agent: "ExampleBot", Pacer: p, MaxWait: time.Hour}
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		err := getCtx(ctx, &http.Client{Transport: tr}, "https://r.example/page")
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled request: %v", err)
		}
		if err := tr.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		if len(base.pages()) != 0 {
			t.Error("the cancelled page reached the site")
		}
		as := p.answered()
		if len(as) != 1 || as[0].Unsent || as[0].Took != 5*time.Second {
			t.Errorf("the Pacer heard %+v; want the fetch's answer alone, after 5 s", as)
		}
		// the origin is usable: robots.txt is known, the next request goes
		if err := get(&http.Client{Transport: tr}, "https://r.example/page"); err != nil {
			t.Fatal(err)
		}
	})
}

// TestLateAnswerAttackShared: a request of Transport a answered after its
// TurnTimeout (a 30 s answer, a 5 s hold) pauses its origin for the spacing
// after that answer (twice the 30 s it took) in a and in the Pacer: b,
// which shares the Pacer and the Store and sends meanwhile, sends nothing
// to the site in the minute after the late answer, nor does a. Under MaxWait
// (release on a goroutine) too.
func TestLateAnswerAttackShared(t *testing.T) {
	for _, maxWait := range []time.Duration{0, 10 * time.Minute} {
		t.Run(fmt.Sprintf("MaxWait=%v", maxWait), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const origin = "https://late.example"
				p := &recPacer{}
				store := &fleet.MemoryStore{}
				base := &atkSite{page: func(req *http.Request) (int, http.Header) {
					return 200, http.Header{}
				}}
				var slow atkSite
				slow.pageDelay = 30 * time.Second
				var late atomic.Bool
				rt := rtFunc(func(req *http.Request) (*http.Response, error) {
					if req.URL.Path == "/late" {
						late.Store(true)
						return slow.RoundTrip(req)
					}
					return base.RoundTrip(req)
				})
				a := &Transport{Base: rt, Agent: "ExampleBot", Pacer: p, Store: store, TurnTimeout: 5 * time.Second, MaxWait: maxWait}
				b := &Transport{Base: rt, Agent: "ExampleBot", Pacer: p, Store: store, TurnTimeout: 5 * time.Second, MaxWait: maxWait}
				ca, cb := &http.Client{Transport: a}, &http.Client{Transport: b}
				if err := get(ca, origin+"/first"); err != nil {
					t.Fatal(err)
				}
				if _, err := b.Origin(t.Context(), mustURL(origin+"/")); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Minute)
				var answered time.Time
				done := make(chan struct{})
				go func() {
					defer close(done)
					if err := get(ca, origin+"/late"); err != nil {
						t.Error(err)
					}
					answered = time.Now()
				}()
				// b sends all along, waiting for its turns
				stop := time.Now().Add(5 * time.Minute)
				for i := 0; time.Now().Before(stop); i++ {
					ctx, cancel := context.WithDeadline(t.Context(), stop)
					getCtx(ctx, cb, fmt.Sprintf("%s/b%d", origin, i))
					cancel()
					time.Sleep(100 * time.Millisecond)
				}
				<-done
				// and a once more
				if err := get(ca, origin+"/after"); err != nil {
					t.Fatal(err)
				}
				a.Flush(t.Context())
				b.Flush(t.Context())
				if !late.Load() {
					t.Fatal("no late request")
				}
				n := 0
				for _, at := range base.pages() {
					if at.After(answered) {
						n++
						if at.Sub(answered) < time.Minute {
							t.Errorf("a request reached the site %v after the late answer; want a minute", at.Sub(answered))
						}
					}
				}
				if n == 0 {
					t.Fatal("no request after the late answer: the test proves nothing")
				}
			})
		})
	}
}

// basicPacer hides Memory's PausedUntil: a Pacer that is neither a
// PauseChecker nor a PauseWatcher, whose only word is Reserve's.
type basicPacer struct{ m *pacing.Memory }

func (p basicPacer) Reserve(ctx context.Context, o string, r fleet.TurnRequest) (fleet.Turn, error) {
	return p.m.Reserve(ctx, o, r)
}
func (p basicPacer) Release(ctx context.Context, o string, a fleet.Answer) error {
	return p.m.Release(ctx, o, a)
}
func (p basicPacer) Pause(ctx context.Context, o string, u time.Time, why string) error {
	return p.m.Pause(ctx, o, u, why)
}
func (p basicPacer) PushBack(ctx context.Context, o string, s time.Time, b fleet.Backoff) (time.Time, error) {
	return p.m.PushBack(ctx, o, s, b)
}

// watcherPacer is a Memory Pacer that is also a PauseWatcher whose copy
// is always fresh.
type watcherPacer struct{ *pacing.Memory }

func (p watcherPacer) WatchedPause(origin string) (time.Time, string, bool) {
	until, why, _ := p.Memory.PausedUntil(context.Background(), origin)
	return until, why, true
}

// TestPauseReasonAttack: a RateLimit pause set by one Transport is reported
// as "ratelimit" by a second sharing its Pacer and Store, whether the Pacer
// can be asked about pauses or only answers Reserve, with MaxWait or a
// deadline refusing; a Retry-After pause as "retry-after".
func TestPauseReasonAttack(t *testing.T) {
	for _, kind := range []string{"checker", "basic", "watcher", "watcher-nopace"} {
		for _, hdr := range []struct {
			h    http.Header
			want string
		}{
			{http.Header{"Ratelimit": {`"d";r=0;t=50`}}, ReasonRateLimit},
			{http.Header{"Retry-After": {"50"}}, ReasonRetryAfter},
		} {
			t.Run(kind+"/"+hdr.want, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					m := &pacing.Memory{}
					var p fleet.Pacer = m
					switch kind {
					case "basic":
						p = basicPacer{m}
					case "watcher", "watcher-nopace":
						p = watcherPacer{m}
					}
					nopace := kind == "watcher-nopace"
					store := &fleet.MemoryStore{}
					status := 200
					if hdr.want == ReasonRetryAfter {
						status = 429
					}
					base := &atkSite{page: func(*http.Request) (int, http.Header) { return status, hdr.h }}
					first := &Transport{Base: base, Agent: "ExampleBot", Pacer: p, Store: store}
					get(&http.Client{Transport: first}, "https://rl.example/page")
					second := &Transport{Base: base, Agent: "ExampleBot", Pacer: p, Store: store, MaxWait: time.Second, NoDefaultPace: nopace}
					err := get(&http.Client{Transport: second}, "https://rl.example/page")
					if te, ok := errors.AsType[*TurnError](err); !ok || te.Reason != hdr.want {
						t.Errorf("MaxWait: %v; want a TurnError for %q", err, hdr.want)
					}
					third := &Transport{Base: base, Agent: "ExampleBot", Pacer: p, Store: store, NoDefaultPace: nopace}
					ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
					defer cancel()
					err = getCtx(ctx, &http.Client{Transport: third}, "https://rl.example/page")
					if te, ok := errors.AsType[*TurnError](err); !ok || te.Reason != hdr.want || !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("deadline: %v; want a TurnError for %q", err, hdr.want)
					}
					if len(base.pages()) != 1 {
						t.Errorf("%d pages reached the site during the pause", len(base.pages()))
					}
				})
			})
		}
	}
}

// capFarm is a fake server behind many origins that counts the requests in
// flight per group (groupOf of the origin), as the servers see them, and
// the most at once. A page's path says how it answers: /r… redirects to
// another origin's page, /t… is a 429 without Retry-After; each takes
// latency (by path length) and gives up when its context ends.
type capFarm struct {
	groupOf func(origin string) string

	mu         sync.Mutex
	fly, most  map[string]int
	robots     int
	redirected int
}

func (f *capFarm) RoundTrip(req *http.Request) (*http.Response, error) {
	origin := req.URL.Scheme + "://" + req.URL.Host
	g := f.groupOf(origin)
	f.mu.Lock()
	if f.fly == nil {
		f.fly, f.most = map[string]int{}, map[string]int{}
	}
	f.fly[g]++
	f.most[g] = max(f.most[g], f.fly[g])
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.fly[g]--
		f.mu.Unlock()
	}()
	p := req.URL.Path
	lat := time.Duration(len(p)%5) * 300 * time.Millisecond
	timer := time.NewTimer(lat)
	select {
	case <-timer.C:
	case <-req.Context().Done():
		timer.Stop()
		return nil, req.Context().Err()
	}
	status, hdr, body := 200, http.Header{}, "page"
	switch {
	case p == "/robots.txt":
		f.mu.Lock()
		f.robots++
		f.mu.Unlock()
		body = "User-agent: *\nDisallow: /private\n"
	case strings.HasPrefix(p, "/r"):
		f.mu.Lock()
		f.redirected++
		f.mu.Unlock()
		status = http.StatusMovedPermanently
		hdr.Set("Location", "https://o"+fmt.Sprint(len(p)*7%50)+".example.com/landed")
	case strings.HasPrefix(p, "/t"):
		status = http.StatusTooManyRequests
	}
	return &http.Response{StatusCode: status, Header: hdr, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

func (f *capFarm) mostOf(g string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.most[g]
}

// TestGroupCapAttackMix: 50 origins of one registrable domain, under a mix
// of callers that cancel, give MaxWait or deadlines, follow redirects
// across the domain and meet 429s, robots.txt fetched by each, never have
// more than DomainCap requests in flight together at the servers; and once
// everything has settled, a fresh request to each origin goes through: no
// room was leaked.
func TestGroupCapAttackMix(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &capFarm{groupOf: func(string) string { return "example.com" }}
		tr := &Transport{Base: f, Agent: "ExampleBot", Backoff: Backoff{First: time.Second, Max: time.Minute}}
		client := &http.Client{Transport: tr}
		paths := []string{"/p", "/r1", "/t", "/pp", "/rr22", "/ppp", "/t333", "/p4"}
		var wg sync.WaitGroup
		for o := range 50 {
			wg.Go(func() {
				for i, p := range paths {
					var ctx context.Context
					var cancel context.CancelFunc
					switch (o + i) % 4 {
					case 0:
						ctx, cancel = context.WithCancel(t.Context())
						time.AfterFunc(time.Duration(o*i%7)*400*time.Millisecond, cancel)
					case 1:
						ctx, cancel = context.WithCancel(WithMaxWait(t.Context(), time.Duration(o%3)*time.Second))
					case 2:
						ctx, cancel = context.WithTimeout(t.Context(), time.Duration(1+o%5)*time.Second)
					default:
						ctx, cancel = context.WithCancel(t.Context())
					}
					getCtx(ctx, client, fmt.Sprintf("https://o%d.example.com%s", o, p))
					cancel()
				}
			})
		}
		wg.Wait()
		if err := tr.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := f.mostOf("example.com"); got != DefaultDomainCap {
			t.Errorf("at most %d requests in flight to the domain; want %d", got, DefaultDomainCap)
		}
		if f.redirected == 0 || f.robots < 50 {
			t.Fatalf("%d redirects, %d robots.txt: the test proves nothing", f.redirected, f.robots)
		}
		time.Sleep(time.Hour)
		var errs atomic.Int64
		for o := range 50 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
				defer cancel()
				if err := getCtx(ctx, client, fmt.Sprintf("https://o%d.example.com/fresh", o)); err != nil {
					if errs.Add(1) == 1 {
						t.Errorf("a fresh request after everything settled: %v", err)
					}
				}
			})
		}
		wg.Wait()
		if f.mostOf("example.com") > DefaultDomainCap {
			t.Errorf("at most %d requests in flight to the domain; want %d", f.mostOf("example.com"), DefaultDomainCap)
		}
		if err := tr.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestGroupCapAttackSettings: NoDomainCap lets 50 origins of one domain
// have more than DefaultDomainCap in flight; GroupOf that returns "" puts
// each origin alone; GroupOf that names one group for two domains caps
// them together at DomainCap.
func TestGroupCapAttackSettings(t *testing.T) {
	origins := func() []string {
		var os []string
		for o := range 25 {
			os = append(os, fmt.Sprintf("https://o%d.example.com", o), fmt.Sprintf("https://o%d.example.org", o))
		}
		return os
	}()
	for _, c := range []struct {
		name    string
		set     func(*Transport)
		group   func(string) string // the farm's grouping
		atLeast int
		atMost  int
	}{
		{"NoDomainCap", func(t *Transport) { t.NoDomainCap = true }, func(o string) string { return o[strings.Index(o, ".")+1:] }, DefaultDomainCap + 1, 25},
		{"GroupOf empty", func(t *Transport) { t.GroupOf = func(string) string { return "" } }, func(o string) string { return o[strings.Index(o, ".")+1:] }, DefaultDomainCap + 1, 25},
		{"GroupOf one", func(t *Transport) { t.GroupOf = func(string) string { return "all" }; t.DomainCap = 3 }, func(string) string { return "all" }, 3, 3},
		{"DomainCap 2", func(t *Transport) { t.DomainCap = 2 }, func(o string) string { return o[strings.Index(o, ".")+1:] }, 2, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &capFarm{groupOf: c.group}
				tr := &Transport{Base: f, Agent: "ExampleBot"}
				c.set(tr)
				client := &http.Client{Transport: tr}
				var wg sync.WaitGroup
				for _, o := range origins {
					wg.Go(func() {
						for i := range 3 {
							if err := getCtx(t.Context(), client, fmt.Sprintf("%s/pp%d", o, i)); err != nil {
								t.Error(err)
							}
						}
					})
				}
				wg.Wait()
				for _, g := range []string{"example.com", "example.org", "all"} {
					if n := f.mostOf(g); n > c.atMost {
						t.Errorf("%s: %d in flight at once; want at most %d", g, n, c.atMost)
					}
				}
				most := max(f.mostOf("example.com"), f.mostOf("all"))
				if most < c.atLeast {
					t.Errorf("at most %d in flight at once; want %d at least", most, c.atLeast)
				}
			})
		})
	}
}

// hangingReserve is a recPacer whose Reserve commits the turn, then hangs
// until its context ends (a remote Pacer whose answer is lost on the way
// back), for the origins in hang.
type hangingReserve struct {
	*recPacer
	hang    atomic.Bool
	reserve atomic.Int64
}

func (p *hangingReserve) Reserve(ctx context.Context, origin string, r fleet.TurnRequest) (fleet.Turn, error) {
	p.reserve.Add(1)
	turn, err := p.recPacer.Reserve(ctx, origin, r)
	if err != nil || !p.hang.Load() {
		return turn, err
	}
	<-ctx.Done()
	return fleet.Turn{}, ctx.Err()
}

// TestFlushAttackLostReserve: a Reserve that took a held turn in the Pacer
// but whose answer never came back, cut short by MaxWait, by WithMaxWait or
// by the caller's cancel, is released as unsent by the time Flush returns:
// the Pacer's estimate of the slow site is unchanged and another Transport
// on the Pacer gets its turn at the interval, not after TurnTimeout.
func TestFlushAttackLostReserve(t *testing.T) {
	for _, how := range []string{"MaxWait", "WithMaxWait", "cancel"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const origin = "https://slow.example"
				p := &hangingReserve{recPacer: &recPacer{delay: 500 * time.Millisecond}}
				store := &fleet.MemoryStore{}
				base := &atkSite{pageDelay: slowEstimate}
				tr := &Transport{Base: base, Agent: "ExampleBot", Pacer: p, Store: store, TurnTimeout: time.Hour}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				switch how {
				case "MaxWait":
					tr.MaxWait = 5 * time.Second
				case "WithMaxWait":
					ctx = WithMaxWait(ctx, time.Second)
				case "cancel":
					time.AfterFunc(time.Minute+time.Second, cancel)
				}
				client := &http.Client{Transport: tr}
				if err := get(client, origin+"/first"); err != nil {
					t.Fatal(err)
				}
				if err := tr.Flush(t.Context()); err != nil {
					t.Fatal(err)
				}
				est := p.Estimate(origin)
				time.Sleep(time.Minute)
				n := len(p.answered())
				p.hang.Store(true)
				err := getCtx(ctx, client, origin+"/lost")
				if err == nil {
					t.Fatal("a request whose Reserve hung was sent")
				}
				p.hang.Store(false)
				if err := tr.Flush(t.Context()); err != nil {
					t.Fatal(err)
				}
				as := p.answered()[n:]
				if len(as) != 1 || !as[0].Unsent {
					t.Fatalf("the Pacer heard %+v; want one Unsent release", as)
				}
				if got := p.Estimate(origin); got != est {
					t.Errorf("estimate %v; was %v", got, est)
				}
				other := &Transport{Base: base, Agent: "ExampleBot", Pacer: p, Store: store}
				start := time.Now()
				if err := get(&http.Client{Transport: other}, origin+"/other"); err != nil {
					t.Fatal(err)
				}
				if waited := time.Since(start); waited > 2*2*slowEstimate+time.Second {
					t.Errorf("another Transport waited %v for its turn: the lost turn held the origin", waited)
				}
			})
		})
	}
}

// TestGroupCapAttackAddress: 30 origins of 30 registrable domains on one
// address, AddressCap 4, answering 429 to one page in five and cancelled
// by their callers now and then: the address never has more than 4 in
// flight after each origin's first request (uncapped by design), its cap
// halves on the 429s, and once everything has settled a
// fresh request to each origin goes through.
func TestGroupCapAttackAddress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &farm{addrOf: func(string) netip.Addr { return oneAddr },
			latency: func(_, p string) time.Duration { return time.Duration(len(p)%4) * 200 * time.Millisecond },
			status: func(_, p string) int {
				if strings.HasSuffix(p, "3") {
					return 429
				}
				return 200
			}}
		tr := NewTransport(f, "ExampleBot")
		tr.learnThroughAnyBase()
		tr.AddressCap = 4
		tr.Backoff = Backoff{First: time.Second, Max: time.Minute}
		client := &http.Client{Transport: tr}
		var wg sync.WaitGroup
		// An origin's first request (its robots.txt) is not capped by
		// address: the address is learned from it (doc/pacing.md). They
		// go first, and the count starts after them.
		for o := range 30 {
			wg.Go(func() {
				if _, err := tr.Origin(t.Context(), mustURL(fmt.Sprintf("https://s.site%d.example/", o))); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		f.mu.Lock()
		clear(f.addrMost)
		f.mu.Unlock()
		for o := range 30 {
			wg.Go(func() {
				for i := range 10 {
					ctx, cancel := context.WithCancel(t.Context())
					if (o+i)%3 == 0 {
						time.AfterFunc(time.Duration(i)*100*time.Millisecond, cancel)
					}
					getCtx(ctx, client, fmt.Sprintf("https://s.site%d.example/p%d", o, i))
					cancel()
				}
			})
		}
		wg.Wait()
		if err := tr.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := f.mostAt(oneAddr); got > 4 || got < 2 {
			t.Errorf("%d in flight at the address; want 2 to 4", got)
		}
		if tr.Stats().AddressHalvings == 0 {
			t.Error("no halving after 429s")
		}
		time.Sleep(time.Hour)
		var errs atomic.Int64
		for o := range 30 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
				defer cancel()
				if err := getCtx(ctx, client, fmt.Sprintf("https://s.site%d.example/fresh", o)); err != nil && errs.Add(1) == 1 {
					t.Errorf("a fresh request after everything settled: %v", err)
				}
			})
		}
		wg.Wait()
		if got := f.mostAt(oneAddr); got > 4 {
			t.Errorf("%d in flight at the address; want 4 at most", got)
		}
	})
}

// TestGroupCapAttackWakeCancelled: under DomainCap 1, the waiter a freed
// slot wakes is cancelled at that very instant (and, in other runs, just
// before or after): the wake passes on, and every other waiter gets its
// room; nothing is left blocked (synctest would report a deadlock).
func TestGroupCapAttackWakeCancelled(t *testing.T) {
	for i := range 60 {
		synctest.Test(t, func(t *testing.T) {
			f := &capFarm{groupOf: func(string) string { return "example.com" }}
			tr := &Transport{Base: f, Agent: "ExampleBot", DomainCap: 1}
			client := &http.Client{Transport: tr}
			for o := range 5 {
				if _, err := tr.Origin(t.Context(), mustURL(fmt.Sprintf("https://w%d.example.com/", o))); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(time.Minute)
			var wg sync.WaitGroup
			// holder: in flight 1.2 s (path length 4 → 4%5×300 ms)
			wg.Go(func() { getCtx(t.Context(), client, "https://w0.example.com/abc") })
			synctest.Wait()
			var sent atomic.Int64
			for o := 1; o < 5; o++ {
				wg.Go(func() {
					ctx, cancel := context.WithCancel(t.Context())
					defer cancel()
					if o <= 2 {
						// cancelled around when the holder's answer comes
						time.AfterFunc(1200*time.Millisecond+time.Duration(i%3-1)*time.Duration(o-1), cancel)
					}
					if getCtx(ctx, client, fmt.Sprintf("https://w%d.example.com/p", o)) == nil {
						sent.Add(1)
					}
				})
			}
			wg.Wait()
			if sent.Load() < 2 {
				t.Errorf("run %d: %d of the waiters not cancelled were sent; want 2", i, sent.Load())
			}
			if f.mostOf("example.com") > 1 {
				t.Errorf("run %d: %d in flight; want 1", i, f.mostOf("example.com"))
			}
		})
	}
}
