package robots

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/f9014239/robots/fleet"

	"github.com/jarcoal/httpmock"
)

func TestCheck(t *testing.T) {
	mock := newMock()
	mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "User-agent: ExampleBot\nDisallow: /private\n"))
	tr := noDefaultPace(NewTransport(mock, "ExampleBot"))
	ctx := context.Background()
	check := func(s string) error {
		u, _ := url.Parse(s)
		return tr.Check(ctx, u)
	}
	if err := check("https://example.com/private"); !errors.Is(err, ErrDisallowed) {
		t.Errorf("Check(/private) = %v, want ErrDisallowed", err)
	}
	if err := check("https://example.com/public"); err != nil {
		t.Errorf("Check(/public) = %v", err)
	}
	if err := check("https://example.com/robots.txt"); err != nil {
		t.Errorf("Check(/robots.txt) = %v", err)
	}
	if err := check("/relative"); err == nil || errors.Is(err, ErrDisallowed) {
		t.Errorf("Check(/relative) = %v, want an error", err)
	}
	if err := tr.Check(ctx, nil); err == nil {
		t.Errorf("Check(nil) = nil")
	}
	if n := mock.GetTotalCallCount(); n != 1 {
		t.Errorf("%d requests sent, want only the robots.txt fetch", n)
	}
}

// TestEmptyQuery: a URL with an empty query ("/mld?") is matched as sent,
// with its "?", so that a rule written for it applies.
func TestEmptyQuery(t *testing.T) {
	mock := newMock()
	mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /mld?\nDisallow: /*?$\n"))
	client := &http.Client{Transport: noDefaultPace(NewTransport(mock, "ExampleBot"))}
	for _, u := range []string{"https://example.com/mld?", "https://example.com/x?"} {
		if de := wantRefused(t, client, u); de.Line == 0 {
			t.Errorf("%s: refused by %+v, want a rule", u, de)
		}
	}
	wantAllowed(t, client, "https://example.com/mld")
	for _, c := range []struct{ in, want string }{
		{"https://example.com/mld?", "/mld?"}, {"https://example.com/mld", "/mld"}, {"https://example.com/?", "/?"},
		{"https://example.com/a?b", "/a?b"},
	} {
		if got := target(mustURL(c.in)); got != c.want {
			t.Errorf("target(%s) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestZeroEntryRefuses: an Entry from a Store that says nothing but when it
// expires refuses until then; so do entries whose fields are left at zero or
// out of range.
func TestZeroEntryRefuses(t *testing.T) {
	far := time.Now().Add(time.Hour)
	for name, e := range map[string]*fleet.Entry{
		"only Expires":               {Expires: far},
		"unreachable, no since":      {Access: fleet.AccessUnreachable, Expires: far, Failures: 3},
		"unknown fleet.Access":       {Access: fleet.Access(7), Expires: far},
		"negative fleet.Access":      {Access: fleet.Access(-1), Expires: far},
		"unreachable 31 days, since": {Access: fleet.AccessUnreachable, Expires: far, UnreachableSince: time.Now().Add(-time.Hour)},
	} {
		store := &fleet.MemoryStore{}
		store.Put(context.Background(), "https://example.com", e)
		mock := newMock()
		client := &http.Client{Transport: &Transport{NoDefaultPace: true, Base: mock, Agent: "ExampleBot", Store: store}}
		err := get(client, "https://example.com/page")
		if !errors.Is(err, ErrUnreachable) {
			t.Errorf("%s: err = %v, want refused as unreachable", name, err)
		}
		if n := mock.GetTotalCallCount(); n != 0 {
			t.Errorf("%s: %d requests sent", name, n)
		}
	}
	// The 30-day rule still holds for an entry that says since when.
	store := &fleet.MemoryStore{}
	store.Put(context.Background(), "https://example.com", &fleet.Entry{Expires: far, UnreachableSince: time.Now().Add(-unreachableAllowAfter - time.Hour)})
	client := &http.Client{Transport: &Transport{NoDefaultPace: true, Base: newMock(), Agent: "ExampleBot", Store: store}}
	wantAllowed(t, client, "https://example.com/page")
}

// TestOpaqueURLIsChecked guards against this: "Every request is checked". A
// request whose URL has Path "/robots.txt" passes without a check, but
// net/http sends URL.Opaque as the request-URI when it is set: a disallowed
// path goes out unchecked. (target() reads Opaque for the check; RoundTrip's
// /robots.txt shortcut does not.)
func TestOpaqueURLIsChecked(t *testing.T) {
	var got []string
	var mu sync.Mutex
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.RequestURI)
		mu.Unlock()
		if r.URL.Path == "/robots.txt" && r.RequestURI == "/robots.txt" {
			io.WriteString(w, "User-agent: *\nDisallow: /private\n")
			return
		}
		io.WriteString(w, "secret")
	}))
	defer ts.Close()
	base := ts.Client().Transport
	tr := noDefaultPace(NewTransport(base, "ExampleBot"))
	host := strings.TrimPrefix(ts.URL, "http://")
	u := &url.URL{Scheme: "http", Host: host, Opaque: "/private/secret", Path: "/robots.txt"}
	if err := tr.Check(context.Background(), &url.URL{Scheme: "http", Host: host, Path: "/private/secret"}); !errors.Is(err, ErrDisallowed) {
		t.Fatalf("Check(/private/secret) = %v, want ErrDisallowed", err)
	}
	req := &http.Request{Method: "GET", URL: u, Header: http.Header{}, Host: host}
	resp, err := tr.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range got {
		if strings.HasPrefix(p, "/private") {
			t.Errorf("the server received %s, which robots.txt disallows (err = %v)", p, err)
		}
	}
}

// TestRefusalsToldApart: a rule, an unreachable robots.txt and a scheme the
// Transport cannot check are three different errors.
func TestRefusalsToldApart(t *testing.T) {
	mock := newMock()
	mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /no\n"))
	mock.RegisterResponder("GET", "https://down.example/robots.txt", httpmock.NewStringResponder(503, ""))
	client := &http.Client{Transport: noDefaultPace(NewTransport(mock, "ExampleBot"))}

	err := get(client, "https://example.com/no")
	if !errors.Is(err, ErrDisallowed) || errors.Is(err, ErrUnreachable) {
		t.Errorf("rule: err = %v, want ErrDisallowed only", err)
	}
	start := time.Now()
	err = get(client, "https://down.example/page")
	de, _ := errors.AsType[*DisallowedError](err)
	if !errors.Is(err, ErrDisallowed) || !errors.Is(err, ErrUnreachable) || de == nil || de.RetryAt.Before(start.Add(retryMin-time.Second)) {
		t.Errorf("unreachable: err = %v (%+v), want ErrDisallowed and ErrUnreachable, RetryAt about a minute away", err, de)
	}
	err = get(client, "ftp://example.com/file")
	if err == nil || errors.Is(err, ErrDisallowed) || !strings.Contains(err.Error(), "unsupported protocol scheme") {
		t.Errorf("ftp: err = %v, want an unsupported scheme, not a refusal", err)
	}
	if n := calls(mock, "ftp://example.com/robots.txt"); n != 0 {
		t.Errorf("%d fetches of an ftp robots.txt", n)
	}
}

// TestAllowedRequestDoesNotAllocate: the hot path stays free of allocations
// when the request has a User-Agent.
func TestAllowedRequestDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations are counted without the race detector")
	}
	base := benchBase{page: &http.Response{StatusCode: 200, Body: http.NoBody}}
	tr := noDefaultPace(NewTransport(base, "ExampleBot"))
	req, _ := http.NewRequest("GET", "https://example.com/page", nil)
	req.Header.Set("User-Agent", "ExampleBot/1.0")
	tr.RoundTrip(req)
	if n := testing.AllocsPerRun(100, func() { tr.RoundTrip(req) }); n != 0 {
		t.Errorf("%v allocations per allowed request, want 0", n)
	}
}
