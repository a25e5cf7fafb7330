package robots

import (
	"context"
	"errors"
	"net/url"
	"time"

	"github.com/f9014239/robots/fleet"
	"github.com/f9014239/robots/internal/pacing"

	"github.com/f9014239/robots/matcher"
)

// Origin is what a [Transport] knows of one origin's robots.txt.
type Origin struct {
	Name   string          // as a Store names it: "https://example.com"
	Access fleet.Access    // of the last fetch that reached it, or AccessUnreachable; it decides
	File   *matcher.Robots // the parsed file if Access is AccessSuccess, else an empty one; never nil

	// CrawlDelay and RequestRate are the intervals the group of the
	// Transport's Agent (or "*") states: its Crawl-delay, and T/n of its
	// Request-rate n/T; zero if it states none (see Transport.CrawlDelay
	// for the interval kept).
	CrawlDelay, RequestRate time.Duration

	// FetchedAt is when the file in use was fetched (zero if none was),
	// Expires when it is fetched again, and Err why the last fetch was
	// unreachable, or nil.
	FetchedAt, Expires time.Time
	Err                error
}

// Origin returns what the Transport knows of u's origin's robots.txt,
// fetching it first if needed as a request to u would (same fetch, turn and
// cache). It waits for that fetch however far its turn, MaxWait and
// WithMaxWait notwithstanding: it fails only if u cannot be sent or ctx is
// done first.
func (t *Transport) Origin(ctx context.Context, u *url.URL) (*Origin, error) {
	s, st, err := t.stateOf(ctx, u)
	if err != nil {
		return nil, err
	}
	e := st.entry
	r := st.robots
	if r == nil {
		r = emptyRobots
	}
	agent := t.cfg.agent
	if agent == "" {
		agent = "*"
	}
	g := r.Group(agent)
	cd, _ := g.CrawlDelay()
	rr, _ := g.RequestRate()
	return &Origin{
		CrawlDelay:  cd,
		RequestRate: rr,
		Name:        s.origin,
		Access:      e.Access,
		File:        r,
		FetchedAt:   e.FetchedAt,
		Expires:     e.Expires,
		Err:         st.err,
	}, nil
}

// emptyRobots is the parsed form of an empty robots.txt; it is never
// modified.
var emptyRobots = matcher.Parse(nil)

// CrawlDelay returns the delay that u's origin states for the crawler that
// ctx names (see WithAgent) or else for Agent, as the Transport keeps it
// between an answer and the next request: the longer of Crawl-delay and
// Request-rate's T/n, within MaxCrawlDelay, and at least MinDelay; zero if
// it states none. An origin that states none is paced by DefaultDelay
// instead (unless NoDefaultPace is set), and the adaptive delay, which
// follows the origin's answers, may lengthen either.
// It fetches robots.txt if needed, and waits for that fetch as Origin does.
func (t *Transport) CrawlDelay(ctx context.Context, u *url.URL) (time.Duration, error) {
	t.once.Do(t.init)
	agent, _, err := t.identity(ctx, nil)
	if err != nil {
		return 0, err
	}
	_, st, err := t.stateOf(ctx, u)
	if err != nil {
		return 0, err
	}
	if agent == t.cfg.agent {
		agent = ""
	}
	return t.loader.interval(st, agent).Stated(), nil
}

// Forget drops the cached robots.txt of u's origin, so that the next request
// fetches it again (and takes no older entry from the Store). The origin's
// pace is kept, and a fetch in progress is not waited for.
func (t *Transport) Forget(u *url.URL) {
	t.once.Do(t.init)
	if u == nil {
		return
	}
	k, err := keyOf(u)
	if err != nil {
		return
	}
	s := t.cache.shard(k).get(k)
	if s == nil {
		return
	}
	s.forget.Store(time.Now().UnixNano())
	s.cur.Store(nil)
}

// stateOf returns the site of u's origin and its state, loading it if
// needed.
func (t *Transport) stateOf(ctx context.Context, u *url.URL) (*site, *state, error) {
	t.once.Do(t.init)
	if u == nil {
		return nil, nil, errors.New("robots: nil URL")
	}
	if !httpScheme(u) {
		return nil, nil, errScheme(u)
	}
	k, err := keyOf(u)
	if err != nil {
		return nil, nil, err
	}
	_, ua, err := t.identity(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	// No MaxWait: the caller asks what robots.txt says, and sends
	// nothing that needs a turn.
	ctx = pacing.WithMaxWait(ctx, 0)
	s, st, _, err := t.loader.lookup(ctx, k, u, t.now(), t.fetchAgent(nil, ua))
	return s, st, err
}
