package main

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
)

// stateDefault returns the default of crawl -state: state.db in the
// robotstxt directory of the user's cache directory, or "" if there is
// none. Tests replace it.
var stateDefault = defaultStatePath

func defaultStatePath() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "robotstxt", "state.db")
}

// stateHelp documents crawl -state for crawl -h.
const stateHelp = `
State. The crawl keeps what it learns of each site (its robots.txt, with
its expiry; the pace of its requests; the pauses it asked for with
Retry-After and the back-offs after 429 and 503 answers) in the state file,
so that the next run fetches no robots.txt it has and sends no request
sooner than the site's Crawl-delay after the last one, whichever run sent
it. One crawl at a time uses a state file: a second fails within a second
(exit 2). -state FILE keeps it in another file; -state "" keeps none.

Resume. Beside the state file, a journal (FILE.crawl-HASH) records the
URLs the crawl queues and visits. A crawl interrupted (Ctrl-C, SIGTERM, a
kill, or stopped by a pause beyond -timeout) resumes where it stopped when
the same command runs again (the same -agent and start URLs; other flags
may differ): each URL is visited once across the runs, but those out at a
kill (one a site at most). After a kill, a site whose request was out waits until -timeout
after it. A crawl that ran to its end removes its journal: the same
command then crawls again, from the start URLs. Another command is another
crawl; its first lines name the unfinished ones. -demo keeps no journal.

Retries. A page answered 429 or 503, or whose request failed in a way that
may pass (a timeout, a connection refused, reset or cut), is sent again
when the site's pause (Retry-After, or the back-off) ends, and no sooner
than 1, 2 and 4 s after each answer: up to 3 times, then it is counted as
given up. A 404, a 500 or a refusal is never retried. A pause further
away than twice -timeout (and than the site's Crawl-delay) is not waited
for: when only such URLs are left, the crawl stops (exit 1), and they stay
in the journal for the next run.
`

// stateError returns what to tell the user when the state file at path
// cannot be opened, for err.
func stateError(path string, err error) string {
	switch {
	case errors.Is(err, errLocked):
		return fmt.Sprintf("the state file %s is in use by another crawl; wait for it to end, or give another with -state FILE (or none, with -state \"\")", path)
	case errors.Is(err, errCorrupt):
		return fmt.Sprintf("the state file %s is damaged or of another version: %v (a new file fetches each robots.txt again), or give another with -state FILE", path, err)
	}
	return fmt.Sprintf("the state file %s cannot be used: %v; give another with -state FILE, or none with -state \"\"", path, err)
}

// openState opens the state file at path for the crawl from starts, and
// with journal the crawl's journal beside it, and returns what closes them.
// When the journal holds an interrupted crawl, the crawl resumes it.
func (c *crawler) openState(path string, starts []*url.URL, journal bool) (closeState func() error, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, errors.New(stateError(path, err))
	}
	st, err := openStore(path)
	if err != nil {
		return nil, errors.New(stateError(path, err))
	}
	st.use(c.tr)
	c.statePath = path
	closeState = st.Close
	if !journal {
		return closeState, nil
	}
	names := make([]string, len(starts))
	for i, s := range starts {
		names[i] = s.String()
	}
	j, r, err := openJournal(journalPath(path, c.agent, names), c.agent, names)
	if err != nil {
		st.Close()
		return nil, err
	}
	c.journal, c.resume = j, r
	c.others = otherJournals(path, j.path)
	return func() error {
		err := c.journal.close(c.keepJournal())
		if cerr := st.Close(); err == nil {
			err = cerr
		}
		return err
	}, nil
}

// keepJournal reports whether the crawl stopped before its end, so that its
// journal is kept for the next run to resume.
func (c *crawler) keepJournal() bool {
	return c.interrupted || c.stopped != nil
}

// stateText says, for the first line, where the state is kept and what
// was resumed.
func (c *crawler) stateText() string {
	if c.statePath == "" {
		return "keeping no state"
	}
	s := "state in " + c.statePath
	if r := c.resume; r != nil {
		s += fmt.Sprintf("; resuming the crawl stopped at %s: %s visited, %s left",
			clock(r.at), count(r.visited, "URL"), count(len(r.queued), "URL"))
	}
	return s
}

// restore takes over what the journal holds of the runs before: the URLs
// seen, those left (queued, or out when the last run stopped), which it
// queues again in their order, and the start URLs reached by redirects.
func (c *crawler) restore() {
	r := c.resume
	for u, hops := range r.starts {
		c.starts[u] = hops
		if pu, err := url.Parse(u); err == nil {
			c.origins[originOf(pu)] = true
		}
	}
	for u := range r.seen {
		c.seen[u] = true
	}
	for _, u := range r.queued {
		c.front.Push(u)
	}
	c.resumed = &resumedJSON{Visited: r.visited, Queued: len(r.queued)}
}

// note stops the crawl if err, a write to the journal, failed: what is not
// written would be lost. c.mu must be held, or no worker run.
func (c *crawler) note(err error) {
	if err != nil && c.halt != nil {
		c.halt(err)
	}
}

// printResume says, after the summary, how to resume a crawl that stopped
// before its end.
func (c *crawler) printResume(s crawlSummary) {
	if c.journal == nil || !c.keepJournal() {
		return
	}
	fmt.Fprintf(c.out, "%s left in %s: run the same command again to resume\n", count(s.Left, "URL"), c.journal.path)
}

// before returns how many URLs the runs before visited, if the crawl
// resumed: -max counts them.
func (c *crawler) before() int {
	if c.resumed == nil {
		return 0
	}
	return c.resumed.Visited
}
