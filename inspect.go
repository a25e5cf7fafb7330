package robots

import (
	"context"
	"errors"
	"net/url"
	"time"

	"github.com/f9014239/robots/fleet"

	"github.com/f9014239/robots/matcher"
)

// Origin is what a [Transport] knows of one origin's robots.txt.
type Origin struct {
	Name   string          // as a Store names it: "https://example.com"
	Access fleet.Access    // of the last fetch that reached it, or AccessUnreachable; it decides
	File   *matcher.Robots // the parsed file if Access is AccessSuccess, else an empty one; never nil

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
	return &Origin{
		Name:      s.origin,
		Access:    e.Access,
		File:      r,
		FetchedAt: e.FetchedAt,
		Expires:   e.Expires,
		Err:       st.err,
	}, nil
}

// emptyRobots is the parsed form of an empty robots.txt; it is never
// modified.
var emptyRobots = matcher.Parse(nil)

// CrawlDelay returns the time the Transport keeps between two requests to
// u's origin, as the crawler that ctx names (see WithAgent) or else as
// Agent: the group's crawl-delay within MaxCrawlDelay and MinDelay, or zero.
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
	return t.turns.interval(st, agent).every, nil
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
	ctx = context.WithValue(ctx, maxWaitKey{}, time.Duration(0))
	return t.loader.lookup(ctx, k, t.now(), t.fetchAgent(nil, ua))
}
