package robots

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"
)

// TestDebugRecords: with a Logger at the debug level, a Transport records
// each refusal with its URL, token and deciding rule; each request refused
// for now (with its URL and reason) or held for its turn; a robots.txt
// answered by another origin; and
// each fallback from a failing Pacer.
func TestDebugRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "User-agent: *\nCrawl-delay: 2\nDisallow: /private\n"))
		mock.RegisterResponder("GET", "https://moved.example/robots.txt", httpmock.NewStringResponder(301, "").
			HeaderSet(http.Header{"Location": {"https://example.com/robots.txt"}}))
		mock.RegisterResponder("GET", "https://down.example/robots.txt", httpmock.NewStringResponder(503, ""))
		var buf bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		tr := &Transport{Base: mock, Agent: "ExampleBot", Logger: logger, MaxWait: time.Second,
			Pacer: &fakePacer{err: errors.New("pacer down")}}
		client := &http.Client{Transport: tr}
		get(client, "https://example.com/private")
		get(client, "https://example.com/page") // 2 s after robots.txt: refused for now
		time.Sleep(1500 * time.Millisecond)
		get(client, "https://example.com/page") // waits 0.5 s
		get(client, "https://down.example/x")
		getCtx(WithMaxWait(context.Background(), 0), client, "https://moved.example/x") // waits for the hop's turn
		out := buf.String()
		for _, want := range []string{
			`level=DEBUG msg="robots: refused" url=https://example.com/private agent=ExampleBot rule="Disallow: /private" line=3`,
			`level=DEBUG msg="robots: not sent yet" origin=https://example.com url=https://example.com/page in=2s at=2000-01-01T00:00:02.000Z reason=crawl-delay`,
			`level=DEBUG msg="robots: waiting for the turn" origin=https://example.com url=https://example.com/page wait=500ms reason=crawl-delay`,
			`level=DEBUG msg="robots: waiting for the turn" origin=https://example.com url=https://example.com/robots.txt wait=2s reason=crawl-delay`,
			`level=DEBUG msg="robots: refused" url=https://down.example/x agent=ExampleBot why="robots.txt unreachable"`,
			`msg="robots: fetched robots.txt" origin=https://moved.example access=success status=200`,
			`from=https://example.com`,
			`level=DEBUG msg="robots: pacing in memory" origin=https://example.com err="pacer down"`,
		} {
			if !strings.Contains(out, want) {
				t.Errorf("no record %s in\n%s", want, out)
			}
		}
	})
}
