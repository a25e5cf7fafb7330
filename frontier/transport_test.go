package frontier_test

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/f9014239/robots"
	"github.com/f9014239/robots/frontier"
)

// fakeWeb is a Base for a robots.Transport that serves, for each host, a
// robots.txt with its Crawl-delay, and pages after rtt; it logs when each
// request arrived and when its answer left, as the site sees them.
type fakeWeb struct {
	delay map[string]time.Duration // by host
	rtt   time.Duration

	mu  sync.Mutex
	log map[string][]hit // by host
}

type hit struct {
	path          string
	arrived, left time.Time
}

func (w *fakeWeb) RoundTrip(req *http.Request) (*http.Response, error) {
	h := hit{path: req.URL.Path, arrived: time.Now()}
	time.Sleep(w.rtt)
	body := "page"
	if req.URL.Path == "/robots.txt" {
		body = fmt.Sprintf("User-agent: *\nDisallow: /private\nCrawl-delay: %g\n", w.delay[req.URL.Host].Seconds())
	}
	h.left = time.Now()
	w.mu.Lock()
	w.log[req.URL.Host] = append(w.log[req.URL.Host], h)
	w.mu.Unlock()
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

// TestTransport crawls through a robots.Transport with MaxWait: no site is
// sent a request before its crawl-delay has passed since the answer to the
// one before, or while one is out, as the site sees them; the crawl ends
// with the longest chain. A site's URLs are refused for now twice at most,
// both before its first page: once while its robots.txt is fetched (it
// takes longer than MaxWait), and once more if the site has a crawl-delay,
// which its first page waits after robots.txt.
func TestTransport(t *testing.T) {
	for _, workers := range []int{2, 8} {
		t.Run(strconv.Itoa(workers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				web := &fakeWeb{rtt: 20 * time.Millisecond, log: map[string][]hit{}, delay: map[string]time.Duration{
					"a.test": time.Second, "b.test": 2 * time.Second, "c.test": 0, "d.test": 500 * time.Millisecond,
				}}
				tr := &robots.Transport{Base: web, Agent: "ExampleBot", MaxWait: 5 * time.Millisecond}
				client := &http.Client{Transport: tr}
				f := &frontier.Frontier{Turns: tr}
				for i := range 6 {
					for h := range web.delay {
						f.Push("http://" + h + "/" + strconv.Itoa(i))
					}
					f.Push("http://a.test/private/" + strconv.Itoa(i))
				}
				start := time.Now()
				var wg sync.WaitGroup
				for range workers {
					wg.Go(func() {
						for {
							u, err := f.Next(t.Context())
							if err != nil {
								return
							}
							resp, err := client.Get(u)
							if err == nil {
								resp.Body.Close()
							}
							f.Done(u, err)
						}
					})
				}
				wg.Wait()
				paced := 0
				for h, d := range web.delay {
					log := web.log[h]
					if len(log) != 7 {
						t.Errorf("%s was sent %d requests, want 7 (robots.txt and 6 pages)", h, len(log))
					}
					for i := 1; i < len(log); i++ {
						if gap := log[i].arrived.Sub(log[i-1].left); gap < d {
							t.Errorf("%s: %s arrived %v after the answer to %s; crawl-delay %v", h, log[i].path, gap, log[i-1].path, d)
						}
					}
					if d > 0 {
						paced++
					}
				}
				// b.test: robots.txt, then 6 pages, each 2 s after an
				// answer that takes 20 ms.
				if d, want := time.Since(start), 6*2*time.Second+7*20*time.Millisecond; d != want {
					t.Errorf("crawl took %v, want %v", d, want)
				}
				c := f.Counts()
				if c.Refused != 6 || c.Finished != 30 {
					t.Errorf("Counts = %+v, want 30 finished, 6 refused", c)
				}
				if st := tr.Stats(); st.NotYet != 0 || c.NotYet != 0 {
					t.Errorf("%d refused for now (%d counted), want at most one a site (%d) and one more a paced site (%d)", st.NotYet, c.NotYet, len(web.delay), paced)
				}
			})
		})
	}
}

// TestVisitTimeWindow: a site whose robots.txt asks to be visited only
// from 06:00 UTC (fake time begins at midnight) gets no page before then;
// the frontier requeues its URLs for the opening, as TurnError.RetryAt
// says, without spinning, while another site is crawled meanwhile.
func TestVisitTimeWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		arrivals := map[string][]time.Time{}
		base := rtFunc(func(req *http.Request) (*http.Response, error) {
			body := "page"
			if req.URL.Path == "/robots.txt" {
				body = "User-agent: *\nCrawl-delay: 1\n"
				if req.URL.Host == "w.test" {
					body += "Visit-time: 0600-0700\n"
				}
			} else {
				mu.Lock()
				arrivals[req.URL.Host] = append(arrivals[req.URL.Host], time.Now().UTC())
				mu.Unlock()
			}
			return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
		})
		tr := &robots.Transport{Base: base, Agent: "ExampleBot", MaxWait: 5 * time.Millisecond}
		client := &http.Client{Transport: tr}
		f := &frontier.Frontier{Turns: tr}
		for i := range 3 {
			f.Push("http://w.test/" + strconv.Itoa(i))
			f.Push("http://n.test/" + strconv.Itoa(i))
		}
		start := time.Now().UTC()
		for {
			u, err := f.Next(t.Context())
			if err != nil {
				break
			}
			resp, err := client.Get(u)
			if err == nil {
				resp.Body.Close()
			}
			f.Answered(u, resp, err)
		}
		open := start.Add(6 * time.Hour)
		if len(arrivals["w.test"]) != 3 || len(arrivals["n.test"]) != 3 {
			t.Fatalf("arrivals %v", arrivals)
		}
		for _, a := range arrivals["w.test"] {
			if a.Before(open) || !a.Before(open.Add(time.Hour)) {
				t.Errorf("w.test page at %v, outside its window", a)
			}
		}
		if a := arrivals["n.test"][2]; !a.Before(start.Add(time.Minute)) {
			t.Errorf("n.test waited for w.test's window: its last page at %v", a)
		}
		if st := tr.Stats(); st.NotYet > 10 {
			t.Errorf("%d refusals for now: the frontier spun", st.NotYet)
		}
	})
}
