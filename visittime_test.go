package robots

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// visitSite serves robots with every robots.txt fetch, and records when
// each page arrives.
type visitSite struct {
	robots   string
	mu       sync.Mutex
	arrivals []time.Time
}

func (s *visitSite) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Path == "/robots.txt" {
		return &http.Response{StatusCode: 200, Header: http.Header{}, Request: req,
			Body: io.NopCloser(strings.NewReader(s.robots)), ContentLength: int64(len(s.robots))}, nil
	}
	s.mu.Lock()
	s.arrivals = append(s.arrivals, time.Now().UTC())
	s.mu.Unlock()
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
}

func (s *visitSite) last() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.arrivals) == 0 {
		return time.Time{}
	}
	return s.arrivals[len(s.arrivals)-1]
}

// A Visit-time window holds requests until it opens, in fake time (which
// begins at midnight UTC).
func TestVisitTime(t *testing.T) {
	at := func(now time.Time, hh, mm int) time.Time {
		d := time.Date(now.Year(), now.Month(), now.Day(), hh, mm, 0, 0, time.UTC)
		if d.Before(now) {
			d = d.Add(24 * time.Hour)
		}
		return d
	}
	t.Run("held until it opens", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			site := &visitSite{robots: "User-agent: *\nVisit-time: 0600-0845\nDisallow: /private\n"}
			tr := noDefaultPace(NewTransport(site, "ExampleBot"))
			client := &http.Client{Transport: tr}
			start := time.Now().UTC()
			wantRefused(t, client, "https://example.com/private") // refusals are not held
			if !time.Now().UTC().Equal(start) {
				t.Errorf("a refusal waited until %v", time.Now())
			}
			u, _ := url.Parse("https://example.com/a")
			if next, err := tr.NextTurn(context.Background(), u); err != nil || !next.UTC().Equal(at(start, 6, 0)) {
				t.Errorf("NextTurn outside the window = %v, %v; want when it opens, %v", next, err, at(start, 6, 0))
			}
			wantAllowed(t, client, "https://example.com/a")
			if got, want := site.last(), at(start, 6, 0); !got.Equal(want) {
				t.Errorf("sent at %v, want %v, when the window opens", got, want)
			}
			time.Sleep(time.Hour) // 07:00: open
			wantAllowed(t, client, "https://example.com/b")
			if got := site.last(); !got.Equal(at(start, 7, 0)) {
				t.Errorf("sent at %v inside the window", got)
			}
			time.Sleep(time.Hour + 45*time.Minute) // 08:45: closed, to the next day
			wantAllowed(t, client, "https://example.com/c")
			if got, want := site.last(), at(start, 6, 0).Add(24*time.Hour); !got.Equal(want) {
				t.Errorf("sent at %v, want %v", got, want)
			}
			if st := tr.Stats(); st.VisitTimeWaits != 2 || st.RefusedRule != 1 || st.FetchSuccess != 2 {
				// robots.txt fetched again after the hold of the
				// third request, which outlived its copy's day
				t.Errorf("stats %+v", st)
			}
		})
	})
	t.Run("MaxWait and deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			site := &visitSite{robots: "User-agent: *\nVisit-time: 0600-0845\n"}
			tr := noDefaultPace(NewTransport(site, "ExampleBot"))
			tr.MaxWait = time.Hour
			client := &http.Client{Transport: tr}
			start := time.Now().UTC()
			err := get(client, "https://example.com/a")
			te, ok := errors.AsType[*TurnError](err)
			if !ok || te.Reason != ReasonVisitTime || !te.RetryAt.UTC().Equal(at(start, 6, 0)) || !errors.Is(err, ErrNotYet) || te.Err != nil {
				t.Fatalf("got %v, want a TurnError for visit-time, RetryAt 06:00", err)
			}
			ctx, cancel := context.WithTimeout(WithMaxWait(context.Background(), 0), 10*time.Minute)
			defer cancel()
			err = getCtx(ctx, &http.Client{Transport: noDefaultPace(NewTransport(site, "ExampleBot"))}, "https://example.com/a")
			if te, ok := errors.AsType[*TurnError](err); !ok || te.Reason != ReasonVisitTime || !errors.Is(te.Err, context.DeadlineExceeded) {
				t.Fatalf("with a deadline: %v", err)
			}
			if len(site.arrivals) != 0 {
				t.Errorf("%d pages sent outside the window", len(site.arrivals))
			}
			if tr.Stats().NotYet != 1 || tr.Stats().VisitTimeWaits != 1 {
				t.Errorf("stats %+v", tr.Stats())
			}
		})
	})
	t.Run("windows that do not hold", func(t *testing.T) {
		for _, robots := range []string{
			"User-agent: *\nVisit-time: 0800-0800\n",           // never opens: ignored, not a stall
			"User-agent: *\nVisit-time: 2500-9999\n",           // invalid: ignored
			"User-agent: *\nVisit-time: 2200-0100\n",           // overnight: open at midnight
			"User-agent: other\nVisit-time: 0600-0700\n",       // another crawler's
			"User-agent: *\nVisit-time: 0000-0001\nAllow: /\n", // open
		} {
			synctest.Test(t, func(t *testing.T) {
				site := &visitSite{robots: robots}
				tr := noDefaultPace(NewTransport(site, "ExampleBot"))
				start := time.Now()
				wantAllowed(t, &http.Client{Transport: tr}, "https://example.com/a")
				if !time.Now().Equal(start) {
					t.Errorf("%q: held until %v", robots, time.Now())
				}
			})
		}
	})
	t.Run("IgnoreCrawlDelay", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			site := &visitSite{robots: "User-agent: *\nVisit-time: 0600-0845\n"}
			tr := noDefaultPace(NewTransport(site, "ExampleBot"))
			tr.IgnoreCrawlDelay = true
			start := time.Now()
			wantAllowed(t, &http.Client{Transport: tr}, "https://example.com/a")
			if !time.Now().Equal(start) {
				t.Errorf("held until %v", time.Now())
			}
		})
	})
}

func TestVisitWait(t *testing.T) {
	day := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	h := func(hh, mm int) time.Duration { return time.Duration(hh)*time.Hour + time.Duration(mm)*time.Minute }
	for _, c := range []struct {
		now, from, to, want time.Duration
	}{
		{h(5, 0), h(6, 0), h(8, 45), time.Hour},
		{h(6, 0), h(6, 0), h(8, 45), 0},
		{h(8, 44), h(6, 0), h(8, 45), 0},
		{h(8, 45), h(6, 0), h(8, 45), h(21, 15)},
		{h(23, 0), h(22, 0), h(6, 0), 0},
		{h(3, 0), h(22, 0), h(6, 0), 0},
		{h(6, 0), h(22, 0), h(6, 0), h(16, 0)},
	} {
		if got := visitWait(day.Add(c.now), c.from, c.to); got != c.want {
			t.Errorf("at %v, window %v-%v: %v, want %v", c.now, c.from, c.to, got, c.want)
		}
	}
	// Another zone: the window is UTC.
	ny := time.FixedZone("EST", -5*3600)
	if got := visitWait(time.Date(2026, 12, 7, 1, 0, 0, 0, ny), h(6, 0), h(8, 45)); got != 0 {
		t.Errorf("01:00 EST is 06:00 UTC: wait %v", got)
	}
}
