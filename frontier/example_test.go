package frontier_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"time"

	"github.com/f9014239/robots"
	"github.com/f9014239/robots/frontier"
)

// A pool of workers takes URLs from a Frontier whose Turns is the
// Transport they are sent through, and gives each back with Done.
func ExampleFrontier() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			// A Crawl-delay of 50 ms: a site that states none is paced
			// at the Transport's default, a second.
			fmt.Fprint(w, "User-agent: *\nCrawl-delay: 0.05\nDisallow: /private\n")
		}
	}))
	defer srv.Close()

	tr := &robots.Transport{Agent: "ExampleBot", MaxWait: 50 * time.Millisecond}
	client := &http.Client{Transport: tr}
	f := &frontier.Frontier{Turns: tr}
	for _, p := range []string{"/", "/a", "/private/b", "/c"} {
		f.Push(srv.URL + p)
	}

	var mu sync.Mutex
	var lines []string
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for {
				u, err := f.Next(context.Background())
				if err != nil {
					return // frontier.ErrEmpty: the crawl is over
				}
				resp, err := client.Get(u)
				line := u[len(srv.URL):] + " "
				if err != nil {
					line += "refused"
				} else {
					line += resp.Status
					resp.Body.Close()
				}
				mu.Lock()
				lines = append(lines, line)
				mu.Unlock()
				f.Done(u, err)
			}
		})
	}
	wg.Wait()
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	c := f.Counts()
	fmt.Printf("%d finished, %d refused by a rule\n", c.Finished, c.Refused)
	// Output:
	// / 200 OK
	// /a 200 OK
	// /c 200 OK
	// /private/b refused
	// 4 finished, 1 refused by a rule
}

// Each process of a fleet pushes only the URLs of the sites it owns, by a
// hash of their origin (here FNV-1a modulo the processes, see TestFleet),
// to a Frontier of its own: one origin, one process.
func ExampleOrigin() {
	const processes = 3
	for _, u := range []string{"https://a.example/1", "HTTPS://A.example:443/2", "http://b.example:8080/"} {
		origin, _ := frontier.Origin(u)
		fmt.Println(origin, "process", owner(origin, processes))
	}
	// Output:
	// https://a.example process 0
	// https://a.example process 0
	// http://b.example:8080 process 1
}

// A crawl saves its frontier now and then, to a new file renamed over the
// last, and a new run restores it: the URLs queued, and those that were
// out at their site's head.
func ExampleFrontier_Save() {
	f := new(frontier.Frontier)
	f.Push("https://a.example/1")
	f.Push("https://a.example/2")
	f.Push("https://b.example/")
	u, _ := f.Next(context.Background()) // out when the crawl stops

	var file bytes.Buffer // os.CreateTemp, then Sync, Close and os.Rename
	if err := f.Save(&file); err != nil {
		fmt.Println(err)
		return
	}

	g := new(frontier.Frontier) // the next run's, with its Turns set
	if err := g.Restore(&file); err != nil {
		fmt.Println(err) // errors.Is(err, frontier.ErrCorrupt), or ErrVersion
		return
	}
	c := g.Counts()
	fmt.Printf("%d URLs over %d sites, %d pushed in all; %s is handed out again\n", c.Queued, c.Sites, c.Pushed, u)
	// Output:
	// 3 URLs over 2 sites, 3 pushed in all; https://a.example/1 is handed out again
}

// A crawl records its frontier as it goes to a journal, which the next run
// replays, whether the last stopped cleanly or was killed: every URL
// queued, those out at the stop at their site's head, and, for the
// crawler's own set, every URL ever pushed.
func ExampleFrontier_Record() {
	var journal bytes.Buffer // a file: see OpenJournal
	f := new(frontier.Frontier)
	f.Record(&journal, "example crawl")
	f.Push("https://a.example/1")
	f.Push("https://a.example/2")
	f.Push("https://b.example/")
	u, _ := f.Next(context.Background())
	f.Done(u, nil)
	v, _ := f.Next(context.Background()) // out when the crawl is killed
	w, _ := f.Next(context.Background())
	f.Done(w, nil)

	g := new(frontier.Frontier) // the next run's, with its Turns set
	seen := map[string]bool{}
	res, err := g.Replay(&journal, "example crawl", func(u string) { seen[u] = true }, nil)
	if err != nil {
		fmt.Println(err) // ErrCorrupt, ErrVersion or ErrOtherCrawl
		return
	}
	fmt.Printf("%d done, %d left, %d seen; %s, out at the kill, is handed out again\n", res.Done, res.Pushed, len(seen), v)
	// Output:
	// 2 done, 1 left, 3 seen; https://b.example/, out at the kill, is handed out again
}
