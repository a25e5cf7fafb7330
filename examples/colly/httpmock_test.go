package main

import (
	"io"
	"net/http"
	"testing"

	"github.com/jarcoal/httpmock"
)

// TestCrawlWithHTTPMock tests the crawler with no server at all: httpmock's
// transport is the robots.Transport's base, and robots.txt is mocked like any
// other URL.
func TestCrawlWithHTTPMock(t *testing.T) {
	mock := httpmock.NewMockTransport() // its own, not httpmock.Activate: tests stay parallel
	html := http.Header{"Content-Type": {"text/html"}}
	mock.RegisterResponder("GET", "https://example.com/robots.txt",
		httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /private/\n"))
	mock.RegisterResponder("GET", "https://example.com/",
		httpmock.NewStringResponder(200, `<a href="/private/x">x</a> <a href="/about">about</a>`).HeaderSet(html))
	mock.RegisterResponder("GET", "https://example.com/about",
		httpmock.NewStringResponder(200, `<a href="/">home</a>`).HeaderSet(html))

	res, err := crawl([]string{"https://example.com/"}, options{agent: "examplebot", max: 10}, mock, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	calls := mock.GetCallCountInfo()
	if n := calls["GET https://example.com/private/x"]; n != 0 {
		t.Errorf("/private/x requested %d times; robots.txt disallows it", n)
	}
	if rule := res.Refused["https://example.com/private/x"]; rule != "Disallow: /private/" {
		t.Errorf("/private/x refused by %q, want Disallow: /private/", rule)
	}
	if n := calls["GET https://example.com/robots.txt"]; n != 1 {
		t.Errorf("robots.txt requested %d times, want once", n)
	}
	if n := calls["GET https://example.com/about"]; n != 1 || len(res.Fetched) != 2 {
		t.Errorf("/about requested %d times, fetched %v; want / and /about once", n, res.Fetched)
	}
}
