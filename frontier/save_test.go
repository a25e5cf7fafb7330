package frontier_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/f9014239/robots/frontier"
)

// drain takes every URL of f, with no Turns, and returns them by origin in
// the order each site handed them out.
func drain(t *testing.T, f *frontier.Frontier) map[string][]string {
	t.Helper()
	got := map[string][]string{}
	for {
		u, err := f.Next(context.Background())
		if err == frontier.ErrEmpty {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		o, _ := frontier.Origin(u)
		got[o] = append(got[o], u)
		if err := f.Done(u, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSaveRestore: what Restore reads back is every URL queued or out,
// each site's in its order with the URL out at its head, and the totals.
func TestSaveRestore(t *testing.T) {
	f := new(frontier.Frontier)
	want := map[string][]string{}
	for i := range 40 {
		for _, site := range []string{"http://a.example", "https://bücher.example:443", "http://[::1]:8080", "http://c.example"} {
			u := fmt.Sprintf("%s/%s/page-%d?q=%d", site, strings.Repeat("x", i%7), i, i*i)
			if err := f.Push(u); err != nil {
				t.Fatal(err)
			}
			o, _ := frontier.Origin(u)
			want[o] = append(want[o], u)
		}
	}
	f.Push("http://c.example/" + strings.Repeat("long/", 1500)) // longer than the rest by far
	want["http://c.example"] = append(want["http://c.example"], "http://c.example/"+strings.Repeat("long/", 1500))
	// Two URLs Done, one out (at its site's head again), one requeued.
	ctx := context.Background()
	for range 2 {
		u, _ := f.Next(ctx)
		f.Done(u, nil)
		o, _ := frontier.Origin(u)
		want[o] = slices.DeleteFunc(want[o], func(s string) bool { return s == u })
	}
	f.Next(ctx)
	before := f.Counts()

	var buf bytes.Buffer
	if err := f.Save(&buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(buf.Bytes(), []byte("robots frontier 1\n")) {
		t.Errorf("a saved frontier starts %q", buf.Bytes()[:20])
	}
	g := new(frontier.Frontier)
	if err := g.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	after := g.Counts()
	if after.Queued != before.Queued+before.Out || after.Out != 0 || after.Sites != before.Sites {
		t.Errorf("restored %+v, saved %+v: want every URL queued or out queued", after, before)
	}
	before.Queued, before.Out, after.Queued, after.Out = 0, 0, 0, 0
	before.Ready, after.Ready = 0, 0 // gauges: the URL out is ready now
	if after != before {
		t.Errorf("restored totals %+v, want %+v", after, before)
	}
	// A second Restore of the same file adds nothing but the totals.
	if err := g.Restore(bytes.NewReader(buf.Bytes())); err != nil || g.Len() != f.Len() {
		t.Errorf("Restore again: %v, Len %d, want %d", err, g.Len(), f.Len())
	}
	got := drain(t, g)
	for o, urls := range want {
		if !slices.Equal(got[o], urls) {
			t.Errorf("%s: restored\n%q\nwant\n%q", o, got[o], urls)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d sites restored, want %d", len(got), len(want))
	}
}

// TestRestoreBadInput: a file of another version, damaged or cut short
// is a clear error, and the Frontier is left as it was.
func TestRestoreBadInput(t *testing.T) {
	f := new(frontier.Frontier)
	for i := range 30 {
		f.Push(fmt.Sprintf("http://s%d.example/a/%d", i%4, i))
	}
	var buf bytes.Buffer
	if err := f.Save(&buf); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	g := new(frontier.Frontier)
	g.Push("http://kept.example/")
	check := func(what string, data []byte, want error) {
		t.Helper()
		err := g.Restore(bytes.NewReader(data))
		if !errors.Is(err, want) || !strings.HasPrefix(err.Error(), "frontier: ") {
			t.Errorf("%s: Restore = %v, want %v", what, err, want)
		}
		if c := g.Counts(); c.Queued != 1 || c.Pushed != 1 {
			t.Fatalf("%s: the Frontier changed: %+v", what, c)
		}
	}
	for n := range len(good) {
		check(fmt.Sprintf("cut at %d of %d bytes", n, len(good)), good[:n], frontier.ErrCorrupt)
	}
	for i := len("robots frontier 1\n"); i < len(good); i++ {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			bad := bytes.Clone(good)
			bad[i] ^= x
			check(fmt.Sprintf("byte %d ^ %#x", i, x), bad, frontier.ErrCorrupt)
		}
	}
	check("version 2", append([]byte("robots frontier 2\n"), good[18:]...), frontier.ErrVersion)
	check("version 10", append([]byte("robots frontier 10\n"), good[18:]...), frontier.ErrVersion)
	check("no version", append([]byte("robots frontier \n"), good[18:]...), frontier.ErrVersion)
	check("another file", []byte("User-agent: *\nDisallow: /\n"), frontier.ErrCorrupt)
	check("no newline", bytes.Repeat([]byte("robots frontier 1"), 10000), frontier.ErrCorrupt)
	check("empty", nil, frontier.ErrCorrupt)
	boom := errors.New("disk on fire")
	if err := g.Restore(io.MultiReader(bytes.NewReader(good[:40]), iotestErr{boom})); !errors.Is(err, boom) {
		t.Errorf("Restore of a failing reader = %v, want its error", err)
	}
	if err := f.Save(failWriter{boom}); !errors.Is(err, boom) {
		t.Errorf("Save to a failing writer = %v, want its error", err)
	}
}

type iotestErr struct{ err error }

func (r iotestErr) Read([]byte) (int, error) { return 0, r.err }

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

// TestResume: a crawl saved mid-way by one worker while others fetch, and
// restored in a new Frontier, fetches every URL: once, but for those out at
// the save, which are fetched again.
func TestResume(t *testing.T) {
	f := new(frontier.Frontier)
	var all []string
	for i := range 2000 {
		u := fmt.Sprintf("http://s%d.example/%d", i%50, i)
		all = append(all, u)
		f.Push(u)
	}
	var (
		mu      sync.Mutex
		fetched = map[string]int{}
		saved   bytes.Buffer
		killed  bool
		wg      sync.WaitGroup
	)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	for range 4 {
		wg.Go(func() {
			for {
				u, err := f.Next(ctx)
				if err != nil {
					return
				}
				mu.Lock()
				if killed {
					mu.Unlock()
					return
				}
				fetched[u]++
				if len(fetched) >= 700 {
					// Killed here: saved by the last run's last act.
					killed = true
					if err := f.Save(&saved); err != nil {
						t.Error(err)
					}
					stop()
					mu.Unlock()
					return
				}
				mu.Unlock()
				f.Done(u, nil)
			}
		})
	}
	wg.Wait()
	g := new(frontier.Frontier)
	if err := g.Restore(&saved); err != nil {
		t.Fatal(err)
	}
	again := 0
	for _, urls := range drain(t, g) {
		for _, u := range urls {
			if fetched[u] > 0 {
				again++
			}
			fetched[u]++
		}
	}
	for _, u := range all {
		if fetched[u] == 0 {
			t.Errorf("%s never fetched", u)
		}
	}
	if again > 4 {
		t.Errorf("%d URLs fetched twice, want at most the 4 out at the save", again)
	}
}

// FuzzRestore: whatever the bytes, Restore returns, with an error or
// without; what it restores it saves again the same, and it holds URLs of
// at most 32 bytes a byte read.
func FuzzRestore(f *testing.F) {
	fr := new(frontier.Frontier)
	for i := range 20 {
		fr.Push(fmt.Sprintf("http://s%d.example/a/%d", i%3, i))
	}
	fr.Push("http://l.example/" + strings.Repeat("a", 200))
	fr.Push("http://l.example/" + strings.Repeat("a", 200) + "b")
	var buf bytes.Buffer
	fr.Save(&buf)
	f.Add(buf.Bytes())
	f.Add([]byte("robots frontier 1\n"))
	f.Add([]byte("robots frontier 1\n\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		g := new(frontier.Frontier)
		if err := g.Restore(bytes.NewReader(data)); err != nil {
			if g.Len() != 0 {
				t.Fatalf("Restore failed (%v) and left %d URLs", err, g.Len())
			}
			return
		}
		var out bytes.Buffer
		if err := g.Save(&out); err != nil {
			t.Fatal(err)
		}
		h := new(frontier.Frontier)
		if err := h.Restore(&out); err != nil || h.Len() != g.Len() {
			t.Fatalf("saved again: %v, %d URLs, want %d", err, h.Len(), g.Len())
		}
		n := 0
		for _, urls := range drain(t, h) {
			for _, u := range urls {
				n += len(u)
			}
		}
		if n > 32*len(data) {
			t.Fatalf("%d bytes of URLs from %d bytes", n, len(data))
		}
	})
}

// BenchmarkSaveRestore saves and restores a frontier of 1,000,000 URLs over
// 10,000 sites, one file an op, beside two baselines: pushing the same URLs
// into a new Frontier, and writing them one a line, site after site (see
// doc/frontier.md):
//
//	go test -run '^$' -bench SaveRestore -benchmem -benchtime 5x ./frontier/
func BenchmarkSaveRestore(b *testing.B) {
	urls := urlsOf(10000, 100)
	f := new(frontier.Frontier)
	for _, u := range urls {
		f.Push(u)
	}
	var saved bytes.Buffer
	if err := f.Save(&saved); err != nil {
		b.Fatal(err)
	}
	b.Run("push", func(b *testing.B) {
		for b.Loop() {
			g := new(frontier.Frontier)
			for _, u := range urls {
				g.Push(u)
			}
		}
	})
	b.Run("lines", func(b *testing.B) {
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			for s := range 10000 { // site after site, as Save reads them
				for p := range 100 {
					buf.WriteString(urls[p*10000+s])
					buf.WriteByte('\n')
				}
			}
		}
		b.ReportMetric(float64(buf.Len())/float64(len(urls)), "file-B/URL")
	})
	b.Run("save", func(b *testing.B) {
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			if err := f.Save(&buf); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(buf.Len())/float64(len(urls)), "file-B/URL")
	})
	b.Run("restore", func(b *testing.B) {
		for b.Loop() {
			g := new(frontier.Frontier)
			if err := g.Restore(bytes.NewReader(saved.Bytes())); err != nil {
				b.Fatal(err)
			}
			if g.Len() != len(urls) {
				b.Fatalf("restored %d URLs", g.Len())
			}
		}
	})
	runtime.KeepAlive(f)
}

// FuzzRestoreBody is FuzzRestore past the checksum: the fuzzed bytes are
// the body of a version-1 file with its right checksum, so that every part
// of the decoder is reached.
func FuzzRestoreBody(f *testing.F) {
	fr := new(frontier.Frontier)
	for i := range 20 {
		fr.Push(fmt.Sprintf("http://s%d.example/a/%d", i%3, i))
	}
	fr.Push("http://l.example/" + strings.Repeat("a", 200))
	fr.Push("http://l.example/" + strings.Repeat("a", 200) + "b")
	var buf bytes.Buffer
	fr.Save(&buf)
	head := len("robots frontier 1\n")
	f.Add(buf.Bytes()[head : buf.Len()-4])
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, body []byte) {
		data := append([]byte("robots frontier 1\n"), body...)
		data = binary.BigEndian.AppendUint32(data, crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
		g := new(frontier.Frontier)
		if err := g.Restore(bytes.NewReader(data)); err != nil {
			if g.Len() != 0 || !errors.Is(err, frontier.ErrCorrupt) {
				t.Fatalf("Restore failed (%v) and left %d URLs", err, g.Len())
			}
			return
		}
		n := 0
		for _, urls := range drain(t, g) {
			for _, u := range urls {
				n += len(u)
			}
		}
		if n > 32*len(data) {
			t.Fatalf("%d bytes of URLs from %d bytes", n, len(data))
		}
	})
}

// TestRestoreKeepsRetries: a URL the site keeps deferring is given up after
// MaxRetries retries in all, however many restarts between them.
func TestRestoreKeepsRetries(t *testing.T) {
	busy := &http.Response{StatusCode: http.StatusServiceUnavailable, Body: http.NoBody}
	f := &frontier.Frontier{MaxRetries: 2, RetryDelay: time.Nanosecond}
	f.Push("http://a.test/busy")
	f.Push("http://a.test/next")
	for _, want := range []frontier.Outcome{frontier.Retrying, frontier.Retrying, frontier.GaveUp} {
		var buf bytes.Buffer
		if err := f.Save(&buf); err != nil {
			t.Fatal(err)
		}
		f = &frontier.Frontier{MaxRetries: 2, RetryDelay: time.Nanosecond}
		if err := f.Restore(&buf); err != nil {
			t.Fatal(err)
		}
		u, err := f.Next(t.Context())
		if err != nil || u != "http://a.test/busy" {
			t.Fatalf("Next = %q, %v; want the URL retried", u, err)
		}
		if got, _ := f.Answered(u, busy, nil); got != want {
			t.Fatalf("Answered = %v, want %v", got, want)
		}
	}
	if c := f.Counts(); c.Retried != 2 || c.GaveUp != 1 || c.Queued != 1 {
		t.Errorf("Counts = %+v, want 2 retried, 1 given up, 1 queued", c)
	}
}
