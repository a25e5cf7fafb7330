package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/f9014239/robots/boltstore"
	"github.com/f9014239/robots/frontier"
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
URLs the crawl queues and visits as it goes (the frontier's journal: see
doc/frontier.md). A crawl interrupted (Ctrl-C, SIGTERM, a
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

// A crawl's journal, beside the state file, is the frontier's (see
// frontier.Frontier.Record): each URL queued, handed out, visited or
// deferred, as it happens, so that it is whole after any exit, a kill
// included. Its name is the state file's, with ".crawl-" and a hash of the
// product token and the start URLs: the same command finds it again,
// another crawl has its own, and the frontier refuses another's. Beside
// the URLs it keeps the crawl's notes: "s N URL", a start URL reached
// through N-1 redirects to another origin; "max", links left out because
// of -max. It is removed when the crawl runs to its end.

// errJournal is matched by the errors of a journal that cannot be used.
var errJournal = errors.New("crawl journal unusable")

// journalPath returns the journal of the crawl of agent from starts, kept
// beside the state file statePath.
func journalPath(statePath, agent string, starts []string) string {
	h := sha256.New()
	io.WriteString(h, agent)
	for _, s := range slices.Sorted(slices.Values(starts)) {
		io.WriteString(h, "\n"+s)
	}
	return statePath + ".crawl-" + hex.EncodeToString(h.Sum(nil)[:8])
}

// crawlName names the crawl of agent from starts in its journal.
func crawlName(agent string, starts []string) string {
	s := "robotstxt crawl\nagent " + agent
	for _, u := range slices.Sorted(slices.Values(starts)) {
		s += "\nstart " + u
	}
	return s
}

// journalError says what to do with the journal at path that err, of
// frontier.OpenJournal, refuses.
func journalError(path string, err error) error {
	why := err.Error()
	switch {
	case errors.Is(err, frontier.ErrVersion):
		why = "was written by another version of robotstxt"
	case errors.Is(err, frontier.ErrOtherCrawl):
		why = "is the journal of another crawl (its agent or start URLs differ)"
	case errors.Is(err, frontier.ErrCorrupt) && strings.Contains(why, "not a frontier journal"):
		why = "is not a crawl journal, or is damaged"
	case errors.Is(err, frontier.ErrCorrupt):
		_, at, _ := strings.Cut(why, "the record at ")
		why = "is damaged at the record at " + at
	default:
		return fmt.Errorf("%w: %v", errJournal, err)
	}
	return fmt.Errorf("%w: %s %s; delete it to start the crawl over", errJournal, path, why)
}

// openJournal opens the crawl's journal at path, and takes over what it
// holds of the runs before: the URLs seen, those left (the frontier queues
// them again), the start URLs reached by redirects, and whether -max left
// links out.
func (c *crawler) openJournal(path string, starts []string) error {
	var at time.Time
	if fi, err := os.Stat(path); err == nil {
		at = fi.ModTime()
	}
	res, err := c.front.OpenJournal(path, crawlName(c.agent, starts),
		func(u string) { c.seen[u] = true },
		func(note string) {
			if note == "max" {
				c.capped = true
				return
			}
			hops, u, _ := strings.Cut(strings.TrimPrefix(note, "s "), " ")
			if n, err := strconv.Atoi(hops); err == nil && n > 0 && strings.HasPrefix(note, "s ") {
				c.starts[u] = n
				if pu, err := url.Parse(u); err == nil {
					c.origins[originOf(pu)] = true
				}
			}
		})
	if err != nil {
		clear(c.seen)
		clear(c.starts)
		c.capped = false
		return journalError(path, err)
	}
	c.journal = path
	if res.Pushed > 0 || res.Done > 0 {
		c.resumed = &resumedJSON{Visited: int(res.Done), Queued: res.Pushed}
		c.resumedAt = at
	}
	return nil
}

// otherJournals describes the journals beside the state file statePath
// other than mine: unfinished crawls of other start URLs (or agents), which
// their own command resumes.
func otherJournals(statePath, mine string) []string {
	names, _ := filepath.Glob(statePath + ".crawl-*")
	var out []string
	for _, name := range names {
		if name == mine || len(out) == 5 {
			continue
		}
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		crawl, err := frontier.JournalCrawl(f)
		f.Close()
		lines := strings.Split(crawl, "\n")
		if err != nil || len(lines) < 3 || lines[0] != "robotstxt crawl" || !strings.HasPrefix(lines[1], "agent ") {
			continue
		}
		agent := lines[1][len("agent "):]
		var starts []string
		for _, l := range lines[2:] {
			starts = append(starts, strings.TrimPrefix(l, "start "))
		}
		out = append(out, fmt.Sprintf("an unfinished crawl of %s as %s is kept in %s: \"robotstxt crawl -agent %s %s\" resumes it; delete the file to drop it",
			strings.Join(starts, ", "), agent, name, agent, strings.Join(starts, " ")))
	}
	return out
}

// stateError returns what to tell the user when the state file at path
// cannot be opened, for err.
func stateError(path string, err error) string {
	switch {
	case errors.Is(err, boltstore.ErrLocked):
		return fmt.Sprintf("the state file %s is in use by another crawl; wait for it to end, or give another with -state FILE (or none, with -state \"\")", path)
	case errors.Is(err, boltstore.ErrCorrupt):
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
	// The state file is a boltstore: the robots.txt cache, and the
	// paces, pauses and back-offs of the origins.
	st, err := boltstore.Open(path)
	if err != nil {
		return nil, errors.New(stateError(path, err))
	}
	c.tr.Store, c.tr.Pacer = st, st
	c.statePath = path
	closeState = func() error {
		c.flush()
		return st.Close()
	}
	if !journal {
		return closeState, nil
	}
	names := make([]string, len(starts))
	for i, s := range starts {
		names[i] = s.String()
	}
	jp := journalPath(path, c.agent, names)
	if err := c.openJournal(jp, names); err != nil {
		st.Close()
		return nil, err
	}
	c.others = otherJournals(path, jp)
	return func() error {
		c.flush()
		err := c.front.CloseJournal()
		if !c.keepJournal() {
			if rerr := os.Remove(jp); rerr != nil && err == nil {
				err = rerr
			}
		}
		if cerr := st.Close(); err == nil {
			err = cerr
		}
		return err
	}, nil
}

// flush waits, 5 s at most, until the Transport has told the state file of
// every answer it got (see robots.Transport.Flush): a release or pause lost
// at exit would hold a site, or let the next run send early.
func (c *crawler) flush() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.tr.Flush(ctx)
}

// stateText says, for the first line, where the state is kept and what
// was resumed.
func (c *crawler) stateText() string {
	if c.statePath == "" {
		return "keeping no state"
	}
	s := "state in " + c.statePath
	if r := c.resumed; r != nil {
		s += fmt.Sprintf("; resuming the crawl stopped at %s: %s visited, %s left",
			clock(c.resumedAt), count(r.Visited, "URL"), count(r.Queued, "URL"))
	}
	return s
}

// note writes a note of the crawl to its journal (see openJournal). c.mu
// must be held, or no worker run.
func (c *crawler) note(s string) {
	if c.journal != "" {
		c.front.Note(s) // an error of the journal stops the crawl at Next
	}
}

// printResume says, after the summary, how to resume a crawl that stopped
// before its end.
func (c *crawler) printResume(s crawlSummary) {
	if c.journal == "" || !c.keepJournal() {
		return
	}
	fmt.Fprintf(c.out, "%s left in %s: run the same command again to resume\n", count(s.Left, "URL"), c.journal)
}

// keepJournal reports whether the crawl stopped before its end, so that its
// journal is kept for the next run to resume.
func (c *crawler) keepJournal() bool {
	return c.interrupted || c.stopped != nil
}

// before returns how many URLs the runs before visited, if the crawl
// resumed: -max counts them.
func (c *crawler) before() int {
	if c.resumed == nil {
		return 0
	}
	return c.resumed.Visited
}
