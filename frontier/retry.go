package frontier

import (
	"container/heap"
	"context"
	"errors"
	"hash/maphash"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/f9014239/robots"
)

// DefaultMaxRetries is the default for Frontier.MaxRetries: a URL the site
// defers is sent at most 4 times, as Scrapy's and crawlee's defaults do
// (3 retries).
const DefaultMaxRetries = 3

// DefaultRetryDelay is the default for Frontier.RetryDelay: with
// DefaultMaxRetries, a URL the site keeps deferring is retried at least 1,
// 2 and 4 seconds after each answer, 7 s or more in all, before it is
// given up.
const DefaultRetryDelay = time.Second

// MaxRetryDelay bounds the least time before a retry, however many.
const MaxRetryDelay = time.Hour

// Outcome is what Answered did with a URL.
type Outcome uint8

const (
	// Finished: the URL is forgotten: it was answered, or refused or
	// failed for good (see Done).
	Finished Outcome = iota
	// Retrying: the site deferred the answer; the URL is back at the head
	// of its site's queue, and is handed out again once the site's pause
	// and the retry delay have passed.
	Retrying
	// GaveUp: the site deferred the answer once more than MaxRetries
	// times; the URL is forgotten, and counted in Counts.GaveUp.
	GaveUp
	// Requeued: the URL was not answered (refused for now, with
	// robots.ErrNotYet, or the caller's context was canceled): it is back
	// at the head of its site's queue, and no retry is counted.
	Requeued
)

func (o Outcome) String() string {
	switch o {
	case Finished:
		return "finished"
	case Retrying:
		return "retrying"
	case GaveUp:
		return "gave up"
	case Requeued:
		return "requeued"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// Answered is Done for a crawler that retries what the site deferred: give
// it the response (nil if none came) and the error of the request for
// rawURL, handed out by Next, once its body is read or closed: Answered
// reads only resp.StatusCode, and neither reads nor closes resp.Body, which
// stays the caller's to close. A nil resp with a nil err is taken as an
// answer (Finished). It returns what it did, or [ErrNotOut] if rawURL is
// not out (never handed out, or already given back).
//
// An answer is deferred if its status is 429 (Too Many Requests) or 503
// (Service Unavailable), the site's ways to say "later", or if the request
// failed on the network in a way that may pass: a timeout, a connection
// refused, reset or cut short, a DNS lookup that failed for now. Such a
// URL goes back to the head of its site's queue (Retrying) and is handed
// out again once its site's turn has come, which a [robots.Transport] as
// Turns puts after the pause that the answer set (Retry-After, RateLimit,
// or the Transport's back-off), and no sooner than RetryDelay after the
// answer, doubling at each retry; after MaxRetries retries, the next
// deferred answer gives it up (GaveUp). Any other outcome is Done's: a
// response of any other status, 404 included (and 402 Payment Required, or
// a 401 with a License challenge: answers that ask the caller to pay or
// license, which pageterms.TermsOf reads, never retried), and an error that
// will not pass (a host name that does not exist, a certificate refused, a
// redirect loop) finish the URL; a refusal by robots.txt (by a rule, or
// unreachable) finishes it and is counted, and is never retried; a refusal
// for now (robots.ErrNotYet) goes back to its queue for its turn, with no
// retry counted (Requeued), as does a request whose context was canceled,
// so that a crawl stopped mid-request keeps the URL (for Save).
//
// Retrying a network error is safe for the site as well as the crawl: the
// Transport counts a failed request as a slow answer, and so spaces the
// site's next turns further; the site still has one request at a time;
// and each URL is retried a bounded number of times, further apart each.
func (f *Frontier) Answered(rawURL string, resp *http.Response, err error) (Outcome, error) {
	return f.answer(rawURL, resp, err, true)
}

// deferred reports whether the answer resp, err is the site's "later", or
// a failure that may pass.
func deferred(resp *http.Response, err error) bool {
	if err == nil {
		return resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable)
	}
	if errors.Is(err, robots.ErrDisallowed) || errors.Is(err, robots.ErrUnreachable) || errors.Is(err, robots.ErrNotYet) {
		return false
	}
	if dns, ok := errors.AsType[*net.DNSError](err); ok {
		return dns.IsTimeout || dns.IsTemporary && !dns.IsNotFound
	}
	if _, ok := errors.AsType[*net.OpError](err); ok {
		return true // refused, reset, timed out: on the network
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return true // http.Client.Timeout, a response header timeout
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// retryDelay is the least time before the tries-th retry.
func (f *Frontier) retryDelay(tries uint32) time.Duration {
	d := f.RetryDelay
	if d <= 0 {
		d = DefaultRetryDelay
	}
	for range tries - 1 {
		if d >= MaxRetryDelay/2 {
			return MaxRetryDelay
		}
		d *= 2
	}
	return min(d, MaxRetryDelay)
}

// answer is Done (retry false) and Answered (retry true).
func (f *Frontier) answer(rawURL string, resp *http.Response, err error, retry bool) (Outcome, error) {
	now := time.Now()
	f.mu.Lock()
	s := f.out[rawURL]
	if s == nil {
		f.mu.Unlock()
		return Finished, ErrNotOut
	}
	delete(f.out, rawURL)
	s.out = ""
	if te, ok := errors.AsType[*robots.TurnError](err); ok {
		f.counts.NotYet++
		if te.Reason == robots.ReasonRobotsTxt && f.Turns != nil {
			// Its robots.txt is being fetched (it expired): Turns is
			// asked for the turn after the fetch, as for a new site,
			// rather than the URL offered again at each RetryAt until
			// the fetch ends.
			s.q.pushFront(rawURL)
			f.queued++
			s.state, s.seq = fresh, f.seq
			f.seq++
			heap.Push(&f.fresh, s)
			f.probe()
		} else {
			f.requeue(s, rawURL, te.RetryAt, now)
		}
		jerr := f.record(recRequeue, requeueNotYet, rawURL, true)
		f.mu.Unlock()
		return Requeued, jerr
	}
	if retry && errors.Is(err, context.Canceled) {
		f.counts.Requeued++
		f.requeue(s, rawURL, now, now)
		jerr := f.record(recRequeue, requeueAsked, rawURL, true)
		f.mu.Unlock()
		return Requeued, jerr
	}
	outcome, least := Finished, now
	if retry && deferred(resp, err) {
		limit := f.MaxRetries
		if limit == 0 {
			limit = DefaultMaxRetries
		}
		if int64(s.tries) < int64(limit) {
			s.tries++
			f.counts.Retried++
			outcome, least = Retrying, now.Add(f.retryDelay(s.tries))
			s.q.pushFront(rawURL)
			f.queued++
		} else {
			outcome = GaveUp
			f.counts.GaveUp++
		}
	}
	if outcome != Retrying {
		s.tries = 0 // for the next head
		f.in.remove(maphash.String(f.seed, rawURL))
		f.counts.Finished++
		if f.queued == 0 && len(f.out) == 0 {
			f.wake() // the last URL: every Next waiting returns ErrEmpty now, not at the site's turn
		}
	}
	sent := outcome == Finished
	flag := int64(doneSent)
	switch {
	case outcome == GaveUp:
		flag = doneGaveUp
	case outcome != Finished:
	case errors.Is(err, robots.ErrUnreachable):
		f.counts.Unreachable++
		sent, flag = false, doneUnreachable
	case errors.Is(err, robots.ErrDisallowed):
		f.counts.Refused++
		sent, flag = false, doneRefused
	case errors.Is(err, robots.ErrNotYet):
		sent, flag = false, doneNotSent
	}
	var jerr error
	if outcome == Retrying {
		jerr = f.record(recRetry, int64(s.tries), rawURL, true)
	} else {
		jerr = f.record(recDone, flag, rawURL, true)
	}
	if f.Turns == nil {
		f.schedule(s, least, now)
		f.mu.Unlock()
		return outcome, jerr
	}
	ask := rawURL // its site's turn, if it has no other URL
	if s.q.n > 0 {
		ask = s.q.front()
	}
	f.mu.Unlock()

	at, known := now, false
	if u, err := url.Parse(ask); err == nil {
		ctx := robots.WithMaxWait(context.Background(), askMaxWait)
		if t, err := f.Turns.NextTurn(ctx, u); err == nil {
			at, known = t, true
		}
	}
	f.mu.Lock()
	if known && sent {
		s.every, s.known = max(at.Sub(now), 0), true
	}
	f.schedule(s, maxTime(at, least), time.Now())
	f.mu.Unlock()
	return outcome, jerr
}

func maxTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return b
	}
	return a
}

// Tries returns how many times the site deferred its answer for rawURL
// (see Answered): 0 for a URL not held, or never deferred. After Answered
// returned Retrying it is the retries so far, 1 to MaxRetries; a URL
// handed out by Next has had Tries(u)+1 answers deferred before, if any,
// as a resumed crawl replays it from the journal (see Replay).
func (f *Frontier) Tries(rawURL string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.out[rawURL]; s != nil {
		return int(s.tries)
	}
	_, origin, err := parse(rawURL)
	if err != nil {
		return 0
	}
	if s := f.sites[origin]; s != nil && s.out == "" && s.q.n > 0 && s.q.front() == rawURL {
		return int(s.tries)
	}
	return 0
}
