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

// TestAttackPanickingBaseLeaksRoom: a Base that panics leaks neither its
// request's turn nor the room it held in its registrable domain's group:
// after DomainCap (4) panics, recovered by the caller as a worker pool
// does, an origin of the domain still gets its request through (before
// the fix, every one was refused for room for ever, "domain-cap").
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

// TestAttackCancelAtTurnIsAnAnswer: a request whose context ends at the
// instant its turn comes (a timer of the caller's that fires with the
// turn's) is released to the Pacer as unsent, or, if it was handed to Base
// before the cancel, as a failure: never as an answer that took 0 s, which
// would lower a slow site's shared estimate by a quarter (2 s to 1.5 s, as
// it once did in about half the runs).
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
				// Handed to Base before the cancel, it is a failure
				// (no sample lower than the estimate); after, unsent.
				if !a.Unsent && !a.Failed || p.Estimate(origin) < est {
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

// TestAttackCallerCancelLowersEstimate: a request its caller cancels 10 ms
// after it left (a crawler shutting down, an http.Client Timeout) is
// released to the Pacer as a failure, whose answer is unknown: it never
// lowers a 2 s site's shared response-time estimate (it once took a
// quarter off it at each such cancel).
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

// TestAttackRobotsRedirectHopOverflowsCap: the redirect hop of a
// robots.txt fetch to another registrable domain takes room in that
// domain's group (only the groups its fetch holds already are skipped): 20
// alias domains whose robots.txt redirects to one site's hosts, fetched
// while that site's pages keep its DomainCap (4) busy, never put more than
// 4 requests in flight to it together (they once put 20).
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
