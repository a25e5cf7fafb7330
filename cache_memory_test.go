package robots

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/f9014239/robots/fleet"
)

// Memory held by the cache when hostile sites serve robots.txt files of the
// largest size read, made of the rules that cost the most memory per byte.
//
// Run with -v to see the figures:
//
//	ROBOTS_LONG_TESTS=1 go test -run 'TestMemory(PerOrigin|HostileOrigins)' -v .

// hostileShape is a robots.txt body of about DefaultMaxBodySize bytes, and
// the token of the crawler that queries it (so that its index is built).
type hostileShape struct {
	name, agent string
	body        []byte
}

// hostileShapes returns realistic and hostile robots.txt bodies of about
// 500 KiB.
func hostileShapes() []hostileShape {
	fill := func(head string, line func(i int) string) []byte {
		var b strings.Builder
		b.WriteString(head)
		for i := 0; b.Len() < DefaultMaxBodySize-64; i++ {
			b.WriteString(line(i))
		}
		return []byte(b.String())
	}
	return []hostileShape{
		{"40-byte disallow", "ExampleBot", fill("User-agent: *\n", func(i int) string {
			return fmt.Sprintf("Disallow: /catalog/section-%06d/item.html\n", i)
		})},
		{"short allow", "ExampleBot", fill("User-agent: *\n", func(i int) string { return fmt.Sprintf("allow:/%x\n", i) })},
		{"short wildcard", "ExampleBot", fill("User-agent: *\n", func(i int) string { return fmt.Sprintf("disallow:/*%x\n", i) })},
		{"tiny groups", "b1", fill("", func(i int) string { return fmt.Sprintf("user-agent:b%x\ndisallow:/%x\n", i, i) })},
		{"three raw bytes", "ExampleBot", fill("User-agent: *\n", func(i int) string {
			return "allow:/" + string([]byte{byte(0x80 + i%128), byte(0x80 + i/128%128), byte(0x80 + i/16384%128)}) + "\n"
		})},
	}
}

// hostileBase serves body as the robots.txt of every origin, and an empty
// page for any other path.
func hostileBase(body func(host string) []byte) http.RoundTripper {
	return rtFunc(func(req *http.Request) (*http.Response, error) {
		if req.URL.Path != "/robots.txt" {
			return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
		}
		b := body(req.URL.Host)
		return &http.Response{StatusCode: 200, ContentLength: int64(len(b)), Header: http.Header{},
			Body: io.NopCloser(bytes.NewReader(b)), Request: req}, nil
	})
}

// heapInUse returns the bytes of live heap objects after a collection.
func heapInUse() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// cacheCounts returns the origins a Transport's cache keeps and the bytes it
// counts for them.
func cacheCounts(tr *Transport) (kept int, counted int64) {
	for i := range tr.cache.shards {
		sh := &tr.cache.shards[i]
		sh.mu.Lock()
		kept += len(sh.ring)
		counted += sh.bytes
		sh.mu.Unlock()
	}
	if total := tr.cache.bytes.Load(); total != counted {
		panic(fmt.Sprintf("the cache counts %d bytes in all and %d in its shards", total, counted))
	}
	return kept, counted
}

// TestMemoryPerOrigin prints, for each shape, what one cached origin holds
// once a request has been decided by it (so its index is built): as the
// cache counts it and as the heap shows it, with and without a Store. The
// count must not fall short of the heap, or MaxBytes would not bound it.
func TestMemoryPerOrigin(t *testing.T) {
	longTest(t)
	if raceEnabled {
		t.Skip("the race detector changes what the heap holds")
	}
	origins := 6
	if testing.Short() {
		origins = 3
	}
	shapes := append(hostileShapes(), hostileShape{"tiny file", "ExampleBot", []byte("User-agent: *\nDisallow: /private\n")})
	for _, s := range shapes {
		origins := origins
		if len(s.body) < 1<<10 {
			origins *= 500 // enough for the overhead of an origin to show
		}
		for _, withStore := range []bool{false, true} {
			name := s.name
			if withStore {
				name += ", fleet.MemoryStore"
			}
			t.Run(name, func(t *testing.T) {
				base := hostileBase(func(string) []byte { return s.body })
				before := heapInUse()
				tr := &Transport{NoDefaultPace: true, Base: base, Agent: s.agent, MaxBytes: 1 << 40}
				if withStore {
					tr.Store = &fleet.MemoryStore{}
				}
				for i := range origins {
					req, _ := http.NewRequest("GET", fmt.Sprintf("https://o%d.example/x/y", i), nil)
					resp, err := tr.RoundTrip(req)
					if err != nil && !isDisallowed(err) {
						t.Fatal(err)
					}
					if resp != nil {
						resp.Body.Close()
					}
				}
				held := float64(heapInUse()-before) / float64(origins)
				kept, counted := cacheCounts(tr)
				if kept != origins {
					t.Fatalf("%d origins kept, want %d", kept, origins)
				}
				perOrigin := float64(counted) / float64(origins)
				n := float64(len(s.body))
				t.Logf("%-26s file %6d B: per origin %8.0f B counted (%.2f× the file), %8.0f B held on the heap (%.2f×); counted/held %.2f",
					name, len(s.body), perOrigin, perOrigin/n, held, held/n, perOrigin/held)
				if perOrigin < 0.95*held {
					t.Errorf("the cache counts %.0f bytes per origin, less than the %.0f the heap holds", perOrigin, held)
				}
				runtime.KeepAlive(tr)
			})
		}
	}
}

func isDisallowed(err error) bool {
	_, ok := err.(*DisallowedError)
	return ok
}

// TestMemoryHostileOrigins sends a request to each of hundreds of origins,
// each serving 500 KiB of rules of one of the hostile shapes, through a
// Transport with the default MaxBytes and MaxOrigins, and checks that the
// heap then held is about that budget, no more. With -short (and under the
// race detector) the budget is smaller, and so is the number of origins. A
// Transport with a MemoryStore holds at most both budgets. Without
// ROBOTS_LONG_TESTS only the MemoryStore run, the smaller one, is made.
func TestMemoryHostileOrigins(t *testing.T) {
	if raceEnabled {
		t.Skip("sequential, so the race detector has nothing to find, and it slows parsing tenfold")
	}
	shapes := hostileShapes()
	for _, withStore := range []bool{false, true} {
		t.Run(fmt.Sprintf("fleet.MemoryStore %v", withStore), func(t *testing.T) {
			if !withStore {
				longTest(t) // 300 origins of 500 KiB; the 40 with a MemoryStore take a second
			}
			budget, storeBudget := int64(DefaultMaxBytes), int64(0)
			origins := 300
			if testing.Short() || withStore {
				budget, origins = 24<<20, 40
			}
			base := hostileBase(func(host string) []byte {
				var i int
				fmt.Sscanf(host, "o%d.", &i)
				return shapes[i%len(shapes)].body
			})
			before := heapInUse()
			tr := &Transport{NoDefaultPace: true, Base: base, Agent: "ExampleBot"}
			if budget != DefaultMaxBytes {
				tr.MaxBytes = budget
			}
			var store *fleet.MemoryStore
			if withStore {
				storeBudget = budget / 2
				store = &fleet.MemoryStore{MaxBytes: storeBudget}
				tr.Store = store
			}
			var fetched int64
			peak := int64(0)
			for i := range origins {
				req, _ := http.NewRequest("GET", fmt.Sprintf("https://o%d.example/x/y", i), nil)
				resp, err := tr.RoundTrip(req)
				if err != nil && !isDisallowed(err) {
					t.Fatal(err)
				}
				if resp != nil {
					resp.Body.Close()
				}
				fetched += int64(len(shapes[i%len(shapes)].body))
				if _, counted := cacheCounts(tr); counted > peak {
					peak = counted
				}
			}
			held := heapInUse() - before
			kept, counted := cacheCounts(tr)
			t.Logf("%d origins served %.0f MiB of robots.txt; the cache keeps %d of them, counts %.1f MiB (at most %.1f MiB at any time), and the heap holds %.1f MiB, for a budget of %d MiB (and %d MiB for the store)",
				origins, float64(fetched)/(1<<20), kept, float64(counted)/(1<<20), float64(peak)/(1<<20), float64(held)/(1<<20), budget>>20, storeBudget>>20)
			if peak > budget {
				t.Errorf("the cache counted %d bytes, over its budget of %d", peak, budget)
			}
			if all := budget + storeBudget; held > all+all/20+4<<20 {
				t.Errorf("the heap holds %d bytes after %d hostile origins, over the budget of %d", held, origins, all)
			}
			if kept == origins || peak < budget*3/4 {
				t.Errorf("%d of %d origins kept, at most %d bytes counted: the budget of %d was never filled, so the test tests nothing", kept, origins, peak, budget)
			}
			if st := tr.Stats(); st.Evictions == 0 {
				t.Errorf("Stats = %+v, want evictions", st)
			}
			runtime.KeepAlive(tr)
		})
	}
}
