package frontier_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/f9014239/robots"
	"github.com/f9014239/robots/frontier"
)

// state is what a test compares of a Frontier: its URLs by site, in the
// order each site hands them out, with the tries of each site's head, and
// its totals but those of waiting. It takes every URL of f.
func state(t *testing.T, f *frontier.Frontier) (map[string][]string, map[string]int, frontier.Counts) {
	t.Helper()
	c := f.Counts()
	c.Queued, c.Out, c.Sites, c.Held, c.Ready = 0, 0, 0, 0, 0
	c.TurnWaits, c.TurnWaitTime, c.IdleWaits, c.IdleTime = 0, 0, 0, 0
	tries := map[string]int{}
	urls := map[string][]string{}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*frontier.MaxRetryDelay)
		u, err := f.Next(ctx) // a retry's delay passes in fake time
		cancel()
		if err == frontier.ErrEmpty {
			return urls, tries, c
		}
		if err != nil {
			t.Fatal(err)
		}
		o, _ := frontier.Origin(u)
		if n := f.Tries(u); n > 0 {
			tries[u] = n
		}
		urls[o] = append(urls[o], u)
		if err := f.Done(u, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// step is one random change of f, a Frontier with no Turns: a Push, a
// Next, or the end of a URL out in one of the ways a crawl gives it back.
func step(t *testing.T, r *rand.Rand, f *frontier.Frontier, out *[]string) {
	t.Helper()
	switch k := r.IntN(10); {
	case k < 4:
		u := fmt.Sprintf("http://s%d.example/p/%d", r.IntN(4), r.IntN(30))
		if err := f.Push(u); err != nil && err != frontier.ErrDuplicate {
			t.Fatal(err)
		}
	case k < 6:
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		u, err := f.Next(ctx)
		cancel()
		if err == nil {
			*out = append(*out, u)
		}
	default:
		if len(*out) == 0 {
			return
		}
		i := r.IntN(len(*out))
		u := (*out)[i]
		*out = slices.Delete(*out, i, i+1)
		var err error
		switch r.IntN(7) {
		case 0:
			err = f.Done(u, nil)
		case 1:
			err = f.Done(u, fmt.Errorf("refused: %w", robots.ErrDisallowed))
		case 2:
			err = f.Done(u, &robots.TurnError{Origin: "x", RetryAt: time.Now()})
		case 3:
			_, err = f.Answered(u, nil, context.Canceled)
		case 4:
			err = f.Requeue(u, time.Now())
		default:
			_, err = f.Answered(u, &http.Response{StatusCode: 503}, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestJournalReplay: a journal cut after any record, or within one (a
// kill while it was written), replays to the Frontier as it was at that
// record: the same URLs, in each site's order, the same tries and totals,
// as Save and Restore give; seen gets every URL pushed up to there.
func TestJournalReplay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		f := &frontier.Frontier{RetryDelay: time.Millisecond, MaxRetries: 2}
		var j bytes.Buffer
		if err := f.Record(&j, "crawl 1"); err != nil {
			t.Fatal(err)
		}
		type point struct {
			end   int
			saved []byte
			out   int
		}
		// The records of Push are buffered until the next call that hands
		// out or gives back a URL: the journal's bytes are the Frontier as
		// it was at the step that wrote them last.
		var points []point
		var out []string
		for i := range 1000 {
			if i > 0 {
				step(t, r, f, &out)
			}
			if len(points) > 0 && points[len(points)-1].end == j.Len() {
				continue
			}
			var s bytes.Buffer
			if err := f.Save(&s); err != nil {
				t.Fatal(err)
			}
			points = append(points, point{end: j.Len(), saved: s.Bytes(), out: f.Counts().Out})
		}
		if len(points) < 150 {
			t.Fatalf("%d points", len(points))
		}
		// Recorded anew mid-crawl (a compaction), the journal holds the
		// URLs held, their order, the URLs out and the tries.
		var compact, saved bytes.Buffer
		if err := f.Record(&compact, "crawl 1"); err != nil {
			t.Fatal(err)
		}
		f.Save(&saved)
		want, g := new(frontier.Frontier), new(frontier.Frontier)
		want.Restore(&saved)
		res, err := g.Replay(&compact, "crawl 1", nil, nil)
		if err != nil || res.Out != f.Counts().Out || res.Out == 0 {
			t.Fatalf("compacted: %+v, %v; want %d out", res, err, f.Counts().Out)
		}
		wu, wt, _ := state(t, want)
		gu, gt, _ := state(t, g)
		if fmt.Sprint(gu) != fmt.Sprint(wu) || fmt.Sprint(gt) != fmt.Sprint(wt) || len(wt) == 0 {
			t.Fatalf("compacted: replayed\n%v %v\nwant\n%v %v", gu, gt, wu, wt)
		}
		all := j.Bytes()
		for i, p := range points {
			want := new(frontier.Frontier)
			if err := want.Restore(bytes.NewReader(p.saved)); err != nil {
				t.Fatal(err)
			}
			wu, wt, wc := state(t, want)
			cuts := []int{0}
			if p.end < len(all) { // within the record after: cut by a kill
				n, k := binary.Uvarint(all[p.end+1:])
				cuts = append(cuts, 1+r.IntN(1+k+int(n)+4-1))
			}
			for _, cut := range cuts {
				g := new(frontier.Frontier)
				var seen []string
				res, err := g.Replay(bytes.NewReader(all[:p.end+cut]), "crawl 1", func(u string) { seen = append(seen, u) }, nil)
				if err != nil {
					t.Fatalf("step %d, cut %d: %v", i, cut, err)
				}
				if res.End != int64(p.end) || res.Cut != int64(cut) || res.Out != p.out || res.Runs != 1 {
					t.Fatalf("step %d, cut %d: %+v, want End %d, Cut %d, Out %d", i, cut, res, p.end, cut, p.out)
				}
				gu, gt, gc := state(t, g)
				if fmt.Sprint(gu) != fmt.Sprint(wu) || fmt.Sprint(gt) != fmt.Sprint(wt) || gc != wc {
					t.Fatalf("step %d, cut %d: replayed\n%v %v %+v\nwant\n%v %v %+v", i, cut, gu, gt, gc, wu, wt, wc)
				}
				if uint64(len(seen)) != wc.Pushed {
					t.Fatalf("step %d: seen %d URLs, pushed %d", i, len(seen), wc.Pushed)
				}
			}
		}
	})
}

// TestJournalRuns: a journal appended to by a second run (replayed, then
// recorded to the same file) replays to the second run's end, and the
// second run's journal is whole by itself too.
func TestJournalRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal")
	f := new(frontier.Frontier)
	res, err := f.OpenJournal(path, "c", nil, nil)
	if err != nil || res != (frontier.Replayed{}) {
		t.Fatalf("a new journal: %+v, %v", res, err)
	}
	for i := range 10 {
		f.Push(fmt.Sprintf("http://a.example/%d", i))
		f.Push(fmt.Sprintf("http://b.example/%d", i))
	}
	var done []string
	for range 5 {
		u, _ := f.Next(context.Background())
		if err := f.Done(u, nil); err != nil {
			t.Fatal(err)
		}
		done = append(done, u)
	}
	if err := f.Note("a note"); err != nil {
		t.Fatal(err)
	}
	u, _ := f.Next(context.Background())   // out at the "kill": f is dropped unclosed
	v, _ := f.Next(context.Background())   // its site's other
	if err := f.Done(v, nil); err != nil { // which writes u's out
		t.Fatal(err)
	}
	g := new(frontier.Frontier)
	seen := map[string]bool{}
	var notes []string
	res, err = g.OpenJournal(path, "c", func(u string) { seen[u] = true }, func(n string) { notes = append(notes, n) })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(notes, []string{"a note"}) {
		t.Errorf("notes %q", notes)
	}
	if b, err := os.ReadFile(path); err != nil {
		t.Fatal(err)
	} else if name, err := frontier.JournalCrawl(bytes.NewReader(b)); name != "c" || err != nil {
		t.Errorf("JournalCrawl = %q, %v", name, err)
	}
	if res.Runs != 1 || res.Pushed != 14 || res.Out != 1 || res.Done != 6 || len(seen) != 20 {
		t.Fatalf("replayed %+v, %d seen; want 1 run, 14 pushed, 1 out, 6 done, 20 seen", res, len(seen))
	}
	if got := g.Tries(u); got != 0 {
		t.Fatalf("Tries = %d", got)
	}
	// The second run: the URL out at the kill first of its site.
	v, _ = g.Next(context.Background())
	w, _ := g.Next(context.Background())
	if v != u && w != u {
		t.Fatalf("the URL out at the kill, %s, is not handed out first: %s, %s", u, v, w)
	}
	g.Done(v, nil)
	if err := g.CloseJournal(); err != nil {
		t.Fatal(err)
	}
	h := new(frontier.Frontier)
	res, err = h.OpenJournal(path, "c", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Runs != 2 || res.Pushed != 13 || res.Out != 1 || res.Done != 7 {
		t.Fatalf("second replay %+v; want 2 runs, 13 held, 1 out (w), 7 done", res)
	}
	if err := h.Record(nil, ""); err != nil { // closes the file, as CloseJournal
		t.Fatal(err)
	}
	if err := h.CloseJournal(); err != nil {
		t.Fatalf("CloseJournal after Record(nil) = %v", err)
	}
	if _, err := new(frontier.Frontier).OpenJournal(path, "another", nil, nil); !errors.Is(err, frontier.ErrOtherCrawl) || !strings.Contains(err.Error(), path) {
		t.Fatalf("another crawl's journal: %v", err)
	}
}

// record returns one journal record, framed as Record writes it.
func record(kind byte, payload []byte) []byte {
	b := []byte{kind}
	b = binary.AppendUvarint(b, uint64(len(payload)))
	b = append(b, payload...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

func begin(version uint64, crawl string) []byte {
	return record('B', append(binary.AppendUvarint([]byte("robots frontier journal"), version), crawl...))
}

// TestJournalBadInput: a damaged journal, one of another crawl or
// version, or not a journal, is a clear error that changes nothing.
func TestJournalBadInput(t *testing.T) {
	f := new(frontier.Frontier)
	var j bytes.Buffer
	f.Record(&j, "c")
	for i := range 50 {
		f.Push(fmt.Sprintf("http://a.example/%d", i))
	}
	u, _ := f.Next(context.Background())
	f.Done(u, nil)
	good := slices.Clone(j.Bytes())

	check := func(name string, b []byte, want error) {
		t.Helper()
		g := new(frontier.Frontier)
		_, err := g.Replay(bytes.NewReader(b), "c", nil, nil)
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", name, err, want)
		}
		if g.Len() != 0 {
			t.Errorf("%s: %d URLs added", name, g.Len())
		}
	}
	// A flipped bit anywhere but in the last record: corrupt.
	last := len(good) - len(record('D', append([]byte{0}, u...)))
	for i := 0; i < last; i += 7 {
		b := slices.Clone(good)
		b[i] ^= 1 << (i % 8)
		g := new(frontier.Frontier)
		_, err := g.Replay(bytes.NewReader(b), "c", nil, nil)
		if !errors.Is(err, frontier.ErrCorrupt) && !errors.Is(err, frontier.ErrVersion) && !errors.Is(err, frontier.ErrOtherCrawl) {
			t.Fatalf("bit %d flipped: %v", i, err)
		}
		if g.Len() != 0 {
			t.Fatalf("bit %d flipped: %d URLs added", i, g.Len())
		}
	}
	// In the last record: taken for a record cut by a kill.
	b := slices.Clone(good)
	b[len(b)-2] ^= 4
	g := new(frontier.Frontier)
	res, err := g.Replay(bytes.NewReader(b), "c", nil, nil)
	if err != nil || res.Cut != int64(len(good)-last) || g.Len() != 50 {
		t.Errorf("last record damaged: %+v, %v, %d held; want it dropped (the URL out again)", res, err, g.Len())
	}
	g = new(frontier.Frontier)
	if _, err := g.Replay(bytes.NewReader(good), "d", nil, nil); !errors.Is(err, frontier.ErrOtherCrawl) || !strings.Contains(err.Error(), `"c"`) {
		t.Errorf("another crawl: %v", err)
	}
	newer := append(begin(2, "c"), []byte("records of a format to come")...)
	check("a newer version", newer, frontier.ErrVersion)
	for _, c := range []struct {
		b    []byte
		want error
	}{{newer, frontier.ErrVersion}, {[]byte("text\n"), frontier.ErrCorrupt}, {nil, frontier.ErrCorrupt}, {begin(1, "c")[:9], frontier.ErrCorrupt}, {good[:len(good)-1], nil}} {
		if _, err := frontier.JournalCrawl(bytes.NewReader(c.b)); !errors.Is(err, c.want) {
			t.Errorf("JournalCrawl(%.20q) = %v, want %v", c.b, err, c.want)
		}
	}
	if err := f.Note(strings.Repeat("x", frontier.MaxURLLen+1)); err == nil {
		t.Error("a note too long is written")
	}
	check("a saved frontier", func() []byte { var s bytes.Buffer; f.Save(&s); return s.Bytes() }(), frontier.ErrCorrupt)
	check("text", []byte("robotstxt crawl journal 1\nagent x\n"), frontier.ErrCorrupt)
	check("a length out of range", append(begin(1, "c"), 'P', 0xff, 0xff, 0xff, 0xff, 0x0f), frontier.ErrCorrupt)
	check("a huge varint", append(begin(1, "c"), 'P', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), frontier.ErrCorrupt)
	check("an unknown kind", append(begin(1, "c"), record('Z', []byte("x"))...), frontier.ErrCorrupt)
	check("a done of a URL not pushed", append(begin(1, "c"), record('D', []byte("\x00http://a.example/"))...), frontier.ErrCorrupt)
	check("a URL Push refuses", append(begin(1, "c"), record('P', []byte("ftp://a.example/"))...), frontier.ErrCorrupt)
	check("an out twice", slices.Concat(begin(1, "c"), record('P', []byte("http://a.example/")), record('O', []byte("http://a.example/")), record('O', []byte("http://a.example/"))), frontier.ErrCorrupt)
	// Cut within its first record: nothing was written but that.
	for n := 1; n < len(begin(1, "c")); n++ {
		g := new(frontier.Frontier)
		res, err := g.Replay(bytes.NewReader(begin(1, "c")[:n]), "c", nil, nil)
		if err != nil || res.Cut != int64(n) || res.End != 0 {
			t.Fatalf("begin cut at %d: %+v, %v", n, res, err)
		}
	}
	// A reader that fails: its error.
	boom := errors.New("boom")
	if _, err := new(frontier.Frontier).Replay(io.MultiReader(bytes.NewReader(good[:100]), iotestErr{boom}), "c", nil, nil); !errors.Is(err, boom) {
		t.Errorf("a failing reader: %v", err)
	}
	if err := new(frontier.Frontier).Record(io.Discard, strings.Repeat("x", frontier.MaxCrawlLen+1)); err == nil {
		t.Error("a crawl name too long is recorded")
	}
}

// flakyWriter fails once it has taken n bytes.
type flakyWriter struct {
	mu sync.Mutex
	n  int
	w  bytes.Buffer
}

var errDiskFull = errors.New("disk full")

func (w *flakyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.w.Len()+len(p) > w.n {
		k := w.n - w.w.Len()
		w.w.Write(p[:k])
		return k, errDiskFull
	}
	return w.w.Write(p)
}

// TestJournalWriterFails: once the journal's writer fails, the workers
// stop (Next returns the error), Push refuses, and what was written
// replays to a Frontier that holds no URL whose Done returned nil: a
// resumed crawl sends again only those given back with the error, as if
// out at a kill.
func TestJournalWriterFails(t *testing.T) {
	for _, n := range []int{0, 50, 200, 1000, 3000} {
		f := new(frontier.Frontier)
		w := &flakyWriter{n: n}
		err := f.Record(w, "c")
		if n == 0 {
			if !errors.Is(err, errDiskFull) || !errors.Is(err, frontier.ErrJournal) {
				t.Fatalf("Record to a full disk: %v", err)
			}
			continue
		}
		for i := range 100 {
			f.Push(fmt.Sprintf("http://s%d.example/%d", i%5, i))
		}
		var stopped error
		done := map[string]bool{} // Done returned nil
		var wg sync.WaitGroup
		var mu sync.Mutex
		for range 4 {
			wg.Go(func() {
				for {
					u, err := f.Next(context.Background())
					if err != nil {
						mu.Lock()
						if err != frontier.ErrEmpty {
							stopped = err
						}
						mu.Unlock()
						return
					}
					err = f.Done(u, nil)
					mu.Lock()
					if err == nil {
						done[u] = true
					} else if !errors.Is(err, errDiskFull) {
						t.Errorf("Done: %v", err)
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if !errors.Is(stopped, errDiskFull) || !errors.Is(stopped, frontier.ErrJournal) {
			t.Fatalf("n=%d: the workers stopped with %v", n, stopped)
		}
		if err := f.Push("http://new.example/"); !errors.Is(err, frontier.ErrJournal) {
			t.Errorf("n=%d: Push after the failure: %v", n, err)
		}
		g := new(frontier.Frontier)
		res, err := g.Replay(bytes.NewReader(w.w.Bytes()), "c", nil, nil)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if res.Done < uint64(len(done)) {
			t.Errorf("n=%d: %d Done returned nil, the journal has %d", n, len(done), res.Done)
		}
		for {
			u, err := g.Next(context.Background())
			if err != nil {
				break
			}
			if done[u] {
				t.Errorf("n=%d: %s, Done, is held again", n, u)
			}
			g.Done(u, nil)
		}
		if err := f.CloseJournal(); !errors.Is(err, errDiskFull) {
			t.Errorf("n=%d: CloseJournal = %v", n, err)
		}
	}
}

// churn is a journal that pushes and finishes URLs forever: begin, then
// push, out and done of URL after URL, size bytes in all.
type churn struct {
	size, n int64
	buf     []byte
	i       int
}

func (c *churn) Read(p []byte) (int, error) {
	if c.n >= c.size {
		return 0, io.EOF
	}
	if len(c.buf) == 0 {
		if c.i == 0 {
			c.buf = begin(1, "c")
		}
		for len(c.buf) < 64<<10 {
			u := fmt.Sprintf("http://s%d.example/page/%d", c.i%100, c.i)
			c.buf = append(c.buf, record('P', []byte(u))...)
			c.buf = append(c.buf, record('O', []byte(u))...)
			c.buf = append(c.buf, record('D', append([]byte{0}, u...))...)
			c.i++
		}
	}
	k := copy(p, c.buf[:min(int64(len(c.buf)), c.size-c.n)])
	c.buf = c.buf[k:]
	c.n += int64(k)
	return k, nil
}

// TestJournalLong: a long journal of URLs pushed and done is read in
// memory bounded by what it holds at its end, not by its size. 32 MB;
// with ROBOTS_LONG_TESTS=1, 10 GB (4 to 5 minutes).
func TestJournalLong(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what the heap holds")
	}
	size := int64(32 << 20)
	if os.Getenv("ROBOTS_LONG_TESTS") != "" {
		size = 10 << 30
	}
	// Garbage is let grow to a tenth of the heap live, not to its size:
	// what is measured is what Replay holds.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	peak := before.HeapInuse
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
		}
	})
	f := new(frontier.Frontier)
	seen := 0
	res, err := f.Replay(&churn{size: size}, "c", func(string) { seen++ }, nil)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	peak = max(peak, after.HeapInuse)
	runtime.GC()
	var gc runtime.MemStats
	runtime.ReadMemStats(&gc)
	t.Logf("after GC: %.1f MB over the start; %d GCs", float64(int64(gc.HeapInuse)-int64(before.HeapInuse))/(1<<20), gc.NumGC-before.NumGC)
	t.Logf("%d MB: %+v, %d seen, heap peak %.1f MB over the start", size>>20, res, seen, float64(peak-before.HeapInuse)/(1<<20))
	if res.Done == 0 || res.Pushed > 1 || uint64(seen) < res.Done {
		t.Errorf("replayed %+v", res)
	}
	if peak-before.HeapInuse > 16<<20 {
		t.Errorf("heap grew by %d MB while reading a journal of %d MB holding 1 URL", (peak-before.HeapInuse)>>20, size>>20)
	}
}

// FuzzReplay: any bytes replay to a Frontier or to an error, never a
// panic, and what replays is a Frontier that hands out each URL once.
func FuzzReplay(f *testing.F) {
	fr := &frontier.Frontier{RetryDelay: time.Nanosecond}
	var j bytes.Buffer
	fr.Record(&j, "c")
	for i := range 6 {
		fr.Push(fmt.Sprintf("http://s%d.example/%d", i%2, i))
	}
	u, _ := fr.Next(context.Background())
	fr.Answered(u, &http.Response{StatusCode: 503}, nil)
	v, _ := fr.Next(context.Background())
	fr.Done(v, nil)
	fr.Next(context.Background())
	f.Add(j.Bytes())
	f.Add(begin(1, "c"))
	f.Add(begin(2, "c"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		g := &frontier.Frontier{RetryDelay: time.Nanosecond}
		seen := map[string]bool{}
		res, err := g.Replay(bytes.NewReader(b), "c", func(u string) { seen[u] = true }, nil)
		if err != nil {
			if g.Len() != 0 {
				t.Fatalf("%v, and %d URLs added", err, g.Len())
			}
			return
		}
		if res.End+res.Cut != int64(len(b)) || g.Len() != res.Pushed || res.Out > res.Pushed {
			t.Fatalf("%+v for %d bytes, %d held", res, len(b), g.Len())
		}
		got := map[string]bool{}
		for range res.Pushed {
			u, err := g.Next(context.Background())
			if err != nil || got[u] || !seen[u] {
				t.Fatalf("Next = %q, %v (handed out before: %v; seen %v)", u, err, got[u], seen[u])
			}
			got[u] = true
			g.Done(u, nil)
		}
		if _, err := g.Next(context.Background()); err != frontier.ErrEmpty {
			t.Fatalf("after every URL: %v", err)
		}
	})
}

// BenchmarkJournal is the cost of a journal to a file, beside the same
// work with none and beside Save, in one run: 100,000 URLs of 60 bytes
// over 1,000 sites an op (see doc/frontier.md):
//
//	go test -run '^$' -bench Journal -benchmem -benchtime 5x ./frontier/
//
// push: Push every URL; crawl: Push every URL, then Next and Done each;
// save: Save the Frontier of every URL; replay: Replay the journal of
// push. ns/URL is the op's time over the URLs; file-B/URL the bytes
// written over the URLs.
func BenchmarkJournal(b *testing.B) {
	urls := urlsOf(1000, 100)
	dir := b.TempDir()
	file := func(b *testing.B) *os.File {
		w, err := os.Create(filepath.Join(dir, b.Name()[strings.LastIndex(b.Name(), "/")+1:]))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { w.Close() })
		return w
	}
	report := func(b *testing.B, w *os.File) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(urls)), "ns/URL")
		if w != nil {
			fi, err := w.Stat()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(fi.Size())/float64(len(urls)), "file-B/URL")
		}
	}
	run := func(b *testing.B, journal, crawl bool) {
		var w *os.File
		if journal {
			w = file(b)
		}
		for b.Loop() {
			f := new(frontier.Frontier)
			if journal {
				w.Truncate(0)
				w.Seek(0, io.SeekStart)
				if err := f.Record(w, "bench"); err != nil {
					b.Fatal(err)
				}
			}
			for _, u := range urls {
				if err := f.Push(u); err != nil {
					b.Fatal(err)
				}
			}
			for crawl {
				u, err := f.Next(context.Background())
				if err == frontier.ErrEmpty {
					break
				}
				if err := f.Done(u, nil); err != nil {
					b.Fatal(err)
				}
			}
			if journal {
				if err := f.Record(nil, ""); err != nil {
					b.Fatal(err)
				}
			}
		}
		report(b, w)
	}
	b.Run("push", func(b *testing.B) { run(b, false, false) })
	b.Run("push+journal", func(b *testing.B) { run(b, true, false) })
	b.Run("crawl", func(b *testing.B) { run(b, false, true) })
	b.Run("crawl+journal", func(b *testing.B) { run(b, true, true) })
	full := new(frontier.Frontier)
	for _, u := range urls {
		full.Push(u)
	}
	b.Run("save", func(b *testing.B) {
		w := file(b)
		for b.Loop() {
			w.Truncate(0)
			w.Seek(0, io.SeekStart)
			if err := full.Save(w); err != nil {
				b.Fatal(err)
			}
		}
		report(b, w)
	})
	var j bytes.Buffer
	full.Record(&j, "bench")
	full.Record(nil, "")
	b.Run("replay", func(b *testing.B) {
		for b.Loop() {
			g := new(frontier.Frontier)
			if _, err := g.Replay(bytes.NewReader(j.Bytes()), "bench", nil, nil); err != nil {
				b.Fatal(err)
			}
		}
		report(b, nil)
	})
}
