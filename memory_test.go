package robots

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/jarcoal/httpmock"
)

// hostileShapes are robots.txt bodies of about 500 KiB that cost the most
// memory per byte once parsed and indexed.
func hostileShapes() map[string]string {
	fill := func(line func(i int) string) string {
		var b strings.Builder
		b.WriteString("User-agent: *\n")
		for i := 0; b.Len() < 500<<10-64; i++ {
			b.WriteString(line(i))
		}
		return b.String()
	}
	return map[string]string{
		"40-byte disallow": fill(func(i int) string { return fmt.Sprintf("Disallow: /catalog/section-%06d/item.html\n", i) }),
		"short allow":      fill(func(i int) string { return fmt.Sprintf("allow:/%x\n", i) }),
		"short wildcard":   fill(func(i int) string { return fmt.Sprintf("disallow:/*%x\n", i) }),
		"tiny groups":      fill(func(i int) string { return fmt.Sprintf("user-agent:b%x\ndisallow:/%x\n", i, i) }),
	}
}

// TestMemoryPerOrigin prints the bytes a cached origin holds for each hostile
// shape (its parsed robots.txt with the index built, as the cache counts it
// and as the heap shows it), and checks that a Transport whose origins all
// serve such files holds no more than its MaxBytes.
func TestMemoryPerOrigin(t *testing.T) {
	const budget = 24 << 20
	origins := 120
	if testing.Short() || raceEnabled {
		origins = 40
	}
	for name, body := range hostileShapes() {
		t.Run(name, func(t *testing.T) {
			mock := httpmock.NewMockTransport()
			mock.RegisterNoResponder(httpmock.NewStringResponder(200, "page"))
			mock.RegisterRegexpResponder("GET", mustRegexp(`/robots\.txt$`), httpmock.NewStringResponder(200, body))
			tr := &Transport{Base: mock, Agent: "ExampleBot", MaxBytes: budget, IgnoreCrawlDelay: true}
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for i := range origins {
				req, _ := http.NewRequest("GET", fmt.Sprintf("https://o%d.example/some/path", i), nil)
				tr.RoundTrip(req)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
			var kept int
			var counted int64
			for i := range tr.cache.shards {
				sh := &tr.cache.shards[i]
				sh.mu.Lock()
				kept += len(sh.ring)
				counted += sh.bytes
				sh.mu.Unlock()
			}
			perOrigin := counted / int64(max(kept, 1))
			t.Logf("%-16s file %d B; per origin %d B counted (%.2f× the file); %d of %d origins kept, heap held %.1f MiB, budget %d MiB",
				name, len(body), perOrigin, float64(perOrigin)/float64(len(body)), kept, origins, float64(held)/(1<<20), budget>>20)
			if counted > budget {
				t.Errorf("the cache counts %d bytes, over its budget of %d", counted, budget)
			}
			if held > budget*5/4+4<<20 {
				t.Errorf("heap held %d bytes after %d hostile origins, want about the budget of %d", held, origins, budget)
			}
			if kept == origins {
				t.Errorf("every origin kept: the budget was never reached, so the test tests nothing")
			}
			runtime.KeepAlive(tr)
			_ = context.Background()
		})
	}
}
