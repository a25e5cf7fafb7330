package frontier_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/f9014239/robots/frontier"
)

// The memory a Frontier holds beyond its URLs' own bytes, as the package
// doc states it.
const (
	maxBytesPerURL  = 64
	maxBytesPerSite = 320
)

// urlsOf returns perSite URLs of each of sites sites, site after site.
func urlsOf(sites, perSite int) []string {
	urls := make([]string, 0, sites*perSite)
	for p := range perSite {
		for s := range sites {
			urls = append(urls, fmt.Sprintf("https://www.site%05d.example/articles/2024/page-%06d.html", s, p))
		}
	}
	return urls
}

// heapAfter returns the bytes of live heap objects after a collection.
func heapAfter() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// held returns the bytes a Frontier holds once urls are pushed, beyond the
// URLs themselves.
func held(t *testing.T, urls []string) (uint64, *frontier.Frontier) {
	t.Helper()
	before := heapAfter()
	f := new(frontier.Frontier)
	for _, u := range urls {
		if err := f.Push(u); err != nil {
			t.Fatal(err)
		}
	}
	n := heapAfter() - before
	runtime.KeepAlive(urls)
	return n, f
}

// TestMemory checks that a Frontier holds at most maxBytesPerURL a queued
// URL and maxBytesPerSite a site, beyond the URLs' own bytes, full and as
// URLs are Done: at half and at 80% Done, and next to nothing once every
// URL is. 100,000 URLs over 1,000 sites; with ROBOTS_LONG_TESTS=1,
// 1,000,000 over 10,000 sites (about 10 s).
func TestMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what the heap holds")
	}
	sites, perSite := 1000, 100
	if os.Getenv("ROBOTS_LONG_TESTS") == "1" {
		sites = 10000
	}
	one, _ := held(t, urlsOf(sites, 1))
	urls := urlsOf(sites, perSite)
	all, f := held(t, urls)
	perURL := float64(all-one) / float64(sites*(perSite-1))
	perSite1 := float64(one)/float64(sites) - perURL
	t.Logf("%d URLs over %d sites: %.1f bytes a queued URL, %.0f a site, beyond the URLs' own (%.0f bytes each); %.1f MB in all",
		len(urls), sites, perURL, perSite1, float64(len(urls[0])), float64(all)/1e6)
	if perURL > maxBytesPerURL || perSite1 > maxBytesPerSite {
		t.Errorf("%.1f bytes a URL, %.0f a site; want at most %d and %d", perURL, perSite1, maxBytesPerURL, maxBytesPerSite)
	}

	// Handed out and Done, a URL is forgotten, and so is each site once
	// its turn has passed. At each level, what is held beyond the sites'
	// bound is within the bound a URL still queued.
	base := heapAfter() - all
	ctx := context.Background()
	done := 0
	for _, level := range []int{50, 80, 100} {
		for ; done < len(urls)*level/100; done++ {
			u, err := f.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			f.Done(u, nil)
		}
		now := int64(heapAfter()) - int64(base)
		c := f.Counts()
		if c.Queued == 0 {
			break
		}
		perURL := float64(now-int64(c.Sites)*maxBytesPerSite) / float64(c.Queued)
		t.Logf("%d%% Done: %d URLs queued on %d sites, %.1f MB: %.1f bytes a queued URL beyond %d a site (%.1f beyond none)",
			level, c.Queued, c.Sites, float64(now)/1e6, perURL, maxBytesPerSite, float64(now)/float64(c.Queued))
		if perURL > maxBytesPerURL {
			t.Errorf("%d%% Done: %.1f bytes a queued URL, want at most %d", level, perURL, maxBytesPerURL)
		}
	}
	if _, err := f.Next(ctx); err != frontier.ErrEmpty {
		t.Fatalf("Next = %v, want ErrEmpty", err)
	}
	if left := int64(heapAfter()) - int64(base); left > 64<<10 {
		t.Errorf("%d bytes held once every URL is Done, want next to none", left)
	}
	runtime.KeepAlive(f)
	runtime.KeepAlive(urls)
}

// nowTurns is a Turns whose every turn is now.
type nowTurns struct{}

func (nowTurns) NextTurn(context.Context, *url.URL) (time.Time, error) { return time.Now(), nil }

// The benchmarks run on a frontier of 1,000,000 URLs over 10,000 sites:
//
//	go test -run '^$' -bench 'Push|NextDone' -benchmem ./frontier/
func BenchmarkPush(b *testing.B) {
	urls := urlsOf(10000, 100)
	f := new(frontier.Frontier)
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		if i == len(urls) {
			b.StopTimer()
			f, i = new(frontier.Frontier), 0
			runtime.GC()
			b.StartTimer()
		}
		if err := f.Push(urls[i]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkNextDone takes a URL with Next and gives it back with Done: with
// no Turns, and with a Turns that answers at once (Done parses the URL to
// ask it).
func BenchmarkNextDone(b *testing.B) {
	for _, c := range []struct {
		name  string
		turns frontier.Turns
	}{{"noTurns", nil}, {"turns", nowTurns{}}} {
		b.Run(c.name, func(b *testing.B) {
			urls := urlsOf(10000, 100)
			ctx := context.Background()
			var f *frontier.Frontier
			fill := func() {
				f = &frontier.Frontier{Turns: c.turns}
				for _, u := range urls {
					f.Push(u)
				}
				runtime.GC()
			}
			fill()
			i := 0
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if i == len(urls) {
					b.StopTimer()
					fill()
					i = 0
					b.StartTimer()
				}
				u, err := f.Next(ctx)
				if err != nil {
					b.Fatal(err)
				}
				f.Done(u, nil)
				i++
			}
		})
	}
}

// TestMemorySites checks that a Frontier gives back the room of the sites
// it forgets: once most sites are done, what it holds a site left (one URL
// queued each) is within the bounds still.
func TestMemorySites(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what the heap holds")
	}
	sites := 20000
	if os.Getenv("ROBOTS_LONG_TESTS") == "1" {
		sites = 200000
	}
	urls := urlsOf(sites, 1)
	base := heapAfter()
	f := new(frontier.Frontier)
	for _, u := range urls {
		f.Push(u)
	}
	for _, level := range []int{30, 50, 74, 90} {
		for f.Len() > sites*(100-level)/100 { // a URL a site
			u, err := f.Next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			f.Done(u, nil)
		}
		left := f.Counts().Sites
		per := float64(int64(heapAfter())-int64(base)) / float64(left)
		t.Logf("%d%% of %d sites done: %.0f bytes a site left, its URL's slots included", level, sites, per)
		if per > maxBytesPerSite+maxBytesPerURL {
			t.Errorf("%d%% of sites done: %.0f bytes a site left, want at most %d", level, per, maxBytesPerSite+maxBytesPerURL)
		}
	}
	runtime.KeepAlive(f)
	runtime.KeepAlive(urls)
}
