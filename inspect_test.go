package robots

import (
	"context"
	"testing"

	"github.com/jarcoal/httpmock"
)

// TestRobotsTxtNeverNil: what RobotsTxt hands out can be used whatever the
// fetch found: an unavailable or unreachable robots.txt is an empty file.
func TestRobotsTxtNeverNil(t *testing.T) {
	mock := newMock()
	mock.RegisterResponder("GET", "https://gone.example/robots.txt", httpmock.NewStringResponder(404, ""))
	mock.RegisterResponder("GET", "https://down.example/robots.txt", httpmock.NewStringResponder(503, ""))
	mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "Sitemap: https://example.com/s.xml\nUser-agent: *\nDisallow: /x\n"))
	tr := NewTransport(mock, "ExampleBot")
	for _, c := range []struct {
		u        string
		access   Access
		sitemaps int
	}{
		{"https://gone.example/", AccessUnavailable, 0},
		{"https://down.example/", AccessUnreachable, 0},
		{"https://example.com/", AccessSuccess, 1},
	} {
		rt, err := tr.RobotsTxt(context.Background(), mustURL(c.u))
		if err != nil {
			t.Fatal(err)
		}
		if rt.Access != c.access || rt.Robots == nil || len(rt.Robots.Sitemaps()) != c.sitemaps {
			t.Errorf("%s: Access %v, Robots %v; want %v and %d sitemaps", c.u, rt.Access, rt.Robots, c.access, c.sitemaps)
			continue
		}
		rt.Robots.Group("ExampleBot").CrawlDelay()
	}
}
