package robots

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/f9014239/robots/fleet"
)

// revalSite is a fake origin whose robots.txt carries validators and which
// answers a conditional fetch that matches them with 304 Not Modified. It
// counts the bytes it serves for robots.txt (status line, header and body)
// and the body bytes its 304s offered that were read.
type revalSite struct {
	mu      sync.Mutex
	body    string
	etag    string // "" for none
	lastMod string // "" for none
	// cacheControl of a 200, and of a 304 ("" for none)
	cacheControl, cacheControl304 string
	// ignoreConditional: the site never answers 304 (a site that does
	// not revalidate, or a crawler that does not ask)
	ignoreConditional bool
	// always304 answers every robots.txt request 304, validators or not
	always304 bool
	// etag304 is the ETag a 304 carries, if not etag
	etag304 string

	fetches, notModified int
	served               int64
	conds                []http.Header // the conditional headers of each fetch
	bodyRead304          int
	pages                []string
}

type read304Body struct {
	r    io.Reader
	read *int
	mu   *sync.Mutex
}

func (b *read304Body) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.mu.Lock()
	*b.read += n
	b.mu.Unlock()
	return n, err
}
func (b *read304Body) Close() error { return nil }

func (s *revalSite) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.URL.Path != "/robots.txt" {
		s.pages = append(s.pages, req.URL.Path)
		return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("page")), Request: req}, nil
	}
	s.fetches++
	s.conds = append(s.conds, http.Header{
		"If-None-Match":     req.Header.Values("If-None-Match"),
		"If-Modified-Since": req.Header.Values("If-Modified-Since"),
	})
	h := http.Header{}
	if s.etag != "" {
		h.Set("Etag", s.etag)
	}
	if s.lastMod != "" {
		h.Set("Last-Modified", s.lastMod)
	}
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	inm, ims := req.Header.Get("If-None-Match"), req.Header.Get("If-Modified-Since")
	match := !s.ignoreConditional && ((inm != "" && s.etag != "" && sameTag(inm, s.etag)) ||
		(inm == "" && ims != "" && ims == s.lastMod))
	if match || s.always304 {
		s.notModified++
		if s.cacheControl304 != "" {
			h.Set("Cache-Control", s.cacheControl304)
		}
		if s.etag304 != "" {
			h.Set("Etag", s.etag304)
		}
		s.served += wireSize(304, h, 0)
		// A body a 304 must not have: the Transport must not read it.
		return &http.Response{StatusCode: 304, Header: h, Request: req, ContentLength: -1,
			Body: &read304Body{r: strings.NewReader("User-agent: *\nAllow: /\n"), read: &s.bodyRead304, mu: new(sync.Mutex)}}, nil
	}
	if s.cacheControl != "" {
		h.Set("Cache-Control", s.cacheControl)
	}
	h.Set("Content-Length", fmt.Sprint(len(s.body)))
	s.served += wireSize(200, h, len(s.body))
	return &http.Response{StatusCode: 200, Header: h, ContentLength: int64(len(s.body)),
		Body: io.NopCloser(strings.NewReader(s.body)), Request: req}, nil
}

// wireSize is the size of an HTTP/1.1 response with header h and a body of
// n bytes.
func wireSize(status int, h http.Header, n int) int64 {
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	h.Write(&b)
	b.WriteString("\r\n")
	return int64(b.Len() + n)
}

func (s *revalSite) counts() (fetches, notModified int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fetches, s.notModified
}

func (s *revalSite) cond(i int) http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conds[i]
}

const revalRules = "User-agent: *\nDisallow: /private\nCrawl-delay: 5\n"

// A 304 answered to a fetch that sent no validator renews nothing: it never
// allows a page that robots.txt, or its absence, does not.
func TestNotModifiedWithoutValidatorFailsClosed(t *testing.T) {
	t.Run("first fetch", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			site := &revalSite{always304: true}
			tr := NewTransport(site, "ExampleBot")
			client := &http.Client{Transport: tr}
			e := wantRefused(t, client, "https://example.com/private")
			if !strings.Contains(e.Error(), "no validator") {
				t.Errorf("refusal %q does not say why", e)
			}
			wantRefused(t, client, "https://example.com/public")
			if n := len(site.pages); n != 0 {
				t.Fatalf("%d pages sent", n)
			}
			if st := tr.Stats(); st.FetchUnreachable != 1 || st.FetchNotModified != 0 {
				t.Errorf("stats %+v", st)
			}
		})
	})
	t.Run("after a copy without validators", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			site := &revalSite{body: revalRules}
			tr := NewTransport(site, "ExampleBot")
			tr.TTL = time.Hour
			client := &http.Client{Transport: tr}
			wantRefused(t, client, "https://example.com/private")
			time.Sleep(2 * time.Hour)
			site.mu.Lock()
			site.always304 = true
			site.mu.Unlock()
			wantRefused(t, client, "https://example.com/private") // the last good copy
			wantAllowed(t, client, "https://example.com/public")
			if got := site.cond(1); got.Get("If-None-Match") != "" || got.Get("If-Modified-Since") != "" {
				t.Errorf("refresh sent validators it was never given: %v", got)
			}
			if st := tr.Stats(); st.FetchUnreachable != 1 || st.FetchNotModified != 0 {
				t.Errorf("stats %+v", st)
			}
		})
	})
	t.Run("after an unavailable robots.txt", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var mu sync.Mutex
			status := 404
			tr := NewTransport(rtFunc(func(req *http.Request) (*http.Response, error) {
				mu.Lock()
				defer mu.Unlock()
				h := http.Header{"Etag": {`"x"`}}
				return &http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: req}, nil
			}), "ExampleBot")
			tr.TTL = time.Hour
			client := &http.Client{Transport: tr}
			wantAllowed(t, client, "https://example.com/private")
			time.Sleep(2 * time.Hour)
			mu.Lock()
			status = 304
			mu.Unlock()
			// No copy of rules to renew: unreachable, as a 503 would
			// be, and the last result (no robots.txt) stands.
			wantAllowed(t, client, "https://example.com/private")
			if st := tr.Stats(); st.FetchUnavailable != 1 || st.FetchUnreachable != 1 || st.FetchNotModified != 0 {
				t.Errorf("stats %+v", st)
			}
		})
	})
}

func TestRevalidate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &revalSite{body: revalRules, etag: `"v1"`, lastMod: "Fri, 01 Jan 1999 00:00:00 GMT",
			cacheControl: "max-age=3600", cacheControl304: "max-age=7200"}
		tr := NewTransport(site, "ExampleBot")
		var logged syncBuffer
		tr.Logger = slog.New(slog.NewTextHandler(&logged, nil))
		client := &http.Client{Transport: tr}
		u := mustURL("https://example.com/")
		wantRefused(t, client, "https://example.com/private")
		wantAllowed(t, client, "https://example.com/public")
		cd1, _ := tr.CrawlDelay(context.Background(), u)
		if got := site.cond(0); got.Get("If-None-Match") != "" {
			t.Errorf("first fetch conditional: %v", got)
		}

		time.Sleep(time.Hour + time.Minute)
		wantRefused(t, client, "https://example.com/private")
		wantAllowed(t, client, "https://example.com/public")
		if f, nm := site.counts(); f != 2 || nm != 1 {
			t.Fatalf("%d fetches, %d 304s; want 2, 1", f, nm)
		}
		got := site.cond(1)
		if got.Get("If-None-Match") != `"v1"` || got.Get("If-Modified-Since") != site.lastMod {
			t.Errorf("refresh sent %v", got)
		}
		if l := logged.String(); !strings.Contains(l, "status=304 expires=") || !strings.Contains(l, "not_modified=true") {
			t.Errorf("no record of the 304:\n%s", l)
		}
		if site.bodyRead304 != 0 {
			t.Errorf("%d bytes of a 304's body read", site.bodyRead304)
		}
		if cd2, _ := tr.CrawlDelay(context.Background(), u); cd2 != cd1 || cd1 != 5*time.Second {
			t.Errorf("crawl-delay %v, then %v after the 304; want 5s", cd1, cd2)
		}
		st := tr.Stats()
		if st.FetchSuccess != 1 || st.FetchNotModified != 1 || st.FetchUnreachable != 0 {
			t.Errorf("stats %+v", st)
		}
		o, err := tr.Origin(context.Background(), u)
		if err != nil || o.Access != fleet.AccessSuccess || o.Expires.Sub(o.FetchedAt) != 2*time.Hour {
			t.Fatalf("origin after 304: %+v, %v; want a lifetime of the 304's max-age", o, err)
		}

		// The 304's max-age (2h) is the new lifetime.
		time.Sleep(2*time.Hour - 2*time.Minute)
		wantAllowed(t, client, "https://example.com/public")
		if f, _ := site.counts(); f != 2 {
			t.Fatalf("fetched again before the 304's max-age ran out (%d fetches)", f)
		}
		time.Sleep(3 * time.Minute)
		// The file changes: a full fetch, new rules, new validators.
		site.mu.Lock()
		site.body, site.etag = "User-agent: *\nDisallow: /public\n", `W/"v2"`
		site.mu.Unlock()
		wantAllowed(t, client, "https://example.com/private")
		wantRefused(t, client, "https://example.com/public")
		time.Sleep(time.Hour + time.Minute)
		wantRefused(t, client, "https://example.com/public")
		if got := site.cond(3); got.Get("If-None-Match") != `W/"v2"` {
			t.Errorf("a weak tag is sent as it came: %v", got)
		}
		if f, nm := site.counts(); f != 4 || nm != 2 {
			t.Fatalf("%d fetches, %d 304s; want 4, 2", f, nm)
		}
	})
}

// A 304 that carries another ETag than the one sent does not say our copy is
// current: the last good copy is obeyed, as when unreachable.
func TestNotModifiedOtherETag(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &revalSite{body: revalRules, etag: `"v1"`, etag304: `"v9"`}
		tr := NewTransport(site, "ExampleBot")
		tr.TTL = time.Hour
		client := &http.Client{Transport: tr}
		wantRefused(t, client, "https://example.com/private")
		time.Sleep(2 * time.Hour)
		wantRefused(t, client, "https://example.com/private")
		wantAllowed(t, client, "https://example.com/public")
		if st := tr.Stats(); st.FetchUnreachable != 1 || st.FetchNotModified != 0 {
			t.Errorf("stats %+v", st)
		}
	})
}

func TestValidatorsOf(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	date := now.Format(http.TimeFormat)
	long := `"` + strings.Repeat("a", 8<<10) + `"`
	for _, c := range []struct {
		name         string
		h            http.Header
		etag, lastMo string
	}{
		{"strong", http.Header{"Etag": {`"abc"`}}, `"abc"`, ""},
		{"weak", http.Header{"Etag": {`W/"abc"`}}, `W/"abc"`, ""},
		{"empty tag", http.Header{"Etag": {`""`}}, `""`, ""},
		{"8 KiB", http.Header{"Etag": {long}}, "", ""},
		{"unquoted", http.Header{"Etag": {`abc`}}, "", ""},
		{"quote inside", http.Header{"Etag": {`"a"b"`}}, "", ""},
		{"space inside", http.Header{"Etag": {`"a b"`}}, "", ""},
		{"control", http.Header{"Etag": {"\"a\x01\""}}, "", ""},
		{"last-modified", http.Header{"Date": {date}, "Last-Modified": {"Mon, 07 Dec 2026 10:00:00 GMT"}}, "", "Mon, 07 Dec 2026 10:00:00 GMT"},
		{"last-modified in the future", http.Header{"Date": {date}, "Last-Modified": {"Mon, 07 Dec 2026 13:00:00 GMT"}}, "", ""},
		{"last-modified garbage", http.Header{"Date": {date}, "Last-Modified": {"yesterday"}}, "", ""},
		{"last-modified far future, no date", http.Header{"Last-Modified": {"Fri, 01 Jan 2100 00:00:00 GMT"}}, "", ""},
	} {
		v := validatorsOf(c.h, now)
		if v.etag != c.etag || v.lastModified != c.lastMo {
			t.Errorf("%s: got %q, %q; want %q, %q", c.name, v.etag, v.lastModified, c.etag, c.lastMo)
		}
	}
}

// An ETag too long to keep is not sent back: the refresh is a full fetch.
func TestRevalidateLongETag(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &revalSite{body: revalRules, etag: `"` + strings.Repeat("e", 8<<10) + `"`}
		tr := NewTransport(site, "ExampleBot")
		tr.TTL = time.Hour
		client := &http.Client{Transport: tr}
		wantRefused(t, client, "https://example.com/private")
		time.Sleep(2 * time.Hour)
		wantRefused(t, client, "https://example.com/private")
		if got := site.cond(1); got.Get("If-None-Match") != "" {
			t.Errorf("sent an If-None-Match of %d bytes", len(got.Get("If-None-Match")))
		}
		if f, nm := site.counts(); f != 2 || nm != 0 {
			t.Errorf("%d fetches, %d 304s; want 2, 0", f, nm)
		}
	})
}

// In a fleet, a renewal is shared like a fetch: it is put in the Store, and
// a Transport whose memory is cold revalidates the Store's copy.
func TestRevalidateStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &revalSite{body: revalRules, etag: `"v1"`}
		store := &fleet.MemoryStore{}
		a := NewTransport(site, "ExampleBot")
		a.TTL, a.Store = time.Hour, store
		wantRefused(t, &http.Client{Transport: a}, "https://example.com/private")
		e, _ := store.Get(context.Background(), "https://example.com")
		if e == nil || e.ETag != `"v1"` {
			t.Fatalf("store entry %+v: no ETag", e)
		}
		time.Sleep(2 * time.Hour)

		// b has never seen the origin: it takes the Store's expired
		// entry as its copy to revalidate.
		b := NewTransport(site, "ExampleBot")
		b.TTL, b.Store = time.Hour, store
		wantRefused(t, &http.Client{Transport: b}, "https://example.com/private")
		wantAllowed(t, &http.Client{Transport: b}, "https://example.com/public")
		if f, nm := site.counts(); f != 2 || nm != 1 {
			t.Fatalf("%d fetches, %d 304s; want 2, 1", f, nm)
		}
		e, _ = store.Get(context.Background(), "https://example.com")
		if e.Expires.Before(time.Now().Add(59*time.Minute)) || string(e.Body) != revalRules || e.ETag != `"v1"` {
			t.Fatalf("store entry after the 304: %+v", e)
		}
		// a's copy has expired too: it takes the renewal from the Store.
		wantRefused(t, &http.Client{Transport: a}, "https://example.com/private")
		if f, _ := site.counts(); f != 2 {
			t.Fatalf("%d fetches; the renewal was not shared", f)
		}
		if st := a.Stats(); st.StoreHits != 1 {
			t.Errorf("a: stats %+v", st)
		}
	})
}

// TestRevalidationBytes measures the bytes one site serves for robots.txt
// over a two-day crawl (a page every 30 seconds, in fake time), to a
// Transport that revalidates and to one that does not (the same site,
// answering every fetch in full), for robots.txt files of the corpus's median
// and 90th-percentile sizes, with no Cache-Control (DefaultTTL) and with
// max-age=3600. doc/design.md quotes its output:
//
//	go test -run TestRevalidationBytes -v .
func TestRevalidationBytes(t *testing.T) {
	crawl := func(size int, cc string, revalidate bool) (served int64, fetches int) {
		synctest.Test(t, func(t *testing.T) {
			body := strings.Repeat("Disallow: /x\n", size/13+1)[:size]
			site := &revalSite{body: body, etag: `"5f3e-1a2b3c"`, lastMod: "Fri, 01 Jan 1999 00:00:00 GMT",
				cacheControl: cc, cacheControl304: cc, ignoreConditional: !revalidate}
			client := &http.Client{Transport: NewTransport(site, "ExampleBot")}
			for i := 0; i < 2*24*60*2; i++ {
				if err := get(client, fmt.Sprintf("https://example.com/page%d", i)); err != nil {
					t.Fatal(err)
				}
				time.Sleep(30 * time.Second)
			}
			served, fetches = site.served, site.fetches
		})
		return
	}
	for _, size := range []int{563, 3947} {
		for _, cc := range []string{"", "max-age=3600"} {
			with, n := crawl(size, cc, true)
			without, m := crawl(size, cc, false)
			if n != m || with >= without {
				t.Errorf("%d B, %q: %d bytes in %d fetches revalidating, %d in %d without", size, cc, with, n, without, m)
			}
			t.Logf("robots.txt of %4d B, Cache-Control %-14q: %3d fetches, %7d bytes served revalidating, %7d without (%.2fx)",
				size, cc, n, with, without, float64(without)/float64(with))
		}
	}
}

// A robots.txt that redirects to another host is revalidated there: each
// hop carries the validators, and the 304 of the final one renews the copy.
func TestRevalidateRedirect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var cdnConds []string
		base := rtFunc(func(req *http.Request) (*http.Response, error) {
			switch req.URL.Host + req.URL.Path {
			case "example.com/robots.txt":
				return &http.Response{StatusCode: 301, Header: http.Header{"Location": {"https://cdn.example.net/sites/example/robots.txt"}},
					Body: http.NoBody, Request: req}, nil
			case "cdn.example.net/sites/example/robots.txt":
				mu.Lock()
				cdnConds = append(cdnConds, req.Header.Get("If-None-Match"))
				mu.Unlock()
				if req.Header.Get("If-None-Match") == `"c1"` {
					return &http.Response{StatusCode: 304, Header: http.Header{"Etag": {`"c1"`}}, Body: http.NoBody, Request: req}, nil
				}
				return &http.Response{StatusCode: 200, Header: http.Header{"Etag": {`"c1"`}}, Request: req,
					Body: io.NopCloser(strings.NewReader(revalRules)), ContentLength: int64(len(revalRules))}, nil
			}
			return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
		})
		tr := NewTransport(base, "ExampleBot")
		tr.TTL = time.Hour
		client := &http.Client{Transport: tr}
		wantRefused(t, client, "https://example.com/private")
		time.Sleep(2 * time.Hour)
		wantRefused(t, client, "https://example.com/private")
		wantAllowed(t, client, "https://example.com/public")
		if len(cdnConds) != 2 || cdnConds[0] != "" || cdnConds[1] != `"c1"` {
			t.Errorf("the CDN saw If-None-Match %q", cdnConds)
		}
		if st := tr.Stats(); st.FetchNotModified != 1 || st.FetchSuccess != 1 {
			t.Errorf("stats %+v", st)
		}
	})
}
