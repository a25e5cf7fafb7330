package frontier_test

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

	"github.com/f9014239/robots"
	"github.com/f9014239/robots/frontier"
)

// laterTurns is a Turns whose every turn is an hour away.
type laterTurns struct{}

func (laterTurns) NextTurn(context.Context, *url.URL) (time.Time, error) {
	return time.Now().Add(time.Hour), nil
}

// TestLastDoneEndsEveryWait: workers that stop after their last Done leave
// no other worker waiting. The Next calls waiting when the last URL is Done
// return ErrEmpty at once (in the bubble's fake time: a regression that
// waits for the site's turn shows as an elapsed hour, one that waits for
// nothing as a deadlock), whatever Turns is.
func TestLastDoneEndsEveryWait(t *testing.T) {
	site := func(delay string) http.RoundTripper {
		return rtFunc(func(req *http.Request) (*http.Response, error) {
			time.Sleep(10 * time.Millisecond)
			body := "page"
			if req.URL.Path == "/robots.txt" {
				body = "User-agent: *\n" + delay
			}
			return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
		})
	}
	for _, c := range []struct {
		name  string
		turns func() frontier.Turns
	}{
		{"no Turns", func() frontier.Turns { return nil }},
		{"now", func() frontier.Turns { return nowTurns{} }},
		{"an hour away", func() frontier.Turns { return laterTurns{} }},
		{"Transport", func() frontier.Turns {
			return &robots.Transport{Base: site(""), Agent: "ExampleBot", MaxWait: time.Millisecond}
		}},
		{"Transport crawl-delay", func() frontier.Turns {
			return &robots.Transport{Base: site("Crawl-delay: 30\n"), Agent: "ExampleBot", MaxWait: time.Millisecond}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, urls := range []int{1, 3} {
				synctest.Test(t, func(t *testing.T) {
					turns := c.turns()
					client := &http.Client{}
					if tr, ok := turns.(*robots.Transport); ok {
						client.Transport = tr
					} else {
						client.Transport = site("")
					}
					f := &frontier.Frontier{Turns: turns}
					for i := range urls {
						f.Push("http://a.test/" + strings.Repeat("x", i))
					}
					var (
						mu       sync.Mutex
						lastDone time.Time
						ended    []time.Time
						wg       sync.WaitGroup
					)
					// The first worker to take a URL fetches it and stops
					// after its Done; the others wait in Next.
					for range 4 {
						wg.Go(func() {
							for {
								u, err := f.Next(context.Background())
								if err == frontier.ErrEmpty {
									mu.Lock()
									ended = append(ended, time.Now())
									mu.Unlock()
									return
								}
								if err != nil {
									t.Errorf("Next = %v, want a URL or ErrEmpty", err)
									return
								}
								resp, err := client.Get(u)
								if err == nil {
									resp.Body.Close()
								}
								if errors.As(err, new(*robots.TurnError)) {
									f.Done(u, err)
									continue
								}
								f.Done(u, err)
								mu.Lock()
								lastDone = time.Now()
								mu.Unlock()
								if f.Len() == 0 {
									return // stops after its last Done
								}
							}
						})
					}
					wg.Wait()
					if len(ended) != 3 {
						t.Fatalf("%d workers got ErrEmpty, want the 3 that did not stop after the last Done", len(ended))
					}
					for _, at := range ended {
						if d := at.Sub(lastDone); d > 0 {
							t.Errorf("a waiting Next returned ErrEmpty %v after the last Done, want at once", d)
						}
					}
					if n := f.Len(); n != 0 {
						t.Errorf("Len = %d after the crawl, want 0", n)
					}
				})
			}
		})
	}
}

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
