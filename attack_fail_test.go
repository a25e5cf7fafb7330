package robots

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/f9014239/robots/fleet"
)

// TestAttackPanickingBaseLeaksRoom shows that a Base that panics leaks the
// room its request held in its registrable domain's group: RoundTrip calls
// Base with no deferred release, so after DomainCap (4) panics, recovered
// by the caller as a worker pool does, every origin of the domain is
// refused for room for ever ("domain-cap"), though nothing is in flight.
func TestAttackPanickingBaseLeaksRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &atkSite{}
		rt := rtFunc(func(req *http.Request) (*http.Response, error) {
			if req.URL.Path == "/boom" {
				panic("base failed")
			}
			return base.RoundTrip(req)
		})
		tr := &Transport{Base: rt, Agent: "ExampleBot"}
		client := &http.Client{Transport: tr}
		// robots.txt of the fresh origin is known before the panics, so
		// that no fetch waits for room for ever (which deadlocks the
		// bubble: a goroutine of the Transport blocked with no timer)
		if _, err := tr.Origin(t.Context(), mustURL("https://fresh.example.com/")); err != nil {
			t.Fatal(err)
		}
		for o := range DefaultDomainCap {
			func() {
				defer func() { recover() }()
				get(client, fmt.Sprintf("https://o%d.example.com/boom", o))
			}()
		}
		time.Sleep(time.Hour) // every turn's hold has run out
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		err := getCtx(ctx, client, "https://fresh.example.com/page")
		if err != nil {
			t.Errorf("a fresh origin of the domain, an hour after the panics: %v", err)
		}
		fctx, fcancel := context.WithTimeout(t.Context(), time.Hour)
		defer fcancel()
		if err := tr.Flush(fctx); err != nil {
			t.Errorf("Flush: %v", err)
		}
	})
}

// TestAttackCancelAtTurnIsAnAnswer shows that a request whose context ends
// at the instant its turn comes (a timer of the caller's that fires with
// the turn's) is released to the Pacer as an answer that took 0 s, neither
// Unsent nor Failed, in about half the runs, which lowers a slow site's
// shared estimate by a quarter (2 s to 1.5 s). In some runs it reaches Base
// with its context already done, so net/http sends nothing: a request never
// sent, released as answered. Turns.Wait returns its turn without checking
// ctx after the sleep, RoundTrip does not check it before Base, and Release
// counts a caller's cancel as an answer (transport.go:550,
// `failed = err != nil && ctx.Err() == nil`).
func TestAttackCancelAtTurnIsAnAnswer(t *testing.T) {
	const origin = "https://slow.example"
	bad, dead, first := 0, 0, ""
	for i := range 50 {
		synctest.Test(t, func(t *testing.T) {
			p := &recPacer{}
			base := &atkSite{pageDelay: slowEstimate}
			tr := &Transport{Base: base, Agent: "ExampleBot", Pacer: p}
			client := &http.Client{Transport: tr}
			if err := get(client, origin+"/first"); err != nil {
				t.Fatal(err)
			}
			est := p.Estimate(origin)
			n := len(p.answered())
			// the next turn is 2×2 s after the answer: cancel then
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(2*slowEstimate, cancel)
			err := getCtx(ctx, client, origin+"/cancelled")
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled request: %v", err)
			}
			tr.Flush(t.Context())
			dead += base.deadOnes
			for _, a := range p.answered()[n:] {
				if !a.Unsent {
					bad++
					if bad == 1 {
						first = fmt.Sprintf("run %d: a request cancelled at its turn was released as an answer %+v; the estimate went from %v to %v; pages that reached Base with their context done: %d",
							i, a, est, p.Estimate(origin), base.deadOnes)
					}
				}
			}
		})
	}
	if bad > 0 {
		t.Errorf("%d of 50 runs released a cancelled request as answered (in %d of them it reached Base with its context done); %s", bad, dead, first)
	}
}

// TestAttackCallerCancelLowersEstimate shows that a request its caller
// cancels 10 ms after it left (a crawler shutting down, an http.Client
// Timeout) is released to the Pacer as an answer that took 10 ms, neither
// Failed nor Unsent, and so lowers a 2 s site's shared response-time
// estimate by a quarter: no answer came, yet the fleet's adaptive delay
// shrinks. Each such cancel takes another quarter. transport.go passes
// failed = `err != nil && ctx.Err() == nil` to Release, so a caller's cancel
// is a fast good answer (internal/pacing/rules.go State.Release samples it).
func TestAttackCallerCancelLowersEstimate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const origin = "https://slow.example"
		p := &recPacer{}
		base := &atkSite{pageDelay: slowEstimate}
		tr := &Transport{Base: base, Agent: "ExampleBot", Pacer: p}
		client := &http.Client{Transport: tr}
		if err := get(client, origin+"/first"); err != nil {
			t.Fatal(err)
		}
		est := p.Estimate(origin)
		for i := range 4 {
			time.Sleep(time.Minute) // its turn is free
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(10*time.Millisecond, cancel)
			getCtx(ctx, client, fmt.Sprintf("%s/c%d", origin, i))
		}
		tr.Flush(t.Context())
		if got := p.Estimate(origin); got < est {
			var as []fleet.Answer = p.answered()
			t.Errorf("after 4 requests cancelled by their caller in flight, the Pacer's estimate is %v; was %v (answers %+v)", got, est, as[len(as)-1])
		}
	})
}

// TestAttackRobotsRedirectHopOverflowsCap shows that the redirect hop of
// a robots.txt fetch to another registrable domain takes no room in that
// domain's group (it uses the room its fetch holds in its own): 20 alias
// domains whose robots.txt redirects to one site's hosts, fetched while
// that site's pages keep its DomainCap (4) busy, put more than 4 requests
// in flight to it together. turns.go: Ask.Hop skips every group
// (`grouped := tn.groups.on && !a.Hop`), not only the fetch's own.
func TestAttackRobotsRedirectHopOverflowsCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &capFarm{groupOf: func(o string) string {
			if strings.HasSuffix(o, ".example.com") {
				return "example.com"
			}
			return o
		}}
		rt := rtFunc(func(req *http.Request) (*http.Response, error) {
			if strings.HasSuffix(req.URL.Host, ".net") && req.URL.Path == "/robots.txt" {
				// alias-N.net/robots.txt → oN.example.com/robots.txt
				n := strings.TrimSuffix(strings.TrimPrefix(req.URL.Host, "alias-"), ".net")
				return &http.Response{StatusCode: http.StatusMovedPermanently, Request: req, Body: http.NoBody,
					Header: http.Header{"Location": {"https://o" + n + ".example.com/robots.txt"}}}, nil
			}
			return f.RoundTrip(req)
		})
		tr := &Transport{Base: rt, Agent: "ExampleBot"}
		client := &http.Client{Transport: tr}
		var wg sync.WaitGroup
		for o := range 20 {
			wg.Go(func() { getCtx(t.Context(), client, fmt.Sprintf("https://o%d.example.com/pppp", o)) })
			wg.Go(func() { getCtx(t.Context(), client, fmt.Sprintf("https://alias-%d.net/pppp", o)) })
		}
		wg.Wait()
		if got := f.mostOf("example.com"); got > DefaultDomainCap {
			t.Errorf("%d requests in flight together to the hosts of example.com; want %d at most", got, DefaultDomainCap)
		}
	})
}
