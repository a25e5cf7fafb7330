package robots

import (
	"context"
	"errors"
	"net/url"
	"time"

	"github.com/f9014239/robots/matcher"
)

// RobotsTxt is what a [Transport] knows of the robots.txt of one origin, as
// [Transport.RobotsTxt] returns it.
type RobotsTxt struct {
	// Origin is the origin, as a Store names it: "https://example.com".
	Origin string

	// Access is what the last fetch that reached the origin found, or
	// AccessUnreachable if none did.
	Access Access

	// Robots is the parsed file when Access is AccessSuccess (for its
	// sitemaps and groups). Otherwise it is an empty file, which names no
	// sitemap and no group, and is never nil: then Access, not Robots,
	// says what the Transport does (an unavailable robots.txt allows
	// everything, an unreachable one refuses everything).
	Robots *matcher.Robots

	// FetchedAt is when the file in use was fetched (the zero time if
	// none was); Expires is when it is fetched again.
	FetchedAt, Expires time.Time

	// Err says why the last fetch was unreachable, or is nil. With an
	// earlier good copy, Access and Robots are that copy's, and it is
	// obeyed.
	Err error
}

// RobotsTxt returns the robots.txt of u's origin from the Transport's cache,
// fetching it first if needed, as a request to u would: the same fetch, the
// same turn, the same cache, so that asking costs no second fetch. It returns
// an error if u cannot be sent (see Check) or ctx is done before the file is
// known.
func (t *Transport) RobotsTxt(ctx context.Context, u *url.URL) (*RobotsTxt, error) {
	s, st, err := t.stateOf(ctx, u)
	if err != nil {
		return nil, err
	}
	e := st.entry
	r := st.robots
	if r == nil {
		r = emptyRobots
	}
	return &RobotsTxt{
		Origin:    s.origin,
		Access:    e.Access,
		Robots:    r,
		FetchedAt: e.FetchedAt,
		Expires:   e.Expires,
		Err:       st.err,
	}, nil
}

// emptyRobots is the parsed form of an empty robots.txt; it is never
// modified.
var emptyRobots = matcher.Parse(nil)

// CrawlDelay returns the time the Transport keeps between two requests to
// u's origin, as the crawler that ctx names (see [WithAgent]) or else as its
// Agent: the crawl-delay of the group it obeys, within MaxCrawlDelay and
// MinDelay, or zero if none applies. It fetches robots.txt if needed.
func (t *Transport) CrawlDelay(ctx context.Context, u *url.URL) (time.Duration, error) {
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
	return t.interval(st, agent), nil
}

// Forget drops the Transport's copy of the robots.txt of u's origin: the next
// request to the origin fetches it again (and, with a Store, does not take
// an entry from the Store that was fetched before the call). The origin's
// pace is kept. Forget does not wait for a fetch in progress, whose result is
// still used until the next one.
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
	return t.lookup(ctx, k, t.now(), t.fetchAgent(nil, ua))
}
