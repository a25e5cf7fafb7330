package robots

import (
	"net/http"
	"testing"

	"github.com/jarcoal/httpmock"
)

func TestStats(t *testing.T) {
	mock := newMock()
	mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /private\n"))
	mock.RegisterResponder("GET", "https://gone.example/robots.txt", httpmock.NewStringResponder(404, ""))
	mock.RegisterResponder("GET", "https://down.example/robots.txt", httpmock.NewStringResponder(500, ""))
	tr := noDefaultPace(NewTransport(mock, "ExampleBot"))
	client := &http.Client{Transport: tr}
	wantAllowed(t, client, "https://example.com/a")
	wantAllowed(t, client, "https://example.com/b")
	wantRefused(t, client, "https://example.com/private")
	wantAllowed(t, client, "https://gone.example/a")
	wantRefused(t, client, "https://down.example/a")
	wantRefused(t, client, "https://down.example/b")
	want := Stats{CacheHits: 3, LoadWaits: 3, Sent: 3, Refused: 3, RefusedRule: 1, RefusedUnreachable: 2, AllowedNoRules: 1,
		FetchSuccess: 1, FetchUnavailable: 1, FetchUnreachable: 1}
	if got := tr.Stats(); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
}
