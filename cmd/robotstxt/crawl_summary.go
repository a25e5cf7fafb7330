package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Why a crawl stopped: the values of crawlSummary.Stopped.
const (
	stopFinished    = "finished"    // nothing left to crawl
	stopMax         = "max"         // links were left out because of -max
	stopTimeout     = "timeout"     // every URL left waits for a pause beyond -timeout
	stopInterrupted = "interrupted" // SIGINT or SIGTERM
	stopRefused     = "refused"     // every site refused the crawler: nothing fetched
	stopError       = "error"       // the journal could not be written
)

// crawlSummary is what a crawl did, for its last lines; crawl -json writes
// it as the last line of standard output, as {"summary": …}.
type crawlSummary struct {
	URLs        int            `json:"urls"` // visited by this run: fetched, refused or failed
	Seconds     float64        `json:"seconds"`
	Fetched     int            `json:"fetched"`
	Statuses    map[string]int `json:"statuses,omitempty"` // fetched, by status
	Disallowed  int            `json:"disallowed"`         // by a rule
	Unreachable int            `json:"unreachable"`        // refused: robots.txt unreachable
	Errors      int            `json:"errors"`
	Retried     int            `json:"retried"`  // answers 429 or 503, or failures, sent again after the site's pause
	GivenUp     int            `json:"given_up"` // URLs still 429, 503 or failing after their retries

	// Stopped is why the crawl stopped: "finished", "max", "timeout",
	// "interrupted", "refused" or "error" (the journal could not be
	// written); Why says more, for "timeout" and "error".
	Stopped string `json:"stopped"`
	Why     string `json:"why,omitempty"`
	Max     int    `json:"max"`
	Left    int    `json:"left"` // URLs queued or out when it stopped

	RobotsTxtFetches uint64 `json:"robots_txt_fetches"`
	Requeued         uint64 `json:"requeued"` // requests refused for now and queued again

	// State is the state file, if any; Resumed, what this run took over
	// from the runs before it, if it resumed a crawl.
	State   string       `json:"state,omitempty"`
	Resumed *resumedJSON `json:"resumed,omitempty"`
}

// resumedJSON is what a resumed crawl took over.
type resumedJSON struct {
	Visited int `json:"visited"` // URLs visited by the runs before
	Queued  int `json:"queued"`  // URLs queued or out when the last run stopped
}

// summary returns what the crawl did: done URLs visited in d.
func (c *crawler) summary(done int, d time.Duration) crawlSummary {
	s := crawlSummary{
		URLs:        done,
		Seconds:     d.Seconds(),
		Disallowed:  c.refused,
		Unreachable: c.unreachable,
		Errors:      c.errors,
		Retried:     c.retried,
		GivenUp:     c.givenUp,
		Max:         c.max,
		Left:        c.front.Len(),
		Resumed:     c.resumed,
	}
	for status, n := range c.statuses {
		if s.Statuses == nil {
			s.Statuses = make(map[string]int)
		}
		s.Statuses[strconv.Itoa(status)] = n
		s.Fetched += n
	}
	switch {
	case c.interrupted:
		s.Stopped = stopInterrupted
	case c.stopped != nil:
		s.Stopped, s.Why = stopError, c.stopped.Error()
		if _, ok := errors.AsType[*stalledError](c.stopped); ok {
			s.Stopped = stopTimeout
		}
	case s.Fetched == 0 && s.Disallowed+s.Unreachable > 0 && s.Errors == 0:
		s.Stopped = stopRefused
	case c.capped:
		s.Stopped = stopMax
	default:
		s.Stopped = stopFinished
	}
	st := c.tr.Stats()
	s.RobotsTxtFetches = st.FetchSuccess + st.FetchUnavailable + st.FetchUnreachable
	s.Requeued = c.front.Counts().NotYet
	s.State = c.statePath
	return s
}

// printSummary prints s: with -json, as the last line of standard output,
// and as text (on standard error with -json).
func (c *crawler) printSummary(s crawlSummary) {
	if c.json != nil {
		c.json.Encode(struct {
			Summary crawlSummary `json:"summary"`
		}{s})
	}
	var parts []string
	for _, status := range slices.Sorted(maps.Keys(c.statuses)) {
		parts = append(parts, fmt.Sprintf("%d × %d", c.statuses[status], status))
	}
	fmt.Fprintf(c.out, "\n%s in %v: %d fetched", count(s.URLs, "URL"), time.Duration(s.Seconds*float64(time.Second)).Round(10*time.Millisecond), s.Fetched)
	if len(parts) > 0 {
		fmt.Fprintf(c.out, " (%s)", strings.Join(parts, ", "))
	}
	fmt.Fprintf(c.out, ", %d disallowed by rules", s.Disallowed)
	if s.Unreachable > 0 {
		fmt.Fprintf(c.out, ", %d refused: robots.txt unreachable", s.Unreachable)
	}
	fmt.Fprintf(c.out, ", %s", count(s.Errors, "error"))
	if s.Retried > 0 || s.GivenUp > 0 {
		fmt.Fprintf(c.out, ", %s after a 429, a 503 or an error, %d given up", retriesText(s.Retried), s.GivenUp)
	}
	switch s.Stopped {
	case stopFinished:
		fmt.Fprintf(c.out, "; finished")
	case stopMax:
		fmt.Fprintf(c.out, "; stopped at -max %d", s.Max)
	case stopInterrupted:
		fmt.Fprintf(c.out, "; interrupted, %s left", count(s.Left, "URL"))
	case stopTimeout, stopError:
		fmt.Fprintf(c.out, "; stopped: %s; %s left", s.Why, count(s.Left, "URL"))
	case stopRefused:
		fmt.Fprintf(c.out, "; stopped: every site refused the crawler")
	}
	if r := s.Resumed; r != nil {
		fmt.Fprintf(c.out, "; resumed from %s visited and %s left by the runs before", count(r.Visited, "URL"), count(r.Queued, "URL"))
	}
	fmt.Fprintln(c.out)

	st := c.tr.Stats()
	parts = parts[:0]
	for _, p := range []struct {
		n    uint64
		what string
	}{{st.FetchSuccess, "ok"}, {st.FetchUnavailable, "unavailable"}, {st.FetchUnreachable, "unreachable"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	fmt.Fprintf(c.out, "robots.txt fetched %s", count(int(s.RobotsTxtFetches), "time"))
	if len(parts) > 0 {
		fmt.Fprintf(c.out, " (%s)", strings.Join(parts, ", "))
	} else if s.State != "" && s.URLs > 0 {
		fmt.Fprintf(c.out, " (kept in the state file)")
	}
	fmt.Fprintf(c.out, "; %s refused for now and queued again\n", count(int(s.Requeued), "request"))
	c.printResume(s)
}
