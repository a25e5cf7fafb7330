package robots

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/f9014239/robots/fleet"

	"github.com/f9014239/robots/matcher"
)

// fuzzBase is the base transport of FuzzTransport: every fetch of robots.txt
// (any request without the fuzzPage header, redirect hops included) gets the
// outcome under test, and every page request 200.
type fuzzBase struct {
	status        int
	cacheControl  string
	retryAfter    string
	location      string
	contentLength string
	body          []byte
	fault         fuzzFault
	fetches       atomic.Int32 // requests for robots.txt and its redirects
}

type fuzzFault uint8

const (
	fuzzNone        fuzzFault = iota // the response as given
	fuzzError                        // RoundTrip fails
	fuzzCutBody                      // the body fails after its bytes, as a reset connection does
	fuzzNilBody                      // a response with a nil Body, as test doubles return
	fuzzNilResponse                  // neither a response nor an error
	fuzzNumFaults
)

const fuzzPage = "X-Fuzz-Page"

var errFuzzNetwork = errors.New("fuzz: connection reset by peer")

func (b *fuzzBase) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get(fuzzPage) != "" {
		return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}, Request: req}, nil
	}
	b.fetches.Add(1)
	switch b.fault {
	case fuzzError:
		return nil, errFuzzNetwork
	case fuzzNilResponse:
		return nil, nil
	}
	h := http.Header{}
	for k, v := range map[string]string{
		"Cache-Control":  b.cacheControl,
		"Retry-After":    b.retryAfter,
		"Location":       b.location,
		"Content-Length": b.contentLength,
	} {
		if v != "" {
			h.Set(k, v)
		}
	}
	cl := int64(-1)
	if n, err := strconv.ParseInt(b.contentLength, 10, 64); err == nil {
		cl = n
	}
	var body io.Reader = strings.NewReader(string(b.body))
	if b.fault == fuzzCutBody {
		body = io.MultiReader(body, fuzzErrReader{})
	}
	resp := &http.Response{StatusCode: b.status, Header: h, Body: io.NopCloser(body), ContentLength: cl, Request: req}
	if b.fault == fuzzNilBody {
		resp.Body = nil
	}
	return resp, nil
}

type fuzzErrReader struct{}

func (fuzzErrReader) Read([]byte) (int, error) { return 0, errFuzzNetwork }

// FuzzTransport feeds arbitrary outcomes of a robots.txt fetch (status,
// Cache-Control, Retry-After, Location, Content-Length, body, network fault)
// through an in-process base, and checks the Transport's invariants: no
// panic; never a response together with an error; /robots.txt always sent;
// every refusal a *DisallowedError matching ErrDisallowed; a 2xx body
// decides as the matcher does; 3xx (which the base answers on every hop)
// other than 304, and 4xx other than 429, allow; 304 (to a first fetch,
// which sends no validator), 429, 5xx, other statuses, network faults and
// a 2xx body shorter than its Content-Length refuse the origin whole, with Rule "" and Err set; the entry is cached for
// a positive time no longer than a day, and the second request decides the
// same without a new fetch.
func FuzzTransport(f *testing.F) {
	const rules = "User-agent: *\nDisallow: /private\nAllow: /private/ok\n\nUser-agent: FuzzBot\nDisallow: /fuzz$\n"
	for _, s := range []int{200, 204, 299, 301, 302, 303, 307, 308, 304, 400, 401, 403, 404, 410, 451, 429, 500, 502, 503, 599, 100, 103, 0, 600, 999, -1} {
		f.Add(s, "", "", "", "", []byte(rules), uint8(fuzzNone), "private/x")
	}
	f.Add(200, "max-age=60", "", "", "33", []byte(rules), uint8(fuzzNone), "fuzz")
	f.Add(200, "no-store, max-age=99999999999999999999", "", "", "1073741824", []byte(rules), uint8(fuzzCutBody), "private/ok")
	f.Add(200, "", "", "", "-5", []byte("\xEF\xBB\xBF"+rules), uint8(fuzzNone), "private?q=1")
	f.Add(301, "", "", "/robots.txt", "", []byte{}, uint8(fuzzNone), "private")
	f.Add(302, "", "", "https://other.example/robots.txt", "", []byte{}, uint8(fuzzNone), "x")
	f.Add(307, "", "", "ftp://other.example/robots.txt", "", []byte{}, uint8(fuzzNone), "x")
	f.Add(308, "", "", "//[::1%zz]/", "", []byte{}, uint8(fuzzNone), "x")
	f.Add(429, "", "120", "", "", []byte{}, uint8(fuzzNone), "")
	f.Add(503, "", "Wed, 21 Oct 2015 07:28:00 GMT", "", "", []byte{}, uint8(fuzzNone), "private")
	f.Add(503, "", "99999999999999999999", "", "", []byte{}, uint8(fuzzNone), "private")
	f.Add(200, "", "", "", "", []byte(rules), uint8(fuzzError), "private")
	f.Add(404, "max-age=0", "", "", "", []byte(rules), uint8(fuzzCutBody), "private")
	f.Add(200, "", "", "", "", []byte(rules), uint8(fuzzNone), "robots.txt")
	for _, body := range fuzzSeedBodies() {
		f.Add(200, "", "", "", "", body, uint8(fuzzNone), "private/index.php?a=b")
	}

	f.Fuzz(func(t *testing.T, status int, cacheControl, retryAfter, location, contentLength string, body []byte, fault uint8, path string) {
		base := &fuzzBase{
			status: status, cacheControl: cacheControl, retryAfter: retryAfter, location: location,
			contentLength: contentLength, body: body, fault: fuzzFault(fault % uint8(fuzzNumFaults)),
		}
		store := &fleet.MemoryStore{}
		tr := &Transport{NoDefaultPace: true, Base: base, Agent: "FuzzBot", Store: store, IgnoreCrawlDelay: true}
		u := &url.URL{Scheme: "https", Host: "fuzz.example", Path: "/" + path}
		ctx := context.Background()

		start := time.Now()
		resp, err := fuzzRoundTrip(t, tr, u)
		end := time.Now()
		if u.Path == "/robots.txt" {
			if errors.Is(err, ErrDisallowed) || tr.Check(ctx, u) != nil {
				t.Fatalf("/robots.txt refused: %v", err)
			}
			switch base.fault {
			case fuzzError:
				if !errors.Is(err, errFuzzNetwork) {
					t.Fatalf("/robots.txt: %v, want the base's error", err)
				}
			case fuzzNilResponse, fuzzNilBody:
				// Passed through as the base returned them.
			default:
				if resp == nil || resp.StatusCode != status {
					t.Fatalf("/robots.txt: %v %v, want the base's response", resp, err)
				}
			}
			return
		}

		// The verdict the access result calls for.
		var want decision
		if base.fault == fuzzNilBody {
			body = nil // read as empty
		}
		declared, perr := strconv.ParseInt(base.contentLength, 10, 64)
		short := perr == nil && int64(len(body)) < min(declared, DefaultMaxBodySize) // less than Content-Length said
		unreachable := base.fault == fuzzError || base.fault == fuzzNilResponse ||
			status == http.StatusTooManyRequests || status < 200 || status >= 500 ||
			status == http.StatusNotModified || // to a fetch that sent no validator
			status <= 299 && (base.fault == fuzzCutBody || short)
		switch {
		case unreachable:
			want = decision{allowed: false}
		case status <= 299:
			b := body[:min(len(body), DefaultMaxBodySize)]
			m := matcher.Parse(b).Group("FuzzBot").Match(target(u))
			want = decision{allowed: m.Allowed, rule: m.Rule, line: m.Line}
		default: // 3xx, 4xx
			want = decision{allowed: true}
		}
		check := func(err error) {
			t.Helper()
			if err == nil {
				if !want.allowed {
					t.Fatalf("allowed, want refused (status %d, fault %d)", status, base.fault)
				}
				return
			}
			de, ok := errors.AsType[*DisallowedError](err)
			if !ok || !errors.Is(err, ErrDisallowed) {
				t.Fatalf("error %v (%T) is not a *DisallowedError matching ErrDisallowed", err, err)
			}
			if want.allowed {
				t.Fatalf("refused (%v), want allowed (status %d, fault %d)", err, status, base.fault)
			}
			if unreachable {
				if de.Rule != "" || de.Line != 0 || de.Err == nil {
					t.Fatalf("unreachable: refusal %+v, want Rule \"\" and Err set", de)
				}
			} else if de.Rule != want.rule || de.Line != want.line || de.Err != nil {
				t.Fatalf("refusal by %q line %d (err %v), want %q line %d", de.Rule, de.Line, de.Err, want.rule, want.line)
			}
			if de.Agent != "FuzzBot" || de.URL.String() != u.String() {
				t.Fatalf("refusal names %q %v, want FuzzBot %v", de.Agent, de.URL, u)
			}
		}
		check(err)
		_ = resp

		// The entry: fetched once, cached for a positive time of at most a
		// day (Retry-After and max-age cannot push it further), its body
		// within the size limit.
		fetches := base.fetches.Load()
		if fetches < 1 || fetches > maxRedirects+1 {
			t.Fatalf("%d requests for one fetch", fetches)
		}
		e, _ := store.Get(ctx, "https://fuzz.example")
		if e == nil {
			t.Fatal("no entry stored")
		}
		if !e.Expires.After(start) || e.Expires.After(end.Add(DefaultTTL)) {
			t.Fatalf("entry expires in %v", e.Expires.Sub(start))
		}
		if len(e.Body) > DefaultMaxBodySize || (e.Access == fleet.AccessUnreachable) != unreachable {
			t.Fatalf("entry %v with a %d-byte body, want unreachable=%v", e.Access, len(e.Body), unreachable)
		}

		// Again, from the cache, and through Check.
		_, err = fuzzRoundTrip(t, tr, u)
		check(err)
		check(tr.Check(ctx, u))
		if n := base.fetches.Load(); n != fetches {
			t.Fatalf("fetched again within the entry's lifetime (%d requests, then %d)", fetches, n)
		}
	})
}

// fuzzRoundTrip sends GET u through tr as a page request and checks the
// RoundTripper contract: a response or an error, not both.
func fuzzRoundTrip(t *testing.T, tr *Transport, u *url.URL) (*http.Response, error) {
	t.Helper()
	req := (&http.Request{Method: http.MethodGet, URL: u, Header: http.Header{}}).WithContext(context.Background())
	if u.Path != "/robots.txt" {
		req.Header.Set(fuzzPage, "1")
	}
	resp, err := tr.RoundTrip(req)
	if resp != nil {
		if err != nil {
			t.Fatalf("a response together with an error: %v", err)
		}
		if resp.Body != nil {
			resp.Body.Close()
		}
	} else if err == nil && !(u.Path == "/robots.txt" && tr.Base.(*fuzzBase).fault == fuzzNilResponse) {
		// (/robots.txt is passed through as the base answers it.)
		t.Fatal("neither a response nor an error")
	}
	return resp, err
}

// fuzzSeedBodies returns a few real robots.txt files from the shared corpus,
// when it is there: small and large ones, an HTML page among them.
func fuzzSeedBodies() [][]byte {
	files, _ := filepath.Glob("testdata/shared/corpus/*/*")
	slices.Sort(files)
	var bodies [][]byte
	for i, file := range files {
		if i%400 != 0 || strings.HasSuffix(file, ".md") || strings.HasSuffix(file, ".tsv") {
			continue
		}
		if b, err := os.ReadFile(file); err == nil && len(b) <= 64<<10 {
			bodies = append(bodies, b)
		}
	}
	return bodies
}
