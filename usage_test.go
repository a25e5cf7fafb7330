package robots

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/f9014239/robots/usage"
	"github.com/jarcoal/httpmock"
)

// usageRobots states preferences for every crawler and for ExampleBot.
const usageRobots = `Content-Signal: search=yes, ai-train=no
User-Agent: *
Disallow: /never/
Content-Usage: /ai-ok/ train-ai=y

User-Agent: ExampleBot
Allow: /
Content-Usage: /nothing/ train-ai=n, search=n
`

// getResp sends GET u through c and returns the response, its body read
// and closed.
func getResp(t *testing.T, c *http.Client, u string) *http.Response {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func TestUsageOf(t *testing.T) {
	mock := newMock()
	mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, usageRobots))
	mock.RegisterResponder("GET", "https://example.com/headed", httpmock.NewStringResponder(200, "page").
		HeaderSet(http.Header{"Content-Usage": {"search=n", "foo=y"}}))
	mock.RegisterResponder("GET", "https://plain.example/robots.txt", httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /x\n"))
	mock.RegisterResponder("GET", "https://plain.example/headed", httpmock.NewStringResponder(200, "page").
		HeaderSet(http.Header{"Content-Usage": {"train-ai=n"}}))
	for _, c := range []struct {
		agent, url, want string
	}{
		{"OtherBot", "https://example.com/page", "search=y, train-ai=n"},
		{"OtherBot", "https://example.com/ai-ok/page", "search=y, train-ai=n"}, // Content-Signal still says no
		{"OtherBot", "https://example.com/headed", "foo=y, search=n, train-ai=n"},
		{"ExampleBot", "https://example.com/nothing/x", "search=n, train-ai=n"},
		{"ExampleBot", "https://example.com/never/x", "search=y, train-ai=n"},
		{"ExampleBot", "https://plain.example/page", ""},
		{"ExampleBot", "https://plain.example/headed", "train-ai=n"},
	} {
		client := &http.Client{Transport: &Transport{NoDefaultPace: true, Base: mock, Agent: c.agent}}
		resp := getResp(t, client, c.url)
		u := UsageOf(resp)
		if got := u.String(); got != c.want {
			t.Errorf("%s %s: UsageOf = %q want %q", c.agent, c.url, got, c.want)
		}
		cu, err := client.Transport.(*Transport).CheckUsage(context.Background(), resp.Request.URL)
		if err != nil {
			t.Errorf("CheckUsage(%s): %v", c.url, err)
		}
		if got, want := cu.WithHeader(resp.Header.Values("Content-Usage")).String(), c.want; got != want {
			t.Errorf("%s %s: CheckUsage = %q want %q", c.agent, c.url, got, want)
		}
	}
	if got := UsageOf(nil); !got.IsZero() {
		t.Errorf("UsageOf(nil) = %q", got)
	}
	// The deciding lines are named.
	client := &http.Client{Transport: &Transport{NoDefaultPace: true, Base: mock, Agent: "ExampleBot"}}
	rules := UsageOf(getResp(t, client, "https://example.com/nothing/a")).Rules()
	if len(rules) != 2 || rules[0] != (usage.Rule{Rule: "Content-Signal: search=yes, ai-train=no", Line: 1}) ||
		rules[1] != (usage.Rule{Rule: "Content-Usage: /nothing/ train-ai=n, search=n", Line: 8}) {
		t.Errorf("Rules = %+v", rules)
	}
	// A disallowed URL has none, and CheckUsage says so with the refusal.
	cu, err := (&Transport{NoDefaultPace: true, Base: mock, Agent: "OtherBot"}).CheckUsage(context.Background(), &url.URL{Scheme: "https", Host: "example.com", Path: "/never/x"})
	if !errors.Is(err, ErrDisallowed) || !cu.IsZero() {
		t.Errorf("CheckUsage(disallowed) = %q, %v", cu, err)
	}
}

// TestUsageOfKeepsFetchedCopy checks that the preference of a
// response is that of the robots.txt copy in use when it was fetched,
// whatever robots.txt says later.
func TestUsageOfKeepsFetchedCopy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cur atomic.Pointer[httpmock.Responder]
		respond(&cur, httpmock.NewStringResponder(200, "User-agent: *\nContent-Usage: train-ai=y\n"))
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, switchable(&cur))
		client := &http.Client{Transport: &Transport{Base: mock, Agent: "ExampleBot", TTL: time.Hour}}
		first := getResp(t, client, "https://example.com/a")
		if got := UsageOf(first).String(); got != "train-ai=y" {
			t.Fatalf("UsageOf = %q", got)
		}
		respond(&cur, httpmock.NewStringResponder(200, "User-agent: *\nContent-Usage: train-ai=n\n"))
		time.Sleep(time.Hour)
		second := getResp(t, client, "https://example.com/a")
		if n := calls(mock, exampleRobots); n != 2 {
			t.Fatalf("robots.txt fetched %d times, want 2", n)
		}
		if got := UsageOf(second).String(); got != "train-ai=n" {
			t.Errorf("after the change: UsageOf = %q, want train-ai=n", got)
		}
		if got := UsageOf(first).String(); got != "train-ai=y" {
			t.Errorf("the first response's preference changed to %q", got)
		}
		// UsageOf fetches nothing.
		UsageOf(first)
		if n := calls(mock, exampleRobots); n != 2 {
			t.Errorf("robots.txt fetched %d times, want 2", n)
		}
	})
}

func TestUses(t *testing.T) {
	mock := newMock()
	mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, usageRobots))
	mock.RegisterResponder("GET", "https://example.com/a", httpmock.NewStringResponder(200, "page"))
	mock.RegisterResponder("GET", "https://example.com/nothing/", httpmock.NewStringResponder(200, "page"))
	for _, c := range []struct {
		uses     []string
		agent    string
		url      string
		use      string // refused for it, or ""
		rule     string
		ruleLine int
	}{
		{nil, "OtherBot", "https://example.com/a", "", "", 0},
		{[]string{"train-ai"}, "OtherBot", "https://example.com/a", "train-ai", "Content-Signal: search=yes, ai-train=no", 1},
		{[]string{"ai-train"}, "OtherBot", "https://example.com/a", "train-ai", "Content-Signal: search=yes, ai-train=no", 1},
		{[]string{"search"}, "OtherBot", "https://example.com/a", "", "", 0},
		{[]string{"ai-input"}, "OtherBot", "https://example.com/a", "", "", 0},
		{[]string{"search"}, "ExampleBot", "https://example.com/nothing/", "search", "Content-Usage: /nothing/ train-ai=n, search=n", 8},
	} {
		tr := &Transport{NoDefaultPace: true, Base: mock, Agent: c.agent, Uses: c.uses}
		client := &http.Client{Transport: tr}
		before := mock.GetCallCountInfo()["GET "+c.url]
		err := get(client, c.url)
		sent := mock.GetCallCountInfo()["GET "+c.url] - before
		if c.use == "" {
			if err != nil || sent != 1 {
				t.Errorf("%v %s: %v, sent %d, want sent", c.uses, c.url, err, sent)
			}
			continue
		}
		de, ok := errors.AsType[*DisallowedError](err)
		if !ok || !errors.Is(err, ErrDisallowed) || errors.Is(err, ErrUnreachable) || sent != 0 {
			t.Errorf("%v %s: %v, sent %d, want refused before sending", c.uses, c.url, err, sent)
			continue
		}
		if de.Use != c.use || de.Rule != c.rule || de.Line != c.ruleLine || !strings.Contains(de.Error(), c.use+"=n") {
			t.Errorf("%v %s: refused with %+v (%v)", c.uses, c.url, de, de)
		}
		if err := tr.Check(context.Background(), de.URL); !errors.Is(err, ErrDisallowed) {
			t.Errorf("Check: %v", err)
		}
	}
}

// usageBase serves a robots.txt that states a preference, and a new
// response for every other request.
type usageBase struct{}

func (usageBase) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Path == "/robots.txt" {
		return httpmock.NewStringResponse(200, "Content-Signal: search=yes, ai-train=no\n"+benchRobots+"Content-Usage: /articles/ train-ai=y\n"), nil
	}
	return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}, Request: req}, nil
}

// BenchmarkRoundTripUsage is what a request costs to an origin whose
// robots.txt states a preference, with UsageOf asked of every response,
// and with Uses set, against the same request to an origin that states
// none (BenchmarkRoundTrip's robots-no-pacing).
//
//	go test -run '^$' -bench 'RoundTripUsage' -benchmem .
func BenchmarkRoundTripUsage(b *testing.B) {
	req, _ := http.NewRequest("GET", "https://example.com/articles/2024/robots-and-you.html", nil)
	req.Header.Set("User-Agent", "Mozilla/5.0 (compatible; ExampleBot/1.0; +https://example.com/bot)")
	for _, c := range []struct {
		name    string
		base    http.RoundTripper
		uses    []string
		usageOf bool
	}{
		{"no-preference", usageBase{}, nil, false},
		{"preference", usageBase{}, nil, false},
		{"preference+UsageOf", usageBase{}, nil, true},
		{"preference+Uses", usageBase{}, []string{"ai-input"}, false},
	} {
		if c.name == "no-preference" {
			c.base = benchBase{page: &http.Response{StatusCode: 200, Body: http.NoBody}}
		}
		tr := &Transport{NoDefaultPace: true, Base: c.base, Agent: "ExampleBot", IgnoreCrawlDelay: true, IgnoreRetryAfter: true, Uses: c.uses}
		if _, err := tr.RoundTrip(req); err != nil { // warm the cache
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				resp, err := tr.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				if c.usageOf && UsageOf(resp).IsZero() {
					b.Fatal("no usage")
				}
			}
		})
	}
}

// TestUsesUseKey: a crawler that says how much of a page it uses is refused
// where Content-Signal's use key allows less, and counted.
func TestUsesUseKey(t *testing.T) {
	mock := newMock()
	mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200,
		"User-agent: *\nContent-Signal: search=yes, ai-train=no, use=reference\nContent-Signal: /open/ use=full\n"))
	for _, c := range []struct {
		use     string
		url     string
		refused bool
	}{
		{"use=full", "https://example.com/a", true},
		{"use=full", "https://example.com/open/a", false},
		{"use=reference", "https://example.com/a", false},
		{"use=immediate", "https://example.com/a", false},
	} {
		tr := &Transport{NoDefaultPace: true, Base: mock, Agent: "ExampleBot", Uses: []string{c.use}}
		err := get(&http.Client{Transport: tr}, c.url)
		if !c.refused {
			if err != nil {
				t.Errorf("Uses %s, %s: %v, want sent", c.use, c.url, err)
			}
			continue
		}
		de, ok := errors.AsType[*DisallowedError](err)
		if !ok || de.Use != c.use || de.Line != 2 || !strings.Contains(de.Error(), "allows less than use=full of https://example.com/a") {
			t.Errorf("Uses %s, %s: %v, want refused by line 2", c.use, c.url, err)
		}
		if st := tr.Stats(); st.RefusedUsage != 1 || st.Refused != 1 || st.Sent != 0 {
			t.Errorf("Stats %+v, want one refusal for a usage preference, nothing sent", st)
		}
	}
}
