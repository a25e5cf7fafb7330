package boltstore

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/f9014239/robots/fleet"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	goleak.VerifyTestMain(m)
}

// The settings tests change, which callers cannot.
func withClock(f func() int64) Option {
	return func(o *options) { o.clock = f }
}

func withFlushInterval(d time.Duration) Option {
	return func(o *options) { o.flushInterval = d }
}

func withLease(d time.Duration) Option {
	return func(o *options) { o.lease = d }
}

func withCompactInterval(d time.Duration) Option {
	return func(o *options) { o.compactInterval = d }
}

func withMaxFileSize(n int) Option {
	return func(o *options) { o.maxFileSize = n }
}

// fakeClock is a Store's clock that moves only when told to.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *fakeClock) now() int64              { return c.ns.Load() }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// forever is a MaxWait that every wait is within.
const forever = time.Duration(math.MaxInt64)

// tempPath returns the path of a file in a directory of t's own.
func tempPath(t testing.TB) string {
	return filepath.Join(t.TempDir(), "robots.db")
}

// openTest opens a Store at path, which t closes at its end.
func openTest(t testing.TB, path string, opts ...Option) *Store {
	t.Helper()
	s, err := Open(path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// reserve calls s.Reserve with the interval every (negative: rules
// unknown, spaced by -every), no hold, and fails t on an error.
func reserve(t testing.TB, s *Store, origin string, every, maxWait time.Duration) (time.Duration, bool) {
	t.Helper()
	tk := reserveHold(t, s, origin, every, maxWait, 0)
	return tk.Wait, tk.OK
}

// reserveHold is reserve with a hold.
func reserveHold(t testing.TB, s *Store, origin string, every, maxWait, hold time.Duration) fleet.Turn {
	t.Helper()
	r := fleet.TurnRequest{Every: every, Known: true, MaxWait: maxWait, Hold: hold}
	if every < 0 {
		r.Every, r.Known = -every, false
	}
	tk, err := s.Reserve(context.Background(), origin, r)
	if err != nil {
		t.Fatalf("Reserve(%s, %+v): %v", origin, r, err)
	}
	return tk
}

// crash closes s as a process killed now would leave its file: without the
// last write, and without noting that the file holds everything.
func crash(t testing.TB, s *Store) {
	t.Helper()
	close(s.stop)
	<-s.done
	s.closed.Store(true)
	s.closeOnce.Do(func() {})
	if err := s.db.Close(); err != nil {
		t.Fatal(err)
	}
}
