package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/f9014239/robots/boltstore"
	"github.com/f9014239/robots/frontier"
)

// TestCrawlStateBad: a state file or a journal that cannot be used is a
// clear message and exit status 2, before any request; the file is left as
// it was.
func TestCrawlStateBad(t *testing.T) {
	s := newSite(t, demoHandler(10*time.Millisecond))
	start := s.URL + "/"
	cases := []struct {
		name    string
		prepare func(t *testing.T, state, journal string) string // returns the -state to give
		want    string
	}{{
		name: "journal of another version",
		prepare: func(t *testing.T, state, journal string) string {
			b := journalOf(t, []string{start}, []string{start}, 0)
			b[1+1+len("robots frontier journal")] = 9 // the version
			write(t, journal, string(b))
			return state
		},
		want: "was written by another version of robotstxt; delete it to start the crawl over",
	}, {
		name: "damaged journal",
		prepare: func(t *testing.T, state, journal string) string {
			b := journalOf(t, []string{start}, []string{start, s.URL + "/a", s.URL + "/b"}, 1)
			b[len(b)/2] ^= 1
			write(t, journal, string(b))
			return state
		},
		want: "is damaged at the record at byte ",
	}, {
		name: "not a journal",
		prepare: func(t *testing.T, state, journal string) string {
			write(t, journal, "\x00\x01binary")
			return state
		},
		want: "is not a crawl journal, or is damaged",
	}, {
		name: "journal of other start URLs",
		prepare: func(t *testing.T, state, journal string) string {
			write(t, journal, string(journalOf(t, []string{"http://elsewhere.test/"}, nil, 0)))
			return state
		},
		want: "is the journal of another crawl (its agent or start URLs differ)",
	}, {
		name: "state file in use by another crawl",
		prepare: func(t *testing.T, state, journal string) string {
			st, err := boltstore.Open(state)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return state
		},
		want: "is in use by another crawl; wait for it to end",
	}, {
		name: "damaged state file",
		prepare: func(t *testing.T, state, journal string) string {
			write(t, state, strings.Repeat("not a database\n", 1000))
			return state
		},
		want: "is damaged or of another version",
	}, {
		name: "journal that cannot be written",
		prepare: func(t *testing.T, state, journal string) string {
			if err := os.Mkdir(journal, 0o700); err != nil {
				t.Fatal(err)
			}
			return state
		},
		want: "crawl journal unusable: ",
	}, {
		name: "state file that cannot be opened",
		prepare: func(t *testing.T, state, journal string) string {
			if err := os.Mkdir(state, 0o700); err != nil {
				t.Fatal(err)
			}
			return state
		},
		want: "cannot be used: ",
	}, {
		name: "state file that cannot be created",
		prepare: func(t *testing.T, state, journal string) string {
			write(t, state, "a file")
			return filepath.Join(state, "state.db") // under a file
		},
		want: "cannot be used",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			state := filepath.Join(dir, "state.db")
			journal := journalPath(state, "robotstxt", []string{start})
			arg := c.prepare(t, state, journal)
			before := s.count("/")
			var keep []byte
			if b, err := os.ReadFile(journal); err == nil {
				keep = b
			}
			code, stdout, stderr := runCmd(t, "", "crawl", "-state", arg, start)
			if code != exitUsage || !strings.Contains(stderr, c.want) || stdout != "" {
				t.Errorf("crawl = %d, stderr %q; want %d and %q, nothing on stdout:\n%s", code, stderr, exitUsage, c.want, stdout)
			}
			if s.count("/") != before {
				t.Errorf("a request was sent")
			}
			if keep != nil {
				if b, _ := os.ReadFile(journal); string(b) != string(keep) {
					t.Errorf("the journal was changed: %q", b)
				}
			}
		})
	}
}

// journalOf returns the journal of a crawl by robotstxt from starts that
// queued the URLs push and visited the first visit of them.
func journalOf(t *testing.T, starts, push []string, visit int) []byte {
	t.Helper()
	var b bytes.Buffer
	f := new(frontier.Frontier)
	if err := f.Record(&b, crawlName("robotstxt", starts)); err != nil {
		t.Fatal(err)
	}
	for _, u := range push {
		if err := f.Push(u); err != nil {
			t.Fatal(err)
		}
	}
	for range visit {
		u, err := f.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		f.Done(u, nil)
	}
	if err := f.Record(nil, ""); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func write(t *testing.T, name, body string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCrawlJournalCut: a journal whose last line a kill cut short is read
// without it, and the crawl resumes: the URLs queued and not visited are
// visited, those visited are not.
func TestCrawlJournalCut(t *testing.T) {
	s := newSite(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			w.Write([]byte("User-agent: *\nCrawl-delay: 0.01\n"))
			return
		}
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path == "/" {
			w.Write([]byte(`<a href="/a">a</a> <a href="/b">b</a> <a href="/c">c</a>`))
		}
	}))
	start := s.URL + "/"
	state := filepath.Join(t.TempDir(), "state.db")
	journal := journalPath(state, "robotstxt", []string{start})
	b := journalOf(t, []string{start}, []string{start, s.URL + "/a", s.URL + "/b"}, 3)
	write(t, journal, string(b[:len(b)-5])) // /b's visit cut short by a kill
	// Another crawl's journal beside the state file: it is named, with
	// its command, and left alone.
	other := journalPath(state, "robotstxt", []string{"http://elsewhere.test/"})
	write(t, other, string(journalOf(t, []string{"http://elsewhere.test/"}, []string{"http://elsewhere.test/"}, 0)))
	code, stdout, stderr := runCmd(t, "", "crawl", "-json", "-state", state, start)
	recs, sum := decodeCrawl(t, stdout)
	if !strings.Contains(stderr, "\nan unfinished crawl of http://elsewhere.test/ as robotstxt is kept in "+other+": \"robotstxt crawl -agent robotstxt http://elsewhere.test/\" resumes it") {
		t.Errorf("the other crawl's journal is not named:\n%s", stderr)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("the other crawl's journal: %v", err)
	}
	if code != exitOK || sum.Resumed == nil || *sum.Resumed != (resumedJSON{Visited: 2, Queued: 1}) || len(recs) != 1 || recs[0].URL != s.URL+"/b" {
		t.Errorf("crawl = %d, %+v, resumed %+v; want /b visited, resumed from 2 visited, 1 queued\nstderr: %s", code, recs, sum.Resumed, stderr)
	}
	if !strings.Contains(stderr, "; resuming the crawl stopped at ") || !strings.Contains(stderr, ": 2 URLs visited, 1 URL left\n") {
		t.Errorf("the first line does not say what is resumed:\n%s", stderr)
	}
	if n := s.count("/") + s.count("/a"); n != 0 {
		t.Errorf("%d URLs visited before sent again", n)
	}
	if _, err := os.Stat(journal); err == nil {
		t.Errorf("the journal of a finished crawl is left")
	}
}

// TestCrawlResumeMax: a crawl that left links out because of -max, was
// interrupted and resumed, says at its end that it stopped at -max, as the
// same crawl in one go does, and -max counts the URLs of both runs.
func TestCrawlResumeMax(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s := newSite(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			w.Write([]byte("User-agent: *\nCrawl-delay: 0\n"))
			return
		}
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path == "/" {
			for i := 1; i <= 10; i++ {
				fmt.Fprintf(w, `<a href="/%d">%d</a>`, i, i)
			}
		}
		if r.URL.Path == "/2" {
			cancel() // the first run is interrupted once /2 is answered
		}
	}))
	state := filepath.Join(t.TempDir(), "state.db")
	args := []string{"crawl", "-json", "-max", "5", "-workers", "1", "-state", state, s.URL + "/"}
	var out, errOut strings.Builder
	if code := runContext(ctx, args, nil, &out, &errOut); code != exitFlagged {
		t.Fatalf("the first run = %d, want %d (interrupted)\n%s", code, exitFlagged, &errOut)
	}
	if _, sum := decodeCrawl(t, out.String()); sum.Stopped != stopInterrupted {
		t.Fatalf("the first run: %+v", sum)
	}
	code, stdout, stderr := runCmd(t, "", args...)
	recs, sum := decodeCrawl(t, stdout)
	if code != exitOK || sum.Stopped != stopMax || sum.Resumed == nil || sum.Resumed.Visited+len(recs) != 5 {
		t.Errorf("the resumed run = %d, %d URLs, summary %+v; want stopped at -max, 5 URLs across the runs\n%s", code, len(recs), sum, stderr)
	}
	if !strings.Contains(stderr, "; stopped at -max 5; resumed from ") {
		t.Errorf("the resumed run does not say it stopped at -max:\n%s", stderr)
	}
	for p, n := range s.paths() {
		if n != 1 {
			t.Errorf("%s fetched %d times", p, n)
		}
	}
}
