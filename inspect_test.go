package robots

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/f9014239/robots/fleet"

	"github.com/jarcoal/httpmock"
)

// TestOriginNeverNil: what Origin hands out can be used whatever the
// fetch found: an unavailable or unreachable robots.txt is an empty file.
func TestOriginNeverNil(t *testing.T) {
	mock := newMock()
	mock.RegisterResponder("GET", "https://gone.example/robots.txt", httpmock.NewStringResponder(404, ""))
	mock.RegisterResponder("GET", "https://down.example/robots.txt", httpmock.NewStringResponder(503, ""))
	mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "Sitemap: https://example.com/s.xml\nUser-agent: *\nDisallow: /x\n"))
	tr := noDefaultPace(NewTransport(mock, "ExampleBot"))
	for _, c := range []struct {
		u        string
		access   fleet.Access
		sitemaps int
	}{
		{"https://gone.example/", fleet.AccessUnavailable, 0},
		{"https://down.example/", fleet.AccessUnreachable, 0},
		{"https://example.com/", fleet.AccessSuccess, 1},
	} {
		rt, err := tr.Origin(context.Background(), mustURL(c.u))
		if err != nil {
			t.Fatal(err)
		}
		if rt.Access != c.access || rt.File == nil || len(rt.File.Sitemaps()) != c.sitemaps {
			t.Errorf("%s: fleet.Access %v, File %v; want %v and %d sitemaps", c.u, rt.Access, rt.File, c.access, c.sitemaps)
			continue
		}
		rt.File.Group("ExampleBot").CrawlDelay()
	}
}

// TestInspectWithOneFetch: what robots.txt says, through the Transport, with one fetch.
func TestInspectWithOneFetch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200,
			"User-agent: *\nCrawl-delay: 2\nDisallow: /x\n\nUser-agent: Google-Extended\nDisallow: /\n\nSitemap: https://example.com/sitemap.xml\n"))
		tr := NewTransport(mock, "ExampleBot")
		ctx := context.Background()
		u := mustURL("https://example.com/article")
		rt, err := tr.Origin(ctx, u)
		if err != nil || rt.Access != fleet.AccessSuccess || rt.Name != "https://example.com" {
			t.Fatalf("RobotsTxt = %+v, %v", rt, err)
		}
		if sm := rt.File.Sitemaps(); len(sm) != 1 || sm[0] != "https://example.com/sitemap.xml" {
			t.Errorf("Sitemaps = %q", sm)
		}
		if d, err := tr.CrawlDelay(ctx, u); d != 2*time.Second || err != nil {
			t.Errorf("CrawlDelay = %v, %v, want 2s", d, err)
		}
		if err := tr.Check(WithAgent(ctx, "Google-Extended"), u); !errors.Is(err, ErrDisallowed) {
			t.Errorf("Check as Google-Extended: %v, want refused", err)
		}
		if err := tr.Check(ctx, u); err != nil {
			t.Errorf("Check as ExampleBot: %v, want allowed", err)
		}
		if n := calls(mock, exampleRobots); n != 1 {
			t.Errorf("%d fetches, want 1", n)
		}
		tr.Forget(u)
		if _, err := tr.Origin(ctx, u); err != nil {
			t.Fatal(err)
		}
		if n := calls(mock, exampleRobots); n != 2 {
			t.Errorf("%d fetches after Forget, want 2", n)
		}
		// The pace outlives Forget: the fetch after it waited its turn.
		if st := tr.Stats(); st.TurnWaits == 0 {
			t.Errorf("the fetch after Forget did not wait for its turn: %+v", st)
		}
	})
}
