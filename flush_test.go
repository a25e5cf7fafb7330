package robots

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"

	"github.com/f9014239/robots/fleet"
	"github.com/f9014239/robots/internal/pacing"
)

// slowPacer is a Memory Pacer whose every call after an answer (a release,
// a pause) takes a second.
type slowPacer struct{ pacing.Memory }

func (p *slowPacer) Release(ctx context.Context, origin string, a fleet.Answer) error {
	time.Sleep(time.Second)
	return p.Memory.Release(ctx, origin, a)
}

func (p *slowPacer) Pause(ctx context.Context, origin string, until time.Time, why string) error {
	time.Sleep(time.Second)
	return p.Memory.Pause(ctx, origin, until, why)
}

// quotaSpent is a site whose pages answer "quota spent, wait 5 s".
func quotaSpent() *httpmock.MockTransport {
	mock := newMock()
	mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, "User-agent: *\nDisallow: /private\n"))
	mock.RegisterResponder("GET", "https://example.com/page", httpmock.NewStringResponder(200, "page").
		HeaderSet(http.Header{"Ratelimit": {`"default";r=0;t=5`}}))
	return mock
}

// TestFlush: under MaxWait the Pacer hears of an answer on a goroutine of
// its own, after RoundTrip has returned; Flush returns once it has, and
// with ctx's error if ctx ends first.
func TestFlush(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &slowPacer{}
		store := &fleet.MemoryStore{}
		tr := &Transport{Base: quotaSpent(), Agent: "ExampleBot", Pacer: p, Store: store, MaxWait: time.Minute}
		if err := tr.Flush(t.Context()); err != nil {
			t.Fatalf("Flush of a Transport that owes nothing: %v", err)
		}
		client := &http.Client{Transport: tr}
		wantAllowed(t, client, "https://example.com/page")
		answered := time.Now()
		if until, _, _ := p.PausedUntil(t.Context(), "https://example.com"); !until.IsZero() {
			t.Fatal("the Pacer heard of the pause before RoundTrip returned: the test proves nothing")
		}
		done, cancel := context.WithCancel(t.Context())
		cancel()
		if err := tr.Flush(done); !errors.Is(err, context.Canceled) {
			t.Errorf("Flush with a cancelled context while calls are owed: %v", err)
		}
		if err := tr.Flush(t.Context()); err != nil {
			t.Fatalf("Flush: %v", err)
		}
		until, why, _ := p.PausedUntil(t.Context(), "https://example.com")
		if until.Before(answered.Add(5*time.Second)) || why != ReasonRateLimit {
			t.Errorf("after Flush, the Pacer's pause ends %v after the answer (%q); want 5s (%q)", until.Sub(answered), why, ReasonRateLimit)
		}
		// The turn's hold was released too: a second Transport on the
		// Pacer (robots.txt from the Store) waits for the pause, not for
		// a hold, and says why.
		second := &Transport{Base: quotaSpent(), Agent: "ExampleBot", Pacer: p, Store: store, MaxWait: time.Second}
		err := get(&http.Client{Transport: second}, "https://example.com/page")
		if te, ok := errors.AsType[*TurnError](err); !ok || te.Reason != ReasonRateLimit {
			t.Errorf("a second Transport during the pause: %v; want a TurnError for %q", err, ReasonRateLimit)
		}
		if err := second.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}
