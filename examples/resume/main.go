// Resume is a crawler that a kill does not make start over: its
// [frontier.Frontier] records each change to a journal as it happens, and
// its [robots.Transport] keeps each site's robots.txt and pace in a
// [boltstore] file. Run again with the same files after any stop, a
// SIGKILL included, it goes on where it stopped: each page is fetched once
// across the runs, but the one a site had out at the kill, and no
// robots.txt is fetched again.
//
// Usage:
//
//	go run ./examples/resume -dir DIR URL...
//
// It crawls each URL and the pages it links to on the same site, with
// four workers, keeping its journal (DIR/journal) and its state
// (DIR/state.db) in DIR; it prints a line per page. A crawl that ran to its
// end removes its journal: the same command then crawls again.
//
// The test (go test ./examples/resume) runs it as a child process, kills
// it with SIGKILL mid-crawl, and runs it again.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/html"

	"github.com/f9014239/robots"
	"github.com/f9014239/robots/boltstore"
	"github.com/f9014239/robots/frontier"
)

func main() {
	dir := flag.String("dir", ".", "keep the journal and the state in `DIR`")
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := crawl(ctx, *dir, flag.Args(), os.Stdout, 0, 5*time.Second); err != nil {
		log.Fatal(err)
	}
}

// crawl crawls starts, and the pages they link to on their sites, keeping
// its journal and state in dir, and writes a line per page to out. A site
// with no Crawl-delay is sent a request pace after the answer to the last
// (0: the Transport's default, 1 s); a request fails after timeout.
func crawl(ctx context.Context, dir string, starts []string, out io.Writer, pace, timeout time.Duration) error {
	st, err := boltstore.Open(filepath.Join(dir, "state.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	tr := robots.NewTransport(nil, "ExampleBot")
	tr.Store, tr.Pacer = st, st
	// Before the state file is closed (the defer above), the answers the
	// Transport got reach it: under MaxWait it tells them on goroutines
	// of their own.
	defer func() {
		fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		tr.Flush(fctx)
	}()
	tr.MaxWait = 50 * time.Millisecond
	tr.DefaultDelay = pace
	// A request gets its answer within timeout, or fails (the client's
	// Timeout): a site held by a request of a killed run waits no longer.
	tr.TurnTimeout = timeout
	client := &http.Client{
		Transport: tr,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a Location is pushed like a link
		},
	}
	sites := map[string]bool{}
	for _, s := range starts {
		o, err := frontier.Origin(s)
		if err != nil {
			return fmt.Errorf("%q: %w", s, err)
		}
		sites[o] = true
	}

	// The journal names the crawl by its start URLs: another crawl's is
	// refused. seen is every URL ever pushed: the frontier forgets a URL
	// once done, and the journal gives them all back.
	f := &frontier.Frontier{Turns: tr}
	var mu sync.Mutex
	seen := map[string]bool{}
	journal := filepath.Join(dir, "journal")
	name := strings.Join(slices.Sorted(slices.Values(starts)), " ")
	res, err := f.OpenJournal(journal, name, func(u string) { seen[u] = true }, nil)
	if err != nil {
		return err
	}
	if res.Runs > 0 {
		fmt.Fprintf(out, "resuming: %d pages done, %d left, %d of them out at the stop\n", res.Done, res.Pushed, res.Out)
	}
	push := func(u string) { // mu held
		if !seen[u] && f.Push(u) == nil {
			seen[u] = true
		}
	}
	if len(seen) == 0 {
		for _, s := range starts {
			push(s)
		}
	}

	var wg sync.WaitGroup
	var failed error
	for range 4 {
		wg.Go(func() {
			for {
				u, err := f.Next(ctx)
				if err != nil {
					if !errors.Is(err, frontier.ErrEmpty) && ctx.Err() == nil {
						mu.Lock()
						failed = err // the journal cannot be written
						mu.Unlock()
					}
					return
				}
				resp, err := client.Get(u)
				var links []string
				if err == nil {
					links = pageLinks(resp, sites)
					resp.Body.Close()
				}
				mu.Lock()
				for _, l := range links {
					push(l) // before its Done: a kill in between fetches the page again
				}
				switch {
				case errors.Is(err, robots.ErrNotYet): // back in its queue, for its turn
				case err != nil:
					fmt.Fprintf(out, "%s: %v\n", u, err)
				default:
					fmt.Fprintf(out, "%s %s\n", resp.Status[:3], u)
				}
				mu.Unlock()
				f.Answered(u, resp, err)
			}
		})
	}
	wg.Wait()
	cerr := f.CloseJournal()
	if err := cmp.Or(failed, cerr, ctx.Err()); err != nil {
		return err // the journal is kept: the same command resumes
	}
	return os.Remove(journal)
}

// pageLinks returns the links of an HTML page to the sites crawled,
// without their fragments.
func pageLinks(resp *http.Response, sites map[string]bool) []string {
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		return nil
	}
	var out []string
	z := html.NewTokenizer(io.LimitReader(resp.Body, 1<<20))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return out
		}
		if tt != html.StartTagToken {
			continue
		}
		for {
			k, v, more := z.TagAttr()
			if string(k) == "href" {
				if ref, err := url.Parse(string(v)); err == nil {
					u := resp.Request.URL.ResolveReference(ref)
					u.Fragment = ""
					if o, err := frontier.Origin(u.String()); err == nil && sites[o] {
						out = append(out, u.String())
					}
				}
			}
			if !more {
				break
			}
		}
	}
}
