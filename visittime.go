package robots

import (
	"context"
	"net/url"
	"time"
)

// visitWait returns how long after now the window of the day from-to (UTC,
// each a time after midnight, to excluded; wrapping midnight when to is
// before from) opens, or 0 if it is open. from == to, a window that never
// opens, is never passed: the matcher keeps no such window.
func visitWait(now time.Time, from, to time.Duration) time.Duration {
	u := now.UTC()
	tod := u.Sub(time.Date(u.Year(), u.Month(), u.Day(), 0, 0, 0, 0, time.UTC))
	if from < to && tod >= from && tod < to || from > to && (tod >= from || tod < to) {
		return 0
	}
	if tod < from {
		return from - tod
	}
	return 24*time.Hour - tod + from
}

// visitWaitOf returns how long from now the Visit-time window that st's
// robots.txt states for agent opens: 0 if it states none, or it is open.
// IgnoreCrawlDelay ignores Visit-time, as it does Request-rate.
func (t *Transport) visitWaitOf(st *state, agent string) time.Duration {
	if st == nil || st.robots == nil || !st.robots.HasVisitTime() || t.cfg.ignoreCrawlDelay {
		return 0
	}
	from, to, ok := st.groupOf(t.groupAgent(agent)).VisitTime()
	if !ok {
		return 0
	}
	return visitWait(t.turns.Wall(t.now()), from, to)
}

// visitHold holds a request for u to s, which began at start (on the
// Transport's clock) and which st allows, until the Visit-time window that
// st's robots.txt states for agent opens (see visitWaitOf): it returns at
// once if there is none, or it is open; with a [*TurnError]
// (ReasonVisitTime, RetryAt its opening) if the window opens further away
// than the request may wait (see pacing.Turns.LimitOf); with ctx's error if
// ctx is done first; else once it opens, and held is true.
//
// The hold is the verdict's, before the request takes its turn: a request
// let through near the window's end may leave after it, up to its turn's
// wait later.
func (t *Transport) visitHold(ctx context.Context, s *site, st *state, agent string, u *url.URL, start time.Duration) (held bool, err error) {
	wait := t.visitWaitOf(st, agent)
	if wait <= 0 {
		return false, nil
	}
	if err := t.turns.Hold(ctx, s, u, start, wait, ReasonVisitTime); err != nil {
		return false, err
	}
	return true, nil
}
