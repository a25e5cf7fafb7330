package robots

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/f9014239/robots/fleet"
	"github.com/f9014239/robots/internal/pacing"

	"github.com/f9014239/robots/matcher"
)

// Check returns the verdict RoundTrip would give a request for u with
// context ctx and no User-Agent header: nil if it would be sent, a
// [*DisallowedError] if it would be refused, or another error if u cannot be
// sent or ctx is done first. It fetches robots.txt if needed, but sends
// nothing to u and does not wait for a turn. Use [Transport.CheckRequest]
// for a request that has a User-Agent.
func (t *Transport) Check(ctx context.Context, u *url.URL) error {
	t.once.Do(t.init)
	if u == nil {
		return errors.New("robots: nil URL")
	}
	_, _, err := t.checkRequest(ctx, u, "", nil)
	return err
}

// CheckRequest returns the verdict RoundTrip would give req, as Check does.
// It does not modify req or close its body.
func (t *Transport) CheckRequest(req *http.Request) error {
	t.once.Do(t.init)
	if req.URL == nil {
		return errors.New("robots: nil Request.URL")
	}
	if agent, ua, err := t.identity(req.Context(), req.Header); err == nil && starAnonymous(req.Context(), req.Header, agent, ua) {
		return errStarAnonymous
	}
	_, _, err := t.checkRequest(req.Context(), req.URL, req.Host, req.Header)
	return err
}

// checkRequest decides for u as a request with Host host ("" for u's own)
// and header hdr, as RoundTrip would. If u is allowed and is not
// /robots.txt, it also returns the state that decided and the agent it
// decided for, as state.group takes it.
func (t *Transport) checkRequest(ctx context.Context, u *url.URL, host string, hdr http.Header) (*state, string, error) {
	if !httpScheme(u) {
		return nil, "", errScheme(u)
	}
	agent, ua, err := t.identity(ctx, hdr)
	if err != nil {
		return nil, "", err
	}
	if isRobotsTxt(u) {
		_, _, err := authorityOf(u, host)
		return nil, "", err
	}
	_, st, _, err := t.check(ctx, u, host, agent, t.fetchAgent(hdr, ua), t.now())
	return st, t.groupAgent(agent), err
}

// check decides for u, requested with Host host ("" for u's own; see
// authorityOf), as agent; userAgent gives the User-Agent that a fetch of
// robots.txt sends. If u is allowed, it returns its origin's site and the
// interval between requests to it, and the state that decided.
func (t *Transport) check(ctx context.Context, u *url.URL, host, agent string, userAgent func() string, now time.Duration) (*site, *state, pacing.Ask, error) {
	k, rt, err := authorityOf(u, host)
	if err != nil {
		return nil, nil, pacing.Ask{}, err
	}
	if rt != nil {
		t.cache.routed(k, rt, now) // so that a load fetches by the same route
	}
	s, st, hit, err := t.loader.lookup(ctx, k, u, now, userAgent)
	if err != nil {
		return nil, nil, pacing.Ask{}, err
	}
	if !hit {
		now = t.now() // after the load, for the turn
	}
	group := t.groupAgent(agent)
	d := st.decide(now, group, target(u))
	if d.allowed && t.cfg.uses.decides(st) {
		d = t.decideUses(st, group, target(u)) // see Transport.Uses
	}
	// A NextTurn probes: it sends nothing, so it counts and logs
	// nothing; the request it probes for does, once.
	probe := pacing.Probing(ctx)
	if d.allowed {
		if st.entry.Access != fleet.AccessSuccess && !probe {
			t.stats.noRules.add()
		}
		a := t.loader.interval(st, group)
		a.Now = now
		return s, st, a, nil
	}
	switch {
	case probe:
	case d.err != nil:
		t.stats.refusedUnreachable.Add(1)
	case d.use != "":
		t.stats.refusedUsage.Add(1)
	default:
		t.stats.refusedRule.Add(1)
	}
	uc := *u
	de := &DisallowedError{URL: &uc, Agent: agent, Rule: d.rule, Line: d.line, Use: d.use, Err: d.err}
	if d.err != nil {
		de.RetryAt = st.entry.Expires
	}
	if !probe && t.debugging(ctx) {
		t.debugRefused(ctx, de)
	}
	return nil, nil, pacing.Ask{}, de
}

// groupAgent returns agent as state.group and state.decide take it: "" for
// the Transport's own Agent, whose group is precomputed.
func (t *Transport) groupAgent(agent string) string {
	if agent == t.cfg.agent {
		return ""
	}
	return agent
}

// isRobotsTxt reports whether u asks for /robots.txt itself: its path and
// query as sent (see target), so that a URL whose Opaque says otherwise is
// checked like any other.
func isRobotsTxt(u *url.URL) bool {
	return u.Path == "/robots.txt" && u.Opaque == "" && u.RawQuery == "" && !u.ForceQuery &&
		(u.RawPath == "" || u.EscapedPath() == "/robots.txt")
}

// target returns the path and query of u, as robots.txt rules are matched
// against them (RFC 9309 §2.2.2).
func target(u *url.URL) string {
	p := "/"
	if u.RawQuery == "" && !u.ForceQuery && u.Opaque == "" {
		if ep := u.EscapedPath(); ep != "" {
			p = ep
		}
	} else {
		p = u.RequestURI()
	}
	if strings.HasPrefix(p, "//") {
		// The matcher reads "//x/y" as a network-path reference (host
		// x); give it an authority so that the whole of p is the path.
		p = "//h" + p
	}
	return p
}

// state is an entry ready to decide with. It is immutable. Without a Store,
// its entry has no Body: the parsed form is all a state needs, and a refresh
// that finds the origin unreachable carries it over (see compileFetched), so
// that a cached origin does not hold its robots.txt twice.
type state struct {
	entry *fleet.Entry
	// parsed Body when entry.Access is AccessSuccess; else nil
	robots *matcher.Robots
	// robots.Group of the Transport's Agent; nil if robots or Agent is
	group *matcher.Group
	// why the origin is refused whole; nil unless entry.Access is
	// AccessUnreachable
	err error
	// the interval between requests for the Transport's own Agent
	ask pacing.Ask
	// entry.Expires, on the Transport's clock (see Transport.now)
	expires time.Duration
	// when an AccessUnreachable origin becomes allowed (30-day rule), on the
	// same clock
	allowAt time.Duration
	// the memory the state holds, as the cache counts it
	bytes int64
}

// fresh reports whether st may be used at now without a new fetch.
func (st *state) fresh(now time.Duration) bool { return now < st.expires }

// compile returns the state of e. robots, if not nil, is e.Body already
// parsed.
func (l *loader) compile(e *fleet.Entry, robots *matcher.Robots) *state {
	st := &state{entry: e, expires: l.clock(e.Expires), bytes: stateOverhead}
	switch e.Access {
	case fleet.AccessSuccess:
		if int64(len(e.Body)) > l.cfg.maxBody {
			// From a Store written by a Transport that reads more:
			// this one obeys only what it would have read itself.
			cut := *e
			cut.Body = append([]byte(nil), matcher.Truncate(e.Body, int(l.cfg.maxBody))...)
			e, robots = &cut, nil
			st.entry = e
		}
		if robots == nil {
			robots = matcher.Parse(e.Body)
		}
		st.robots = robots
		if l.cfg.store == nil && e.Body != nil {
			bodiless := *e
			bodiless.Body = nil
			st.entry = &bodiless
		}
		st.bytes += int64(robots.Size()) + int64(len(st.entry.Body))
		if l.cfg.agent != "" {
			st.group = st.robots.Group(l.cfg.agent)
			st.ask = l.delayOf(st.group)
		} else {
			st.ask = l.delayOf(st.robots.Group("*"))
		}
		if !e.FetchedAt.IsZero() && st.ask.Every > 0 {
			// A copy lasts at least two crawl-delays, so that a
			// crawl-delay as long as its lifetime (a day, or a short
			// max-age) still lets a page follow each fetch: otherwise
			// each refetch would take the turn of the page after it.
			st.expires = max(st.expires, add(l.clock(e.FetchedAt), add(st.ask.Every, st.ask.Every)))
		}
	case fleet.AccessUnavailable:
		st.ask = l.delayOf(nil)
	default:
		// AccessUnreachable, and any value an Access cannot have: the
		// origin is refused whole.
		st.ask = l.delayOf(nil)
		msg := e.Error
		if msg == "" {
			msg = "robots: robots.txt unreachable"
		}
		st.err = errors.New(msg)
		st.allowAt = time.Duration(math.MaxInt64)
		if e.Access == fleet.AccessUnreachable && !e.UnreachableSince.IsZero() {
			// An entry that does not say since when the origin is
			// unreachable never counts 30 days: it refuses until it
			// expires, and the fetch that follows sets the date.
			st.allowAt = l.clock(e.UnreachableSince.Add(unreachableAllowAfter))
		}
	}
	return st
}

// stateOverhead is what the cache counts for a state beside its parsed
// robots.txt and body: the state, its Entry, its site, its pace and their
// map and ring slots.
const stateOverhead = 1 << 10

// compileFetched is compile for an entry made in this process from r, so
// that the refusal keeps the fetch error itself, with its chain, and not
// only its text. prev is the state e follows, or nil if e does not follow
// the in-memory state (it follows an entry from the Store): when r found the
// origin unreachable and e keeps the last good copy, that copy is prev's,
// already parsed.
func (l *loader) compileFetched(e *fleet.Entry, r *fetchResult, prev *state) *state {
	var robots *matcher.Robots
	if r.access == fleet.AccessUnreachable && e.Access == fleet.AccessSuccess && prev != nil {
		robots = prev.robots
	}
	st := l.compile(e, robots)
	if st.err != nil && r.err != nil {
		st.err = r.err
	}
	return st
}

// decision is a verdict and what decided it.
type decision struct {
	allowed bool
	rule    string
	line    int
	use     string // the use a usage preference refuses; "" for a rule
	err     error
}

// decide returns the verdict of st at now for the URL path and query target,
// as seen by the crawler agent ("" for the Transport's own Agent).
func (st *state) decide(now time.Duration, agent, target string) decision {
	switch st.entry.Access {
	case fleet.AccessSuccess:
		g := st.groupOf(agent)
		if g.Allowed(target) { // Allowed does not allocate; Match does
			return decision{allowed: true}
		}
		m := g.Match(target)
		return decision{allowed: m.Allowed, rule: m.Rule, line: m.Line}
	case fleet.AccessUnavailable:
		return decision{allowed: true}
	}
	if now >= st.allowAt {
		return decision{allowed: true}
	}
	return decision{err: st.err}
}

// groupOf returns the group of st's robots.txt that agent ("" for the
// Transport's own Agent) obeys.
func (st *state) groupOf(agent string) *matcher.Group {
	if agent == "" && st.group != nil {
		return st.group
	}
	if agent == "" {
		agent = "*"
	}
	return st.robots.Group(agent)
}
