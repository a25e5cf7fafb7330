package boltstore

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/f9014239/robots/fleet"

	bolt "go.etcd.io/bbolt"

	"github.com/f9014239/robots"
)

// okBase answers robots.txt with rules that allow everything and every
// other request with one shared response, doing no other work.
type okBase struct{ page *http.Response }

func (b okBase) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Path == "/robots.txt" {
		return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
	}
	return b.page, nil
}

// BenchmarkRoundTrip measures an allowed request to a cached origin through
// a Transport whose Pacer is a Store on a file (boltstore), against the
// same request through a Transport alone (memory: origins paced in the
// Transport), and through a Transport whose Pacer is in memory
// (pacer-in-memory: the same Store, with its writes turned off): for
// origins with no delay and with one (MinDelay, here 50 µs), across 1000 or
// 100,000 origins taken in turn, so that no request waits: what is measured
// is the cost of taking the turn, and of writing it. cpu-ns/op is the CPU
// time of the whole process per request, the flusher's included. (The
// Transports have no Store: it is not called for a cached origin.)
func BenchmarkRoundTrip(b *testing.B) {
	base := okBase{page: &http.Response{StatusCode: 200, Body: http.NoBody}}
	for _, origins := range []int{1000, 100000} {
		reqs := make([]*http.Request, origins)
		for i := range reqs {
			reqs[i], _ = http.NewRequest("GET", fmt.Sprintf("https://o%d.example/page", i), nil)
			reqs[i].Header.Set("User-Agent", "ExampleBot/1.0") // sent as it is, not cloned
		}
		for _, delay := range []time.Duration{0, 50 * time.Microsecond} {
			name := fmt.Sprintf("%d/no-delay", origins)
			if delay > 0 {
				name = fmt.Sprintf("%d/delay", origins)
			}
			st := openTest(b, tempPath(b))
			unwritten := openTest(b, tempPath(b), withFlushInterval(time.Hour), withLease(time.Hour))
			for _, c := range []struct {
				name  string
				pacer fleet.Pacer
			}{{"memory", nil}, {"pacer-in-memory", unwritten}, {"boltstore", st}} {
				tr := &robots.Transport{Base: base, Agent: "ExampleBot", MinDelay: delay, Pacer: c.pacer, MaxOrigins: 2 * origins}
				for _, req := range reqs { // warm the cache
					if _, err := tr.RoundTrip(req); err != nil {
						b.Fatal(err)
					}
				}
				time.Sleep(2 * delay) // past the turns the warm-up took
				b.Run(name+"/"+c.name, func(b *testing.B) {
					b.ReportAllocs()
					waits := tr.Stats().TurnWaits
					time.Sleep(2 * flushInterval) // the writes of the warm-up
					cpu0 := cpuTime()
					i := 0
					for b.Loop() {
						if _, err := tr.RoundTrip(reqs[i%origins]); err != nil {
							b.Fatal(err)
						}
						i++
					}
					b.StopTimer()
					time.Sleep(2 * flushInterval) // the writes of what the loop did
					if cpu := cpuTime() - cpu0; cpu > 0 {
						b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
					}
					if w := tr.Stats().TurnWaits - waits; w > uint64(b.N)/100 {
						b.Logf("%d of %d requests waited for their turn", w, b.N)
					}
				})
			}
		}
	}
}

// BenchmarkReserve measures a Reserve and a Release of a held turn, the
// work a paced request gives the Store, across 1000 origins taken in turn.
func BenchmarkReserve(b *testing.B) {
	st := openTest(b, tempPath(b))
	ctx := context.Background()
	origins := make([]string, 1000)
	for i := range origins {
		origins[i] = fmt.Sprintf("https://o%d.example", i)
	}
	r := fleet.TurnRequest{Every: time.Nanosecond, Known: true, MaxWait: time.Second, Hold: time.Minute}
	b.ReportAllocs()
	cpu0 := cpuTime()
	i := 0
	for b.Loop() {
		o := origins[i%len(origins)]
		tk, err := st.Reserve(ctx, o, r)
		if err != nil || !tk.OK {
			b.Fatalf("Reserve: %+v, %v", tk, err)
		}
		st.Release(ctx, o, fleet.Answer{ID: tk.ID})
		i++
	}
	b.StopTimer()
	time.Sleep(2 * flushInterval)
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkOpen measures Open of a file that holds 100,000 origins: a
// robots.txt entry of 540 bytes and a pace each (a turn that keeps an hour;
// a pause of an hour for one in ten). "clean" opens the file as Close left
// it; "after-crash" opens it as a process killed after a flush of every
// pace left it, with the paces in the journal (Open replays them and
// writes a checkpoint). Set BOLTSTORE_BENCH_ORIGINS for another count.
func BenchmarkOpen(b *testing.B) {
	n := 100000
	if v := os.Getenv("BOLTSTORE_BENCH_ORIGINS"); v != "" {
		fmt.Sscan(v, &n)
	}
	clean := tempPath(b)
	fill(b, clean, n)
	crashed := tempPath(b)
	copyFile(b, crashed, clean)
	st, err := Open(crashed)
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		st.Reserve(context.Background(), origin(i), fleet.TurnRequest{Every: time.Hour, Known: true, MaxWait: forever})
	}
	if err := st.flush(false); err != nil {
		b.Fatal(err)
	}
	crash(b, st)
	for _, c := range []struct{ name, path string }{{"clean", clean}, {"after-crash", crashed}} {
		b.Run(c.name, func(b *testing.B) {
			path := tempPath(b)
			var size int64
			for b.Loop() {
				b.StopTimer()
				copyFile(b, path, c.path)
				b.StartTimer()
				st, err := Open(path)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if len(*st.pauses.Load()) != n/10 {
					b.Fatalf("%d pauses read, want %d", len(*st.pauses.Load()), n/10)
				}
				st.Close()
				fi, err := os.Stat(path)
				if err != nil {
					b.Fatal(err)
				}
				size = fi.Size()
				b.StartTimer()
			}
			b.ReportMetric(float64(size)/(1<<20), "file-MiB")
		})
	}
}

// copyFile copies the file src to dst.
func copyFile(b *testing.B, dst, src string) {
	data, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		b.Fatal(err)
	}
}

// origin names the origin i of fill.
func origin(i int) string { return fmt.Sprintf("https://www.origin-%d.example", i) }

// fill writes n origins to a new file at path: an entry each, written in
// transactions of 10,000, and a pace each (a turn that keeps an hour; a
// pause of an hour for one in ten).
func fill(b *testing.B, path string, n int) {
	st, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	now := time.Now()
	body := []byte(strings.Repeat("User-agent: *\nDisallow: /private/\nAllow: /public/\n", 10))
	for i := 0; i < n; i += 10000 {
		err := st.write(func(tx *bolt.Tx) error {
			for j := i; j < min(i+10000, n); j++ {
				e := &fleet.Entry{Access: fleet.AccessSuccess, Body: body, FetchedAt: now, Expires: now.Add(24 * time.Hour)}
				if err := st.putEntry(tx, origin(j), encodeEntry(e), st.now()); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	for i := range n {
		if _, err := st.Reserve(ctx, origin(i), fleet.TurnRequest{Every: time.Hour, Known: true}); err != nil {
			b.Fatal(err)
		}
		if i%10 == 0 {
			// a pause set in memory, which the Close below writes
			sh := st.shard(origin(i))
			sh.mu.Lock()
			sh.m[origin(i)].pauseUntil = st.now() + int64(time.Hour)
			st.changed(sh, origin(i))
			sh.mu.Unlock()
		}
	}
}
