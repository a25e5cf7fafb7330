package frontier

import (
	"cmp"
	"container/heap"
	"context"
	"hash/maphash"
	"maps"
	"math"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/f9014239/robots"
)

// Turns tells when a request for a URL could be sent, without sending it or
// taking a turn. [*robots.Transport] implements it with its NextTurn method.
type Turns interface {
	NextTurn(ctx context.Context, u *url.URL) (time.Time, error)
}

// askMaxWait bounds how long Done waits for Turns: with a
// [robots.Transport], NextTurn then never waits for a fetch of robots.txt
// (only an expired copy needs one), and says instead when the fetch could
// be done.
const askMaxWait = time.Millisecond

// DefaultProbes is the default for Frontier.Probes. A probe mostly waits
// for the network (a site that never answers holds one for the Transport's
// FetchTimeout), so that fewer at once leave the crawl's first seconds to
// the slowest sites: what it bounds is the connections open at once.
const DefaultProbes = 256

// probeTimeout bounds a probe: Turns' answer for a new site, which waits
// for its robots.txt.
const probeTimeout = time.Minute

// Frontier holds the URLs of a crawl in one queue per site (origin) and
// hands out, with Next, the head of a site's queue once the site may be
// sent a request: when it has no request out, and its turn has come.
//
// The zero Frontier is ready to use and offers a site again as soon as its
// request is Done. Set Turns before first use to offer it at its next turn
// instead.
//
// A Frontier is safe for concurrent use by multiple goroutines.
type Frontier struct {
	// Turns, if not nil, is asked when a site's request is Done when the
	// site's next turn is; the site is offered then. A crawl should set
	// it to the [*robots.Transport] its requests go through.
	//
	// A new site is offered once Turns has told its first turn, which a
	// [*robots.Transport] tells once it has fetched the site's robots.txt
	// (see the package doc, Probes).
	Turns Turns

	// Probes, if positive, is how many new sites the Frontier asks Turns
	// about at once, each on a goroutine of its own until Turns answers.
	// If zero, DefaultProbes is used.
	Probes int

	// MaxRetries is how many times Answered queues again a URL whose
	// answer the site deferred (see Answered) before it gives up on it.
	// If zero, DefaultMaxRetries is used; if negative, none is retried:
	// Answered gives up a deferred URL at once.
	MaxRetries int

	// RetryDelay is the least time between a deferred answer and its
	// first retry; it doubles at each retry of the URL, up to
	// MaxRetryDelay. The retry waits longer if its site's turn is later
	// (a Retry-After pause, the Transport's back-off). If zero,
	// DefaultRetryDelay is used.
	RetryDelay time.Duration

	mu     sync.Mutex
	sites  map[string]*site // by origin: those with a URL queued or out, or a turn to wait for
	in     set              // the hash (with seed) of every URL queued or out
	seed   maphash.Seed
	out    map[string]*site // every URL out, and its site
	timed  timedHeap        // sites waiting for their turn (some with no URL: see site)
	ready  readyHeap        // sites that may be offered now, longest chain first
	fresh  readyHeap        // new sites to ask Turns about, most URLs first
	probes int              // new sites Turns is being asked about
	// waiters are the calls of Next that wait, in the order they came;
	// the first one also waits for timed's first turn.
	waiters []*waiter
	seq     uint64 // counts the sites that became ready, for ties
	queued  int    // URLs queued
	// sitesPeak is the most sites has held since it was made: a map
	// keeps the room of its peak, so it is made again once it holds
	// half of that (see shrink).
	sitesPeak int
	counts    Counts   // the totals
	journal   *journal // where its changes are recorded (see Record), or nil
}

// Counts are a Frontier's numbers, for a progress bar.
type Counts struct {
	Queued int // URLs queued, not handed out
	Out    int // URLs handed out by Next and not yet Done
	Sites  int // sites with a URL queued or out

	Pushed      uint64 // URLs accepted by Push
	Finished    uint64 // URLs Done and forgotten, whatever the outcome (refusals included)
	Refused     uint64 // of which refused by a rule of robots.txt
	Unreachable uint64 // of which refused because robots.txt is unreachable
	NotYet      uint64 // URLs Done with robots.ErrNotYet and queued again
	Requeued    uint64 // URLs given back with Requeue, or Answered with a canceled context
	Retried     uint64 // answers deferred by the site and queued again by Answered
	GaveUp      uint64 // of Finished, URLs whose answer was deferred MaxRetries+1 times

	// The waiting the Frontier does for the sites' turns, which a
	// Transport under it then does not (its Stats.TurnWaits stay near 0).
	//
	// Held is how many sites with URLs queued wait now for their turn
	// (their crawl-delay, a pause, a back-off or a retry delay since their
	// latest answer, or the fetch of their robots.txt). TurnWaits counts
	// the turns a site with URLs queued waited for, TurnWaitTime the time
	// from when each was put to wait (its answer, refusal or first probe)
	// to its turn, summed.
	Held         int
	Ready        int // sites whose URL may be sent now, waiting for a call of Next
	TurnWaits    uint64
	TurnWaitTime time.Duration
	// IdleWaits counts the calls of Next that waited because no URL could
	// be sent yet, IdleTime their time waiting, summed: workers idle
	// because the crawl's sites are all held or busy (more workers than
	// the sites allow), or because nothing is queued but URLs are out.
	IdleWaits uint64
	IdleTime  time.Duration
}

// Site is what a Frontier holds of one site, for a progress bar.
type Site struct {
	Origin string
	Queued int  // URLs queued
	Out    bool // a URL of the site is out
	// At is when the site is offered next, if that is later than when
	// Sites was called; else the zero time.
	At time.Time
	// Interval is the time between the answer to the site's latest request
	// and its next turn, as Turns told; 0 if the site has had no answer.
	Interval time.Duration
}

// site is one origin's queue. Its fields are guarded by Frontier.mu.
//
// A site is in one of four states: fresh (in Frontier.fresh: new, with
// URLs, and Turns is to be asked about it), ready (in Frontier.ready: it has
// URLs and may be offered now), waiting (in Frontier.timed until due: it
// may have no URL, and then it is kept only so that a URL pushed before due
// is not offered before its turn, and dropped at due), or busy (in none: a
// URL of it is out, or Turns is being asked about it).
type site struct {
	origin string
	q      ring
	out    string        // the URL out, or ""
	tries  uint32        // the deferred answers the URL at the head (or out) has had
	due    time.Time     // when waiting: when it may be offered
	wait   time.Duration // when waiting: from when it was put to wait to due
	every  time.Duration // the interval learned from Turns, if known
	known  bool          // every is known: a request of the site was answered
	state  uint8
	i      int    // index in Frontier.fresh, ready or timed
	seq    uint64 // when it last became ready, for ties
}

const (
	busy uint8 = iota
	fresh
	ready
	waiting
)

// waiter is a call of Next that waits to be woken by a send on c.
type waiter struct{ c chan struct{} }

// init makes f's maps. f.mu must be held.
func (f *Frontier) init() {
	if f.sites == nil {
		f.sites = make(map[string]*site)
		f.seed = maphash.MakeSeed()
		f.out = make(map[string]*site)
	}
}

// Push queues rawURL at the tail of its site's queue. It returns an error,
// and queues nothing, if rawURL is not an absolute http or https URL with a
// host, is longer than [MaxURLLen], or is already queued or out
// ([ErrDuplicate]). A URL that was Done is forgotten: pushing it again
// queues it again.
//
// The URL is kept and handed out as given; its site is its [Origin]. Once
// the writer of f's journal failed, Push returns an error wrapping
// [ErrJournal] and queues nothing; the Push during which it failed queues
// its URL and returns the error (see Record).
func (f *Frontier) Push(rawURL string) error {
	_, origin, err := parse(rawURL)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.init()
	if err := f.journal.failed(); err != nil {
		return err
	}
	if !f.add(rawURL, origin) {
		return ErrDuplicate
	}
	f.counts.Pushed++
	return f.journal.failed()
}

// probe asks Turns about fresh sites, the most URLs first, as long as fewer
// than Probes are being asked about. f.mu must be held.
func (f *Frontier) probe() {
	limit := f.Probes
	if limit <= 0 {
		limit = DefaultProbes
	}
	for f.probes < limit && f.fresh.Len() > 0 {
		s := heap.Pop(&f.fresh).(*site)
		s.state = busy
		f.probes++
		go f.ask(s, s.q.front(), f.Turns)
	}
}

// ask asks turns when u, the head of the new site s, may be sent, and
// offers s then. With a [*robots.Transport], that waits for the fetch of
// s's robots.txt (up to its FetchTimeout, or probeTimeout), which no worker
// then waits for: the site's first URL is sent at its turn, with no
// refusal, and its chain is known before.
func (f *Frontier) ask(s *site, u string, turns Turns) {
	ctx, cancel := context.WithTimeout(robots.WithMaxWait(context.Background(), 0), probeTimeout)
	defer cancel()
	var at time.Time
	pu, err := url.Parse(u)
	if err == nil {
		at, err = turns.NextTurn(ctx, pu)
	}
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.probes--
	if err != nil {
		at = now
	} else {
		s.every, s.known = max(at.Sub(now), 0), true // the interval after the fetch's answer
	}
	f.schedule(s, maxTime(at, s.due), now) // a restored retry's due (see holdRetry), else zero
	f.probe()
}

// Next returns the next URL that may be sent now: the head of the queue of
// a site that has no URL out and whose turn has come, the site with the
// longest chain first (see the package doc). It waits for one until ctx is
// done, and then returns ctx.Err(). It returns [ErrEmpty] when no URL is
// queued or out, and so none can come but by Push: at once, and to every
// call waiting as soon as the last URL is Done, whatever Turns is and
// however far its site's next turn (a worker may stop after its last Done
// without leaving the others waiting).
//
// Every URL it returns must be given back with Done, or Requeue; until
// then no other URL of its site is handed out. With a journal whose
// writer failed, it returns the error (see Record).
func (f *Frontier) Next(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	var w *waiter
	var timer *time.Timer
	var since time.Time // when it began to wait
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	f.mu.Lock()
	f.init()
	for {
		now := time.Now()
		if err := f.journal.failed(); err != nil {
			f.leave(w)
			f.wake() // the first waiter now may be another
			f.mu.Unlock()
			return "", err
		}
		if s := f.take(now); s != nil {
			u := s.q.pop()
			f.queued--
			s.out, s.state = u, busy
			f.out[u] = s
			f.leave(w)
			f.idle(w, since, now)
			if f.ready.Len() > 0 || f.timed.Len() > 0 {
				f.wake() // the next waiter takes the next site, or waits for its turn
			}
			// Written with the next Done, Answered or Requeue: a URL
			// out whose record a kill lost is handed out again all the
			// same, as queued.
			f.record(recOut, -1, u, false)
			f.mu.Unlock()
			return u, nil
		}
		if f.queued == 0 && len(f.out) == 0 {
			f.leave(w)
			f.idle(w, since, now)
			for _, o := range f.waiters {
				wake(o)
			}
			f.mu.Unlock()
			return "", ErrEmpty
		}
		if w == nil {
			since = now
			w = &waiter{c: make(chan struct{}, 1)}
			f.waiters = append(f.waiters, w)
		}
		var turn <-chan time.Time
		if f.waiters[0] == w && f.timed.Len() > 0 {
			d := time.Until(f.timed[0].due)
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			turn = timer.C
		}
		f.mu.Unlock()
		select {
		case <-w.c:
		case <-turn:
		case <-ctx.Done():
			f.mu.Lock()
			f.leave(w)
			f.idle(w, since, time.Now())
			f.wake() // the first waiter now may be another
			f.mu.Unlock()
			return "", ctx.Err()
		}
		f.mu.Lock()
	}
}

// idle counts a call of Next that waited, from since to now, if w is not
// nil. f.mu must be held.
func (f *Frontier) idle(w *waiter, since, now time.Time) {
	if w != nil {
		f.counts.IdleWaits++
		f.counts.IdleTime += now.Sub(since)
	}
}

// take returns the ready site with the longest chain, once the sites whose
// turn has come by now are ready, or nil. It drops the sites that waited
// for a turn with no URL. f.mu must be held.
func (f *Frontier) take(now time.Time) *site {
	for f.timed.Len() > 0 && !f.timed[0].due.After(now) {
		s := heap.Pop(&f.timed).(*site)
		if s.q.n == 0 {
			f.drop(s)
			continue
		}
		f.counts.TurnWaits++
		f.counts.TurnWaitTime += s.wait
		f.makeReady(s)
	}
	if f.ready.Len() == 0 {
		return nil
	}
	return heap.Pop(&f.ready).(*site)
}

// makeReady puts s, which has a URL, among the ready sites. f.mu must be
// held.
func (f *Frontier) makeReady(s *site) {
	s.state, s.seq = ready, f.seq
	f.seq++
	heap.Push(&f.ready, s)
	f.wake()
}

// schedule makes s, which has nothing out, ready at at, or drops it if it
// has no URL and at has come. f.mu must be held.
func (f *Frontier) schedule(s *site, at, now time.Time) {
	switch {
	case at.After(now):
		s.state, s.due, s.wait = waiting, at, at.Sub(now)
		heap.Push(&f.timed, s)
		if s.i == 0 {
			f.wake() // the first waiter's timer is for a later turn
		}
	case s.q.n > 0:
		f.makeReady(s)
	default:
		f.drop(s)
	}
}

// drop forgets s, which has no URL and whose turn has come. f.mu must be
// held.
func (f *Frontier) drop(s *site) {
	delete(f.sites, s.origin)
	f.sites, f.sitesPeak = shrink(f.sites, f.sitesPeak)
}

// shrink returns m, or a copy of m if m holds less than half of peak, the
// most it has held: a map does not give back the room it grew to. It
// returns the new peak. A copy costs len(m), paid for by the len(m)
// deletions since the peak.
func shrink[K comparable, V any](m map[K]V, peak int) (map[K]V, int) {
	if peak < 64 || len(m) >= peak/2 {
		return m, peak
	}
	c := make(map[K]V, len(m))
	maps.Copy(c, m)
	return c, len(m)
}

// wake wakes the first waiter, if any, to look again. f.mu must be held.
func (f *Frontier) wake() {
	if len(f.waiters) > 0 {
		wake(f.waiters[0])
	}
}

func wake(w *waiter) {
	select {
	case w.c <- struct{}{}:
	default: // it is awake already
	}
}

// leave removes w, if not nil, from the waiters. f.mu must be held.
func (f *Frontier) leave(w *waiter) {
	if w == nil {
		return
	}
	if i := slices.Index(f.waiters, w); i >= 0 {
		f.waiters = slices.Delete(f.waiters, i, i+1)
	}
}

// Done reports how the request for rawURL, handed out by Next, ended: err
// is nil if a response came, else the error of the request. It returns
// [ErrNotOut] if rawURL is not out.
//
// A URL refused with [robots.ErrNotYet] (a [*robots.TurnError]) goes back
// to the head of its site's queue, and the site is offered again at the
// TurnError's RetryAt; or, if the refusal was for the fetch of the site's
// robots.txt (Reason robots.ReasonRobotsTxt) and Turns is set, once Turns
// tells the turn after the fetch, as for a new site. Any other URL is forgotten, whatever err is: a URL
// refused by robots.txt, whether by a rule or because robots.txt is
// unreachable, is counted (see [Counts]) and not retried; to retry it,
// call Requeue instead (for an unreachable robots.txt, at
// [robots.DisallowedError.RetryAt]). Its site is then offered again at the
// turn Turns gives for its next URL, or at once if Turns is nil or fails.
//
// Push the links found in the page before its Done, so that a crawl that
// waits for Next's ErrEmpty does not end before them (and, with a journal,
// so that they are written with the Done: see Record). With a journal
// whose writer failed, Done, Answered and Requeue do their work and return
// an error wrapping [ErrJournal].
func (f *Frontier) Done(rawURL string, err error) error {
	_, err = f.answer(rawURL, nil, err, false)
	return err
}

// Requeue gives back rawURL, handed out by Next and not sent, or sent and
// to be sent again: it goes back to the head of its site's queue, and the
// site is offered again at at (at once if at has come). It returns
// [ErrNotOut] if rawURL is not out.
func (f *Frontier) Requeue(rawURL string, at time.Time) error {
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.out[rawURL]
	if s == nil {
		return ErrNotOut
	}
	delete(f.out, rawURL)
	s.out = ""
	f.counts.Requeued++
	f.requeue(s, rawURL, at, now)
	return f.record(recRequeue, requeueAsked, rawURL, true)
}

// requeue puts u back at the head of s's queue, for at. f.mu must be held.
func (f *Frontier) requeue(s *site, u string, at, now time.Time) {
	s.q.pushFront(u)
	f.queued++
	f.schedule(s, at, now)
}

// Len returns how many URLs f holds: queued, or out.
func (f *Frontier) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.queued + len(f.out)
}

// Counts returns f's numbers.
func (f *Frontier) Counts() Counts {
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.counts
	c.Queued, c.Out, c.Ready = f.queued, len(f.out), f.ready.Len()
	for _, s := range f.sites {
		if s.q.n > 0 || s.out != "" {
			c.Sites++
		}
		switch {
		case s.q.n == 0:
		case s.state == fresh || s.state == busy && s.out == "":
			c.Held++ // its first turn, or its next, is being asked for
		case s.state == waiting:
			if s.due.After(now) {
				c.Held++
			} else {
				c.Ready++ // its turn has come: Next takes it
			}
		}
	}
	return c
}

// Sites returns the sites with a URL queued or out, by origin.
func (f *Frontier) Sites() []Site {
	now := time.Now()
	f.mu.Lock()
	out := make([]Site, 0, len(f.sites))
	for _, s := range f.sites {
		if s.q.n == 0 && s.out == "" {
			continue
		}
		st := Site{Origin: s.origin, Queued: s.q.n, Out: s.out != "", Interval: s.every}
		if s.state == waiting && s.due.After(now) {
			st.At = s.due
		}
		out = append(out, st)
	}
	f.mu.Unlock()
	slices.SortFunc(out, func(a, b Site) int { return cmp.Compare(a.Origin, b.Origin) })
	return out
}

// chain is how long the URLs queued of s take at least, one interval
// apart: its rank among ready sites that have had an answer.
func (s *site) chain() time.Duration {
	if s.every <= 0 {
		return 0
	}
	if int64(s.q.n) > math.MaxInt64/int64(s.every) {
		return math.MaxInt64
	}
	return s.every * time.Duration(s.q.n)
}

// readyHeap orders ready sites: first those with no answer yet (their
// interval is not known, and their first request learns it), by URLs
// queued; then by chain; ties by when they became ready.
type readyHeap []*site

func (h readyHeap) Len() int { return len(h) }
func (h readyHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.known != b.known {
		return !a.known
	}
	if !a.known && a.q.n != b.q.n {
		return a.q.n > b.q.n
	}
	if ca, cb := a.chain(), b.chain(); ca != cb {
		return ca > cb
	}
	return a.seq < b.seq
}
func (h readyHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i]; h[i].i = i; h[j].i = j }
func (h *readyHeap) Push(x any)   { s := x.(*site); s.i = len(*h); *h = append(*h, s) }
func (h *readyHeap) Pop() any     { return pop((*[]*site)(h)) }

// timedHeap orders waiting sites by due.
type timedHeap []*site

func (h timedHeap) Len() int           { return len(h) }
func (h timedHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h timedHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].i = i; h[j].i = j }
func (h *timedHeap) Push(x any)        { s := x.(*site); s.i = len(*h); *h = append(*h, s) }
func (h *timedHeap) Pop() any          { return pop((*[]*site)(h)) }

// pop removes the last site of *h and returns it. Once *h uses less than
// half of its room, it is moved to a slice a third bigger than it needs.
func pop(h *[]*site) *site {
	old := *h
	s := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	if n := len(*h); cap(old) > 64 && n < cap(old)/2 {
		*h = append(make([]*site, 0, n+n/3), *h...)
	}
	return s
}

// ring is a FIFO of URLs that can also take one back at its head. It
// grows by half when full, and once fewer than half of its slots are used
// it shrinks to a third more than its URLs: it holds 16 to 32 bytes a URL
// (a slot is a string header), each resize paid for by the n/3 pushes or
// pops since the one before. An empty ring holds no buffer.
type ring struct {
	buf  []string
	head int
	n    int
}

func (r *ring) push(s string) {
	if r.n == len(r.buf) {
		r.resize(max(4, len(r.buf)+len(r.buf)/2))
	}
	i := r.head + r.n
	if i >= len(r.buf) {
		i -= len(r.buf)
	}
	r.buf[i] = s
	r.n++
}

func (r *ring) pushFront(s string) {
	if r.n == len(r.buf) {
		r.resize(max(4, len(r.buf)+len(r.buf)/2))
	}
	if r.head--; r.head < 0 {
		r.head += len(r.buf)
	}
	r.buf[r.head] = s
	r.n++
}

func (r *ring) front() string { return r.buf[r.head] }

// at returns the URL i places after the head.
func (r *ring) at(i int) string {
	i += r.head
	if i >= len(r.buf) {
		i -= len(r.buf)
	}
	return r.buf[i]
}

func (r *ring) pop() string {
	s := r.buf[r.head]
	r.buf[r.head] = ""
	if r.head++; r.head == len(r.buf) {
		r.head = 0
	}
	r.n--
	switch {
	case r.n == 0:
		r.buf, r.head = nil, 0
	case len(r.buf) > 8 && r.n*2 < len(r.buf):
		r.resize(r.n + r.n/3 + 1)
	}
	return s
}

// resize moves the URLs to a buffer of capacity c, head first.
func (r *ring) resize(c int) {
	buf := make([]string, c)
	k := copy(buf, r.buf[r.head:min(r.head+r.n, len(r.buf))])
	copy(buf[k:], r.buf[:r.n-k])
	r.buf, r.head = buf, 0
}
