package frontier_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"github.com/f9014239/robots"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/f9014239/robots/frontier"
)

// checkSum asserts the balance an operator reads a progress bar by: every
// URL pushed is queued, out, or finished (given up included).
func checkSum(t *testing.T, step string, f *frontier.Frontier) {
	t.Helper()
	c := f.Counts()
	if uint64(c.Queued)+uint64(c.Out)+c.Finished != c.Pushed || c.GaveUp > c.Finished {
		t.Errorf("%s: Counts do not add up: queued %d + out %d + finished %d != pushed %d (gave up %d)",
			step, c.Queued, c.Out, c.Finished, c.Pushed, c.GaveUp)
	}
}

// blockTurns is a Turns whose answers wait until release is closed, as a
// Transport's do while robots.txt is fetched.
type blockTurns struct{ release chan struct{} }

func (b blockTurns) NextTurn(ctx context.Context, u *url.URL) (time.Time, error) {
	select {
	case <-b.release:
		return time.Now(), nil
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
}

// TestHeldWhileProbed: a new site whose robots.txt is being fetched is held,
// as Counts' doc says: an operator sees why nothing is sent.
func TestHeldWhileProbed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		turns := blockTurns{make(chan struct{})}
		f := &frontier.Frontier{Turns: turns, Probes: 1}
		f.Push("http://a.test/1")
		f.Push("http://b.test/1") // waits for a probe: Probes is 1
		synctest.Wait()
		if c := f.Counts(); c.Held != 2 || c.Ready != 0 {
			t.Errorf("while robots.txt is fetched: Held %d, Ready %d; want 2 held, 0 ready", c.Held, c.Ready)
		}
		close(turns.release)
		synctest.Wait()
		if c := f.Counts(); c.Held != 0 || c.Ready != 2 {
			t.Errorf("once fetched: Held %d, Ready %d; want 0 held, 2 ready", c.Held, c.Ready)
		}
	})
}

// TestRestoreKeepsOutRetries: restoring into a Frontier in use does not
// change the retries of the URL it has out on the same site.
func TestRestoreKeepsOutRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		r503 := &http.Response{StatusCode: 503, Body: http.NoBody}
		// A file with a.test/other, retried 3 times (the most).
		src := &frontier.Frontier{RetryDelay: time.Millisecond}
		src.Push("http://a.test/other")
		for range 3 {
			u, _ := src.Next(ctx)
			if o, _ := src.Answered(u, r503, nil); o != frontier.Retrying {
				t.Fatalf("Answered = %v, want retrying", o)
			}
		}
		var buf bytes.Buffer
		if err := src.Save(&buf); err != nil {
			t.Fatal(err)
		}

		f := &frontier.Frontier{RetryDelay: time.Millisecond}
		f.Push("http://a.test/mine")
		u, _ := f.Next(ctx) // out, never deferred
		if err := f.Restore(&buf); err != nil {
			t.Fatal(err)
		}
		// a.test/mine had no retry: its first 503 is retried.
		if o, err := f.Answered(u, r503, nil); o != frontier.Retrying || err != nil {
			t.Errorf("first 503 of a URL out while a file was restored: %v, %v; want retrying", o, err)
		}
		checkSum(t, "after restore", f)
	})
}

// TestAnsweredOdd: Answered with what a careless worker passes.
func TestAnsweredOdd(t *testing.T) {
	ctx := context.Background()
	f := &frontier.Frontier{}
	f.Push("http://a.test/1")
	f.Push("http://a.test/2")
	checkSum(t, "pushed", f)
	// Never handed out: refused, nothing changes.
	if o, err := f.Answered("http://a.test/2", &http.Response{StatusCode: 503}, nil); err != frontier.ErrNotOut || o != frontier.Finished {
		t.Errorf("Answered of a queued URL = %v, %v; want ErrNotOut", o, err)
	}
	if o, err := f.Answered("http://never.test/", nil, nil); err != frontier.ErrNotOut || o != frontier.Finished {
		t.Errorf("Answered of an unknown URL = %v, %v; want ErrNotOut", o, err)
	}
	if f.Len() != 2 || f.Counts().Finished != 0 {
		t.Errorf("after Answered of URLs not out: Len %d, %+v", f.Len(), f.Counts())
	}
	// Neither a response nor an error: taken as answered.
	u, _ := f.Next(ctx)
	if o, err := f.Answered(u, nil, nil); o != frontier.Finished || err != nil {
		t.Errorf("Answered(nil, nil) = %v, %v; want finished", o, err)
	}
	checkSum(t, "nil, nil", f)
	// A body left unread is not the Frontier's: Answered reads only the status.
	u, _ = f.Next(ctx)
	body := &trackBody{}
	if o, err := f.Answered(u, &http.Response{StatusCode: 429, Body: body}, nil); o != frontier.Retrying || err != nil {
		t.Errorf("Answered(429) = %v, %v; want retrying", o, err)
	}
	if body.read || body.closed {
		t.Errorf("Answered touched the body (read %v, closed %v): its doc says it reads only the status", body.read, body.closed)
	}
	// Twice for one URL: the second is not out (it is queued for its retry).
	if o, err := f.Answered(u, &http.Response{StatusCode: 429}, nil); err != frontier.ErrNotOut {
		t.Errorf("second Answered = %v, %v; want ErrNotOut", o, err)
	}
	if err := f.Done(u, nil); err != frontier.ErrNotOut {
		t.Errorf("Done after Answered = %v; want ErrNotOut", err)
	}
	if c := f.Counts(); c.Retried != 1 || c.Queued != 1 {
		t.Errorf("after a 429 answered twice: %+v; want one retry, one queued", c)
	}
	checkSum(t, "twice", f)
}

type trackBody struct{ read, closed bool }

func (b *trackBody) Read([]byte) (int, error) { b.read = true; return 0, errors.New("eof") }
func (b *trackBody) Close() error             { b.closed = true; return nil }

// TestRetryNotEmpty: a worker that stops after an answer the site deferred
// leaves the retry to the others: no ErrEmpty while the retry waits, and
// ErrEmpty at once after it is answered.
func TestRetryNotEmpty(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &frontier.Frontier{RetryDelay: time.Minute}
		f.Push("http://a.test/1")
		ctx := context.Background()
		u, _ := f.Next(ctx)
		start := time.Now()
		type got struct {
			u   string
			err error
			at  time.Duration
		}
		res := make(chan got, 3)
		for range 3 {
			go func() {
				u, err := f.Next(ctx)
				res <- got{u, err, time.Since(start)}
			}()
		}
		synctest.Wait()
		// The worker with u stops after its Answered.
		if o, _ := f.Answered(u, &http.Response{StatusCode: 503}, nil); o != frontier.Retrying {
			t.Fatalf("Answered = %v", o)
		}
		checkSum(t, "retry pending", f)
		first := <-res
		if first.err != nil || first.u != u || first.at != time.Minute {
			t.Fatalf("Next = %q, %v at %v; want the retry at 1m", first.u, first.err, first.at)
		}
		synctest.Wait()
		select {
		case g := <-res:
			t.Fatalf("Next returned %q, %v while the retry is out", g.u, g.err)
		default:
		}
		f.Answered(u, &http.Response{StatusCode: 200}, nil)
		for range 2 {
			g := <-res
			if g.err != frontier.ErrEmpty || g.at != time.Minute {
				t.Errorf("after the last answer: Next = %q, %v at %v; want ErrEmpty at 1m", g.u, g.err, g.at)
			}
		}
		checkSum(t, "end", f)
	})
}

// TestCountsAddUp runs workers that answer at random through a crawl with
// retries, requeues and saves, and checks the balance at every step.
func TestCountsAddUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &frontier.Frontier{RetryDelay: 10 * time.Millisecond, MaxRetries: 2}
		for i := range 200 {
			f.Push("http://s" + strconv.Itoa(i%7) + ".test/" + strconv.Itoa(i))
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		for w := range 4 {
			wg.Go(func() {
				for n := 0; ; n++ {
					u, err := f.Next(context.Background())
					if err != nil {
						return
					}
					time.Sleep(time.Millisecond)
					switch (n + w) % 5 {
					case 0:
						f.Answered(u, &http.Response{StatusCode: 503}, nil)
					case 1:
						f.Answered(u, &http.Response{StatusCode: 429}, nil)
					case 2:
						f.Requeue(u, time.Now().Add(time.Millisecond))
					default:
						if n < 100 {
							f.Push(u + "/x")
						}
						f.Answered(u, &http.Response{StatusCode: 200}, nil)
					}
					mu.Lock()
					checkSum(t, "step", f)
					mu.Unlock()
					if n%17 == 0 {
						var buf bytes.Buffer
						if err := f.Save(&buf); err != nil {
							t.Error(err)
						}
					}
				}
			})
		}
		wg.Wait()
		checkSum(t, "end", f)
		if c := f.Counts(); c.Queued != 0 || c.Out != 0 || c.GaveUp == 0 || c.Retried == 0 {
			t.Errorf("end: %+v", c)
		}
	})
}

// TestRestoreDuplicatesAddUp: restoring into a Frontier that holds some of
// the file's URLs skips them, and its Counts still add up.
func TestRestoreDuplicatesAddUp(t *testing.T) {
	ctx := context.Background()
	src := &frontier.Frontier{}
	for i := range 10 {
		src.Push("http://a.test/" + strconv.Itoa(i))
	}
	u, _ := src.Next(ctx)
	src.Done(u, nil)
	var buf bytes.Buffer
	if err := src.Save(&buf); err != nil {
		t.Fatal(err)
	}
	f := &frontier.Frontier{}
	f.Push("http://a.test/3") // held by both
	f.Push("http://b.test/")
	if err := f.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	checkSum(t, "restored with a duplicate", f)
	if n := f.Len(); n != 10 {
		t.Errorf("Len = %d after restoring 9 URLs (one held) into 2, want 10", n)
	}
	// Twice the same file: all skipped, nothing counted twice.
	if err := f.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	checkSum(t, "restored twice", f)
}

// TestSaveDuringCrawl saves, again and again, a crawl whose workers Push,
// take, answer (with retries) and stop, under -race; every snapshot
// restores into a new Frontier with its Counts adding up, and a snapshot
// taken with URLs out and retries pending resumes to the end.
func TestSaveDuringCrawl(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &frontier.Frontier{RetryDelay: 5 * time.Millisecond}
		for i := range 300 {
			f.Push("http://s" + strconv.Itoa(i%11) + ".test/" + strconv.Itoa(i))
		}
		var wg sync.WaitGroup
		var snaps [][]byte
		ctx, cancel := context.WithCancel(context.Background())
		wg.Go(func() {
			for ctx.Err() == nil {
				var buf bytes.Buffer
				if err := f.Save(&buf); err != nil {
					t.Error(err)
				}
				snaps = append(snaps, buf.Bytes())
				time.Sleep(3 * time.Millisecond)
			}
		})
		var workers sync.WaitGroup
		for w := range 5 {
			workers.Go(func() {
				for n := 0; ; n++ {
					u, err := f.Next(ctx)
					if err != nil {
						return
					}
					time.Sleep(2 * time.Millisecond)
					if (n+w)%3 == 0 {
						f.Answered(u, &http.Response{StatusCode: 429}, nil)
					} else {
						f.Answered(u, &http.Response{StatusCode: 200}, nil)
					}
				}
			})
		}
		workers.Wait()
		cancel()
		wg.Wait()
		if len(snaps) < 10 {
			t.Fatalf("%d snapshots", len(snaps))
		}
		for i, b := range snaps {
			g := &frontier.Frontier{RetryDelay: time.Millisecond}
			if err := g.Restore(bytes.NewReader(b)); err != nil {
				t.Fatalf("snapshot %d: %v", i, err)
			}
			checkSum(t, "snapshot "+strconv.Itoa(i), g)
			if c := g.Counts(); c.Out != 0 {
				t.Errorf("snapshot %d: %d out after Restore, want none", i, c.Out)
			}
		}
		// Resume the middle snapshot to the end.
		g := &frontier.Frontier{RetryDelay: time.Millisecond}
		g.Restore(bytes.NewReader(snaps[len(snaps)/2]))
		held := g.Len()
		seen := 0
		for {
			u, err := g.Next(context.Background())
			if err != nil {
				if err != frontier.ErrEmpty {
					t.Fatal(err)
				}
				break
			}
			seen++
			g.Answered(u, &http.Response{StatusCode: 200}, nil)
		}
		if seen != held {
			t.Errorf("resumed: %d URLs handed out, %d held", seen, held)
		}
		checkSum(t, "resumed", g)
	})
}

// TestRestoreClaims: a file whose numbers claim a gigabyte is refused
// having allocated about what it read.
func TestRestoreClaims(t *testing.T) {
	uv := func(b []byte, ns ...uint64) []byte {
		for _, n := range ns {
			b = binary.AppendUvarint(b, n)
		}
		return b
	}
	head := []byte("robots frontier 1\n")
	for name, data := range map[string][]byte{
		"a site of 2^30 URLs":         uv(bytes.Clone(head), 1<<30, 0, 0, 0, 0, 0, 0, 0, 1<<30, 0),
		"a URL of 1 GiB":              uv(bytes.Clone(head), 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1<<30),
		"a site of 2^64-1 URLs":       uv(bytes.Clone(head), 0, 0, 0, 0, 0, 0, 0, 0, 1<<64-1, 0),
		"2^40 retries":                uv(bytes.Clone(head), 0, 0, 0, 0, 0, 0, 0, 0, 1, 1<<40),
		"a URL whose prefix is ahead": uv(bytes.Clone(head), 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1<<20, 5),
	} {
		var before, after runtime.MemStats
		f := &frontier.Frontier{}
		runtime.ReadMemStats(&before)
		err := f.Restore(bytes.NewReader(data))
		runtime.ReadMemStats(&after)
		if !errors.Is(err, frontier.ErrCorrupt) {
			t.Errorf("%s: Restore = %v, want ErrCorrupt", name, err)
		}
		if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
			t.Errorf("%s: Restore allocated %d bytes for %d read", name, d, len(data))
		}
		if f.Len() != 0 {
			t.Errorf("%s: %d URLs held", name, f.Len())
		}
	}
}

// dayWeb answers its first page 429 with a Retry-After of a day, and logs
// when each request arrived and its answer left.
type dayWeb struct {
	mu  sync.Mutex
	n   int
	log []hit
}

func (w *dayWeb) RoundTrip(req *http.Request) (*http.Response, error) {
	h := hit{path: req.URL.Path, arrived: time.Now()}
	time.Sleep(10 * time.Millisecond)
	code, hdr, body := 200, http.Header{}, "page"
	w.mu.Lock()
	if req.URL.Path == "/robots.txt" {
		body = "User-agent: *\nCrawl-delay: 1\n"
	} else if w.n++; w.n == 1 {
		code = 429
		hdr.Set("Retry-After", "86400")
	}
	h.left = time.Now()
	w.log = append(w.log, h)
	w.mu.Unlock()
	return &http.Response{StatusCode: code, Header: hdr, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

// TestRetryAfterADay: a 429 with a Retry-After of a day holds the site for
// a day, and says so (Sites' At, Counts' Held); a worker that will not
// wait that long gets its context's error, not the URL and not ErrEmpty;
// the site is sent nothing before the day has passed.
func TestRetryAfterADay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		web := &dayWeb{}
		tr := &robots.Transport{Base: web, Agent: "ExampleBot", MaxWait: 10 * time.Millisecond}
		client := &http.Client{Transport: tr}
		f := &frontier.Frontier{Turns: tr}
		f.Push("http://a.test/1")
		f.Push("http://a.test/2")
		ctx := context.Background()
		u, err := f.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		answered := time.Now()
		if o, err := f.Answered(u, resp, nil); o != frontier.Retrying || err != nil {
			t.Fatalf("Answered(429) = %v, %v", o, err)
		}
		if s := f.Sites(); len(s) != 1 || s[0].At.Sub(answered) < 24*time.Hour || s[0].Queued != 2 {
			t.Errorf("Sites after a Retry-After of a day: %+v; want a.test at a day from now", s)
		}
		if c := f.Counts(); c.Held != 1 || c.Ready != 0 {
			t.Errorf("Counts: Held %d, Ready %d; want 1 held", c.Held, c.Ready)
		}
		hour, cancel := context.WithTimeout(ctx, time.Hour)
		if u, err := f.Next(hour); err != context.DeadlineExceeded {
			t.Errorf("Next for an hour = %q, %v; want DeadlineExceeded", u, err)
		}
		cancel()
		for {
			u, err := f.Next(ctx)
			if err != nil {
				if err != frontier.ErrEmpty {
					t.Fatal(err)
				}
				break
			}
			if d := time.Since(answered); d < 24*time.Hour {
				t.Errorf("%s handed out %v after a Retry-After of a day", u, d)
			}
			resp, err := client.Get(u)
			if err == nil {
				resp.Body.Close()
			}
			f.Answered(u, resp, err)
		}
		web.mu.Lock()
		defer web.mu.Unlock()
		// robots.txt, the 429; a day later robots.txt (expired), the
		// retry of /1 and /2, each a crawl-delay after the answer before.
		var pages []string
		for i, h := range web.log {
			pages = append(pages, h.path)
			if i > 1 && h.arrived.Sub(web.log[1].left) < 24*time.Hour {
				t.Errorf("%s arrived %v after the 429 with a Retry-After of a day", h.path, h.arrived.Sub(web.log[1].left))
			}
			if i > 0 && h.arrived.Sub(web.log[i-1].left) < time.Second && h.path != "/robots.txt" {
				t.Errorf("%s arrived %v after the answer before; crawl-delay 1 s", h.path, h.arrived.Sub(web.log[i-1].left))
			}
		}
		if g := strings.Join(pages, " "); g != "/robots.txt /1 /robots.txt /1 /2" {
			t.Errorf("the site saw %s", g)
		}
	})
}

// siteLog is a real HTTP site on 127.0.0.1 that logs, as it sees them,
// when each request arrived and when its answer left. Its robots.txt states
// a Crawl-delay; a page whose path starts with /busy is answered 503 with
// Retry-After: 1 the first time.
type siteLog struct {
	delay time.Duration
	mu    sync.Mutex
	log   []served
	seen  map[string]bool
}

type served struct {
	path          string
	code          int
	arrived, left time.Time
	overlap       bool // another request of the site was being served
}

func (s *siteLog) serve(t *testing.T) *httptest.Server {
	var inflight int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := served{path: r.URL.Path, code: 200, arrived: time.Now()}
		s.mu.Lock()
		inflight++
		h.overlap = inflight > 1
		first := !s.seen[r.URL.Path]
		s.seen[r.URL.Path] = true
		s.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		body := "page"
		switch {
		case r.URL.Path == "/robots.txt":
			body = "User-agent: *\nCrawl-delay: " + strconv.FormatFloat(s.delay.Seconds(), 'f', -1, 64) + "\n"
		case strings.HasPrefix(r.URL.Path, "/busy") && first:
			h.code = 503
			w.Header().Set("Retry-After", "1")
		}
		s.mu.Lock()
		inflight--
		h.left = time.Now()
		s.log = append(s.log, h)
		s.mu.Unlock()
		w.WriteHeader(h.code)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRealSites crawls two real sites on 127.0.0.1 through a
// robots.Transport with several workers, some of which stop early: as the
// sites see it, no request arrives while another of the site is served,
// none before the crawl-delay since the answer before, and a page answered
// 503 with Retry-After: 1 is asked again a second after at least.
func TestRealSites(t *testing.T) {
	sites := []*siteLog{{delay: 150 * time.Millisecond, seen: map[string]bool{}}, {delay: 50 * time.Millisecond, seen: map[string]bool{}}}
	tr := &robots.Transport{Agent: "ExampleBot", MaxWait: 20 * time.Millisecond}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	f := &frontier.Frontier{Turns: tr}
	var want int
	for _, s := range sites {
		base := s.serve(t).URL
		if !strings.HasPrefix(base, "http://127.0.0.1:") {
			t.Fatalf("server at %s", base)
		}
		for _, p := range []string{"/1", "/busy1", "/2", "/3", "/busy2", "/4"} {
			if err := f.Push(base + p); err != nil {
				t.Fatal(err)
			}
			want++
		}
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for n := 0; ; n++ {
				if w == 0 && n == 2 {
					return // a worker that stops after two answers
				}
				u, err := f.Next(context.Background())
				if err != nil {
					if err != frontier.ErrEmpty {
						t.Error(err)
					}
					return
				}
				resp, err := client.Get(u)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if _, err := f.Answered(u, resp, err); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for i, s := range sites {
		s.mu.Lock()
		pages, retried := 0, 0
		for j, h := range s.log {
			if h.overlap {
				t.Errorf("site %d: %s arrived while another request was served", i, h.path)
			}
			if h.path != "/robots.txt" {
				pages++
			}
			if j == 0 {
				continue
			}
			prev := s.log[j-1]
			gap := h.arrived.Sub(prev.left)
			if gap < s.delay {
				t.Errorf("site %d: %s arrived %v after the answer to %s; crawl-delay %v", i, h.path, gap, prev.path, s.delay)
			}
			for _, p := range s.log[:j] {
				if p.path == h.path && p.code == 503 {
					retried++
					if d := h.arrived.Sub(p.left); d < time.Second {
						t.Errorf("site %d: %s asked again %v after its 503 with Retry-After: 1", i, h.path, d)
					}
				}
			}
		}
		if pages != 8 || retried != 2 {
			t.Errorf("site %d: %d pages served, %d retried; want 8 (6 and 2 retries), 2", i, pages, retried)
		}
		s.mu.Unlock()
	}
	if c := f.Counts(); c.Finished != uint64(want) || c.Retried != 4 || c.Queued+c.Out != 0 {
		t.Errorf("Counts = %+v; want %d finished, 4 retried", c, want)
	}
}

// TestMemoryAfterRetries: a Frontier through which many URLs were retried
// to the limit and given up, or answered, holds about what an empty one
// does: less than a twentieth of what it held full.
func TestMemoryAfterRetries(t *testing.T) {
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	ctx := context.Background()
	before := heap()
	f := &frontier.Frontier{RetryDelay: time.Nanosecond}
	const n = 50000
	for i := range n {
		f.Push("http://s" + strconv.Itoa(i%500) + ".test/some/path/" + strconv.Itoa(i))
	}
	full := heap()
	r503, r200 := &http.Response{StatusCode: 503}, &http.Response{StatusCode: 200}
	for k := 0; ; k++ {
		u, err := f.Next(ctx)
		if err == frontier.ErrEmpty {
			break
		}
		if k%2 == 0 {
			f.Answered(u, r503, nil)
		} else {
			f.Answered(u, r200, nil)
		}
	}
	after := heap()
	c := f.Counts()
	checkSum(t, "end", f)
	if c.GaveUp == 0 || c.Retried < n/2 {
		t.Fatalf("Counts = %+v; want many retries and some given up", c)
	}
	t.Logf("heap: %d bytes before, %d with %d URLs queued, %d after %d retries", before, full, n, after, c.Retried)
	if grown := int64(after) - int64(before); grown > int64(full-before)/20 {
		t.Errorf("a Frontier emptied after %d retries holds %d bytes more than before it (%d with its URLs)", c.Retried, grown, full-before)
	}
	runtime.KeepAlive(f)
}

// TestRestoreCutMidCrawl cuts, at every byte, a file saved with URLs out
// and retries pending, and restores each into a Frontier in use: each is
// refused with ErrCorrupt and leaves it as it was; a version other than 1
// with ErrVersion.
func TestRestoreCutMidCrawl(t *testing.T) {
	ctx := context.Background()
	src := &frontier.Frontier{RetryDelay: time.Nanosecond}
	for i := range 12 {
		src.Push("http://s" + strconv.Itoa(i%3) + ".test/p/" + strconv.Itoa(i))
	}
	a, _ := src.Next(ctx)
	src.Answered(a, &http.Response{StatusCode: 429}, nil) // a retry pending
	b, _ := src.Next(ctx)                                 // out
	if a == b {
		b, _ = src.Next(ctx)
	}
	var buf bytes.Buffer
	if err := src.Save(&buf); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	f := &frontier.Frontier{}
	f.Push("http://s0.test/p/0")
	f.Push("http://other.test/")
	u, _ := f.Next(ctx)
	want := f.Counts()
	for n := range len(good) {
		if err := f.Restore(bytes.NewReader(good[:n])); !errors.Is(err, frontier.ErrCorrupt) {
			t.Fatalf("cut at %d of %d: Restore = %v, want ErrCorrupt", n, len(good), err)
		}
		if c := f.Counts(); c != want {
			t.Fatalf("cut at %d: Counts %+v, want %+v", n, c, want)
		}
	}
	for _, v := range []string{"0", "2", "01x", "-1", "1 ", "18446744073709551617"} {
		bad := append([]byte("robots frontier "+v+"\n"), good[len("robots frontier 1\n"):]...)
		if err := f.Restore(bytes.NewReader(bad)); !errors.Is(err, frontier.ErrVersion) {
			t.Errorf("version %q: Restore = %v, want ErrVersion", v, err)
		}
	}
	if err := f.Restore(bytes.NewReader(good)); err != nil {
		t.Fatal(err)
	}
	checkSum(t, "restored", f)
	if err := f.Done(u, nil); err != nil {
		t.Errorf("Done of the URL out before the Restore = %v", err)
	}
	if n := f.Len(); n != 12 { // 11 of the file's 12 held, 1 skipped, plus other.test/ (Done: gone)
		t.Errorf("Len = %d, want 12", n)
	}
}

// restartWeb is a.test with a Crawl-delay of 10 s, whose /busy is answered
// 503 with Retry-After: 30 the first time; it logs arrivals and answers.
type restartWeb struct {
	mu   sync.Mutex
	busy int
	log  []hit
}

func (w *restartWeb) RoundTrip(req *http.Request) (*http.Response, error) {
	h := hit{path: req.URL.Path, arrived: time.Now()}
	time.Sleep(20 * time.Millisecond)
	code, hdr, body := 200, http.Header{}, "page"
	w.mu.Lock()
	switch req.URL.Path {
	case "/robots.txt":
		body = "User-agent: *\nCrawl-delay: 10\n"
	case "/busy":
		if w.busy++; w.busy == 1 {
			code = 503
			hdr.Set("Retry-After", "30")
		}
	}
	h.left = time.Now()
	w.log = append(w.log, h)
	w.mu.Unlock()
	return &http.Response{StatusCode: code, Header: hdr, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

// TestRestartKeepsTurns: a crawl saved with a retry pending and with a URL
// out, then restored into a new Frontier over the same Transport (which
// keeps the site's turns), sends nothing before its turn, as the site sees
// it: the crawl-delay after each answer, the Retry-After after the 503.
func TestRestartKeepsTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		web := &restartWeb{}
		tr := &robots.Transport{Base: web, Agent: "ExampleBot", MaxWait: 10 * time.Millisecond}
		client := &http.Client{Transport: tr}
		f := &frontier.Frontier{Turns: tr}
		for _, p := range []string{"/busy", "/1", "/2"} {
			f.Push("http://a.test" + p)
		}
		ctx := context.Background()
		get := func(f *frontier.Frontier) (string, frontier.Outcome) {
			u, err := f.Next(ctx)
			if err != nil {
				return "", 0
			}
			resp, err := client.Get(u)
			if err == nil {
				resp.Body.Close()
			}
			o, _ := f.Answered(u, resp, err)
			return u, o
		}
		if u, o := get(f); u != "http://a.test/busy" || o != frontier.Retrying {
			t.Fatalf("first: %s %v; want /busy retrying", u, o)
		}
		var saved bytes.Buffer
		if err := f.Save(&saved); err != nil { // a retry pending: a kill now
			t.Fatal(err)
		}
		g := &frontier.Frontier{Turns: tr}
		if err := g.Restore(&saved); err != nil {
			t.Fatal(err)
		}
		if u, o := get(g); u != "http://a.test/busy" || o != frontier.Finished {
			t.Fatalf("after the restart: %s %v; want /busy finished", u, o)
		}
		u, err := g.Next(ctx) // out at the save
		if err != nil {
			t.Fatal(err)
		}
		saved.Reset()
		g.Save(&saved)
		h := &frontier.Frontier{Turns: tr}
		if err := h.Restore(&saved); err != nil {
			t.Fatal(err)
		}
		_ = u // never answered: a kill mid-request
		for {
			if u, _ := get(h); u == "" {
				break
			}
		}
		web.mu.Lock()
		defer web.mu.Unlock()
		var paths []string
		for i, x := range web.log {
			paths = append(paths, x.path)
			if i == 0 {
				continue
			}
			least := 10 * time.Second
			if web.log[i-1].path == "/busy" && i == 2 {
				least = 30 * time.Second
			}
			if gap := x.arrived.Sub(web.log[i-1].left); gap < least {
				t.Errorf("%s arrived %v after the answer to %s; want %v at least", x.path, gap, web.log[i-1].path, least)
			}
		}
		if g := strings.Join(paths, " "); g != "/robots.txt /busy /busy /1 /2" {
			t.Errorf("the site saw %s", g)
		}
	})
}

// plainWeb answers robots.txt with no rules, a page's first request 503
// with no Retry-After (the Transport backs off on its own), and the rest
// 200; it logs arrivals and answers.
type plainWeb struct {
	mu  sync.Mutex
	n   map[string]int
	log []hit
}

func (w *plainWeb) RoundTrip(req *http.Request) (*http.Response, error) {
	h := hit{path: req.URL.Path, arrived: time.Now()}
	code, body := 200, "page"
	w.mu.Lock()
	if req.URL.Path == "/robots.txt" {
		body = "User-agent: *\n"
	} else if w.n[req.URL.Path]++; w.n[req.URL.Path] == 1 {
		code = 503
	}
	h.left = time.Now()
	w.log = append(w.log, h)
	w.mu.Unlock()
	return &http.Response{StatusCode: code, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

// TestRestoreKeepsRetryDelay: a URL retried and saved before its retry is
// handed out, once restored, no sooner than its retry delay after the
// Restore, with or without a Transport as Turns (whose own back-off on a
// 503 is shorter than the RetryDelay here).
func TestRestoreKeepsRetryDelay(t *testing.T) {
	for _, withTurns := range []bool{false, true} {
		t.Run(map[bool]string{false: "no Turns", true: "Transport"}[withTurns], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				web := &plainWeb{n: map[string]int{}}
				tr := &robots.Transport{Base: web, Agent: "ExampleBot", MaxWait: 10 * time.Millisecond, NoDefaultPace: true}
				client := &http.Client{Transport: tr}
				newF := func() *frontier.Frontier {
					f := &frontier.Frontier{RetryDelay: 10 * time.Minute}
					if withTurns {
						f.Turns = tr
					}
					return f
				}
				f := newF()
				f.Push("http://a.test/x")
				u, _ := f.Next(context.Background())
				resp, err := client.Get(u)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if o, _ := f.Answered(u, resp, nil); o != frontier.Retrying {
					t.Fatalf("Answered(503) = %v", o)
				}
				time.Sleep(time.Minute) // killed a minute after the 503
				var buf bytes.Buffer
				f.Save(&buf)
				g := newF()
				restored := time.Now()
				if err := g.Restore(&buf); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				if c := g.Counts(); c.Held != 1 || c.Ready != 0 {
					t.Errorf("after Restore: Held %d, Ready %d; want the site held for its retry", c.Held, c.Ready)
				}
				u, err = g.Next(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if d := time.Since(restored); d < 10*time.Minute {
					t.Errorf("the retry handed out %v after the Restore; RetryDelay 10m", d)
				}
				resp, err = client.Get(u)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if o, _ := g.Answered(u, resp, nil); o != frontier.Finished {
					t.Errorf("Answered(200) = %v", o)
				}
				if tr.Stats().NotYet != 0 {
					t.Errorf("%d requests refused for now", tr.Stats().NotYet)
				}
			})
		})
	}
}

// slowRefetch is a site whose robots.txt takes 30 s to answer but the
// first time.
type slowRefetch struct {
	mu sync.Mutex
	n  int
}

func (w *slowRefetch) RoundTrip(req *http.Request) (*http.Response, error) {
	body := "page"
	if req.URL.Path == "/robots.txt" {
		w.mu.Lock()
		w.n++
		n := w.n
		w.mu.Unlock()
		if n > 1 {
			time.Sleep(30 * time.Second)
		}
		body = "User-agent: *\n"
	}
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

// TestExpiredRobotsNoPoll: a site whose robots.txt expired and takes 30 s
// to fetch again is not handed out again and again while it is fetched
// (the Transport's RetryAt for a fetch under way is a short poll): it is
// refused for now once, then held until the fetch is in.
func TestExpiredRobotsNoPoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &robots.Transport{Base: &slowRefetch{}, Agent: "ExampleBot", MaxWait: 10 * time.Millisecond, NoDefaultPace: true}
		client := &http.Client{Transport: tr}
		f := &frontier.Frontier{Turns: tr}
		f.Push("http://a.test/1")
		f.Push("http://a.test/2")
		ctx := context.Background()
		handed := 0
		for {
			u, err := f.Next(ctx)
			if err != nil {
				break
			}
			handed++
			resp, err := client.Get(u)
			if err == nil {
				resp.Body.Close()
			}
			if u == "http://a.test/1" {
				time.Sleep(25 * time.Hour) // robots.txt expires
			}
			f.Answered(u, resp, err)
		}
		if c := f.Counts(); c.NotYet > 1 || handed > 3 || c.Finished != 2 {
			t.Errorf("%d hand-outs for 2 URLs, %d refused for now while robots.txt was fetched again (%+v); want 1 at most", handed, c.NotYet, c)
		}
	})
}

// TestModel drives a Frontier with random operations, restarts included
// (Save, then Restore into a new one), against a model of what it holds:
// the URLs held are the model's, no site has two URLs out, a URL handed out
// is one held and not out, and Counts add up.
func TestModel(t *testing.T) {
	for seed := range 20 {
		synctest.Test(t, func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(uint64(seed), 1))
			newF := func() *frontier.Frontier {
				return &frontier.Frontier{RetryDelay: time.Duration(rnd.IntN(3)) * time.Millisecond, MaxRetries: rnd.IntN(3) - 1}
			}
			f := newF()
			held := map[string]bool{}  // queued or out
			out := map[string]string{} // URL out -> origin
			busy := map[string]bool{}  // origins with a URL out
			for step := range 400 {
				switch op := rnd.IntN(10); {
				case op < 3:
					u := "http://s" + strconv.Itoa(rnd.IntN(4)) + ".test/" + strconv.Itoa(rnd.IntN(30))
					err := f.Push(u)
					if held[u] != (err == frontier.ErrDuplicate) || err != nil && err != frontier.ErrDuplicate {
						t.Fatalf("step %d: Push(%s) = %v; held %v", step, u, err, held[u])
					}
					held[u] = true
				case op < 6:
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
					u, err := f.Next(ctx)
					cancel()
					if err == frontier.ErrEmpty {
						if len(held) != 0 {
							t.Fatalf("step %d: ErrEmpty with %d held", step, len(held))
						}
						continue
					}
					if err != nil {
						continue
					}
					o, _ := frontier.Origin(u)
					if !held[u] || out[u] != "" || busy[o] {
						t.Fatalf("step %d: Next = %s: held %v, out %v, its site busy %v", step, u, held[u], out[u] != "", busy[o])
					}
					out[u], busy[o] = o, true
				default:
					for u, o := range out {
						var got frontier.Outcome
						var err error
						switch rnd.IntN(4) {
						case 0:
							got, err = f.Answered(u, &http.Response{StatusCode: 503}, nil)
						case 1:
							err = f.Requeue(u, time.Now().Add(time.Millisecond))
							got = frontier.Requeued
						case 2:
							got, err = f.Answered(u, nil, context.Canceled)
						default:
							got, err = f.Answered(u, &http.Response{StatusCode: 200}, nil)
						}
						if err != nil {
							t.Fatalf("step %d: answer of %s: %v", step, u, err)
						}
						delete(out, u)
						delete(busy, o)
						if got == frontier.Finished || got == frontier.GaveUp {
							delete(held, u)
						}
						break
					}
				}
				if rnd.IntN(40) == 0 { // a restart: what was out is queued again
					var buf bytes.Buffer
					if err := f.Save(&buf); err != nil {
						t.Fatal(err)
					}
					f = newF()
					if err := f.Restore(&buf); err != nil {
						t.Fatal(err)
					}
					clear(out)
					clear(busy)
				}
				if f.Len() != len(held) {
					t.Fatalf("step %d: Len %d, model %d", step, f.Len(), len(held))
				}
				if c := f.Counts(); c.Out != len(out) {
					t.Fatalf("step %d: Out %d, model %d", step, c.Out, len(out))
				}
				checkSum(t, "step "+strconv.Itoa(step), f)
			}
		})
	}
}

// TestRestoreWhileCrawling restores files into a Frontier whose workers
// are taking and answering its URLs, under -race: every URL restored is
// handed out, and the Counts add up at the end.
func TestRestoreWhileCrawling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var files [][]byte
		for k := range 5 {
			src := &frontier.Frontier{}
			for i := range 40 {
				src.Push("http://s" + strconv.Itoa(i%5) + ".test/" + strconv.Itoa(k) + "/" + strconv.Itoa(i))
			}
			var buf bytes.Buffer
			src.Save(&buf)
			files = append(files, buf.Bytes())
		}
		f := &frontier.Frontier{RetryDelay: time.Millisecond}
		f.Push("http://s0.test/seed")
		var handed sync.Map
		var wg sync.WaitGroup
		wg.Go(func() {
			for _, b := range files {
				if err := f.Restore(bytes.NewReader(b)); err != nil {
					t.Error(err)
				}
				time.Sleep(time.Millisecond)
			}
		})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for w := range 3 {
			wg.Go(func() {
				for n := 0; ; n++ {
					u, err := f.Next(ctx)
					if err != nil {
						return
					}
					handed.Store(u, true)
					time.Sleep(time.Millisecond)
					code := 200
					if (n+w)%4 == 0 {
						code = 429
					}
					f.Answered(u, &http.Response{StatusCode: code}, nil)
				}
			})
		}
		wg.Wait()
		n := 0
		handed.Range(func(any, any) bool { n++; return true })
		c := f.Counts()
		checkSum(t, "end", f)
		if n != 1+5*40 || c.Queued+c.Out != 0 || c.Finished != 201 {
			t.Errorf("%d URLs handed out, want 201; %+v", n, c)
		}
	})
}
