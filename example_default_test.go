package robots_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"

	"github.com/f9014239/robots"
)

// A client that is not a crawler, or a test of code that is not about
// politeness, turns the default pace off: the requests to a site that
// states no crawl-delay then leave at once, none waiting for a turn, while
// robots.txt, Crawl-delay, Request-rate, Retry-After, RateLimit and the
// back-off still apply.
func ExampleTransport_noDefaultPace() {
	mock := httpmock.NewMockTransport()
	mock.RegisterResponder("GET", "https://api.example.com/robots.txt",
		httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /admin\n"))
	mock.RegisterNoResponder(httpmock.NewStringResponder(200, `{"ok":true}`))

	tr := &robots.Transport{Base: mock, Agent: "ExampleBot", NoDefaultPace: true}
	client := &http.Client{Transport: tr}
	for i := range 20 {
		resp, err := client.Get(fmt.Sprintf("https://api.example.com/items/%d", i))
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
	}
	_, err := client.Get("https://api.example.com/admin")
	fmt.Println("admin refused:", errors.Is(err, robots.ErrDisallowed))
	fmt.Println("sent:", tr.Stats().Sent, "waited for a turn:", tr.Stats().TurnWaits)
	// Output:
	// admin refused: true
	// sent: 20 waited for a turn: 0
}

// TestDefaultPaceSynctest is the test of doc/integration.md: a crawler's
// test with the default pace on, inside a synctest bubble, where the pace
// costs no wall time.
func TestDefaultPaceSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := httpmock.NewMockTransport()
		mock.RegisterResponder("GET", "https://example.com/robots.txt", httpmock.NewStringResponder(200, ""))
		mock.RegisterResponder("GET", `=~^https://example\.com/page`, httpmock.NewStringResponder(200, "hello"))
		client := &http.Client{Transport: robots.NewTransport(mock, "ExampleBot")}
		start := time.Now()
		for i := range 100 {
			resp, err := client.Get(fmt.Sprintf("https://example.com/page%d", i))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		// The first page a second after robots.txt, then one a second.
		if took := time.Since(start); took != 100*time.Second {
			t.Errorf("100 pages took %v of the bubble's clock, want 100s at the default pace", took)
		}
	})
}
