package redisstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/f9014239/robots/fleet"

	"github.com/klauspost/compress/zstd"
)

// corpusDir is the shared corpus of real robots.txt files, beside the
// repository; .ci/run makes sure it is there.
const corpusDir = "../../shared/corpus"

// corpusFile is a file of the corpus: its name and its body.
type corpusFile struct {
	name string
	body []byte
}

// readCorpus returns every file of the corpus, or skips t if it is absent.
var readCorpus = sync.OnceValues(func() ([]corpusFile, error) {
	paths, err := filepath.Glob(filepath.Join(corpusDir, "*", "*"))
	if err != nil {
		return nil, err
	}
	var files []corpusFile
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		files = append(files, corpusFile{strings.TrimPrefix(p, corpusDir+"/"), b})
	}
	return files, nil
})

func corpus(t testing.TB) []corpusFile {
	t.Helper()
	if _, err := os.Stat(corpusDir); err != nil {
		t.Skipf("%s is absent", corpusDir)
	}
	files, err := readCorpus()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("%s holds no files", corpusDir)
	}
	return files
}

// maxLength is the longest of the bodies of every length that
// roundTripEntries makes.
const maxLength = 4 << 10

// roundTripEntries returns an entry for each file of files, and for bodies
// of every length from 0 to maxLength, one that compresses and one that does
// not; their other fields vary from entry to entry. A few entries without a
// body (unavailable, unreachable) end the list.
func roundTripEntries(files []corpusFile) []*fleet.Entry {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	rng := rand.New(rand.NewChaCha8([32]byte{1}))
	noise := make([]byte, maxLength)
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	var bodies [][]byte
	for _, f := range files {
		bodies = append(bodies, f.body)
	}
	for n := range maxLength + 1 {
		bodies = append(bodies, []byte(longRobots[:n]), noise[:n])
	}
	entries := make([]*fleet.Entry, 0, len(bodies)+3)
	for i, b := range bodies {
		e := &fleet.Entry{Access: fleet.AccessSuccess, Body: b,
			FetchedAt: t0.Add(time.Duration(i) * time.Second), Expires: t0.Add(24*time.Hour + time.Duration(i)*time.Nanosecond)}
		if i%3 == 1 {
			// The last good copy, obeyed while the origin is
			// unreachable.
			e.UnreachableSince = t0.Add(time.Duration(i) * time.Millisecond)
			e.Failures = i % 17
			e.Error = fmt.Sprintf("robots: fetching robots.txt: 503 Service Unavailable (%d)", i)
		}
		entries = append(entries, e)
	}
	return append(entries,
		&fleet.Entry{Access: fleet.AccessUnavailable, FetchedAt: t0, Expires: t0.Add(time.Hour)},
		&fleet.Entry{Access: fleet.AccessUnreachable, Expires: t0.Add(time.Minute), UnreachableSince: t0, Failures: 3,
			Error: "robots: fetching https://example.com/robots.txt: " + strings.Repeat("x", 300)},
		&fleet.Entry{})
}

// checkRoundTrip fails t unless got is want, field by field, with a
// non-nil Body for a robots.txt that was fetched.
func checkRoundTrip(t *testing.T, what string, got, want *fleet.Entry) {
	t.Helper()
	switch {
	case got == nil:
		t.Errorf("%s: no entry", what)
	case got.Access != want.Access:
		t.Errorf("%s: Access %v, want %v", what, got.Access, want.Access)
	case !bytes.Equal(got.Body, want.Body):
		t.Errorf("%s: a body of %d bytes, want the %d put", what, len(got.Body), len(want.Body))
	case want.Access == fleet.AccessSuccess && got.Body == nil:
		t.Errorf("%s: a nil Body, want the (empty) robots.txt", what)
	case !got.FetchedAt.Equal(want.FetchedAt):
		t.Errorf("%s: FetchedAt %v, want %v", what, got.FetchedAt, want.FetchedAt)
	case !got.Expires.Equal(want.Expires):
		t.Errorf("%s: Expires %v, want %v", what, got.Expires, want.Expires)
	case !got.UnreachableSince.Equal(want.UnreachableSince):
		t.Errorf("%s: UnreachableSince %v, want %v", what, got.UnreachableSince, want.UnreachableSince)
	case got.Failures != want.Failures:
		t.Errorf("%s: Failures %d, want %d", what, got.Failures, want.Failures)
	case got.Error != want.Error:
		t.Errorf("%s: Error %q, want %q", what, got.Error, want.Error)
	}
}

// entryName names the i-th entry of roundTripEntries(files).
func entryName(files []corpusFile, i int, e *fleet.Entry) string {
	if i < len(files) {
		return files[i].name
	}
	return fmt.Sprintf("entry %d (%d-byte body)", i, len(e.Body))
}

// parallel calls f with each index of n, from as many goroutines as there
// are CPUs, and returns when all calls have returned.
func parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				f(i)
			}
		})
	}
	wg.Wait()
}

// TestCodecRoundTripCorpus encodes and decodes every file of the corpus,
// and bodies of every length up to a few KiB: each comes back as it was,
// with the entry's other fields, under a bound of the body's own size.
// Every compressed body is a frame that declares its content size.
func TestCodecRoundTripCorpus(t *testing.T) {
	files := corpus(t)
	entries := roundTripEntries(files)
	var compressedN atomic.Int32
	parallel(len(entries), func(i int) {
		e := entries[i]
		v := encode(e)
		name := entryName(files, i, e)
		if v[len(magic)]&compressed != 0 {
			compressedN.Add(1)
			var h zstd.Header
			if err := h.Decode(frameOf(t, v)); err != nil || !h.HasFCS || h.FrameContentSize != uint64(len(e.Body)) {
				t.Errorf("%s: a frame with content size %v (declared: %v), %v; want %d declared", name, h.FrameContentSize, h.HasFCS, err, len(e.Body))
			}
		}
		got, err := decode(v, len(e.Body))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			return
		}
		checkRoundTrip(t, name, got, e)
	})
	t.Logf("%d entries (%d files of the corpus), %d compressed: all read back", len(entries), len(files), compressedN.Load())
}

// frameOf returns the body field of the encoded entry v: the zstd frame of a
// compressed body.
func frameOf(t testing.TB, v []byte) []byte {
	t.Helper()
	d := reader{b: v[len(magic):]}
	d.byte()
	d.varint()
	d.varint()
	d.varint()
	d.uvarint()
	d.bytes()
	body := d.bytes()
	if d.err != nil || len(d.b) != 0 {
		t.Fatalf("not an encoded entry: %v", d.err)
	}
	return body
}

// withFrame returns the encoding of e with z as its compressed body: a
// value that encode may not write, for decode to read.
func withFrame(e *fleet.Entry, z []byte) []byte {
	head := *e
	head.Body = nil
	v := encode(&head)
	v = v[:len(v)-1] // the body's length, 0
	v[len(magic)] |= compressed
	v = binary.AppendUvarint(v, uint64(len(z)))
	return append(v, z...)
}

// legacyEncoder is the encoder that wrote entries of format "rE\x02"
// before it was set to write single segments: it leaves the content size
// out of frames of fewer than 256 bytes.
var legacyEncoder = sync.OnceValue(func() *zstd.Encoder {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBetterCompression), zstd.WithLowerEncoderMem(true))
	if err != nil {
		panic(err)
	}
	return e
})

// legacyEncode returns e as the encoder before single segments wrote it,
// and whether its frame declares no content size.
func legacyEncode(e *fleet.Entry) (v []byte, noSize bool) {
	if len(e.Body) < minCompress {
		return encode(e), false
	}
	z := legacyEncoder().EncodeAll(e.Body, nil)
	if len(z) >= len(e.Body) {
		return encode(e), false
	}
	var h zstd.Header
	if err := h.Decode(z); err != nil {
		panic(err)
	}
	return withFrame(e, z), !h.HasFCS
}

// TestCodecReadsLegacyFrames: entries that the encoder wrote before it
// wrote single segments, among them the frames without a content size of
// bodies of 64 to 255 bytes, are read back whole, under a bound of the
// body's own size. Only bodies under 1 KiB can be written without their
// size (see codec.go): those are all checked, and one in eight of the
// others.
func TestCodecReadsLegacyFrames(t *testing.T) {
	files := corpus(t)
	entries := roundTripEntries(files)
	var noSize, noSizeCorpus atomic.Int32
	parallel(len(entries), func(i int) {
		e := entries[i]
		if len(e.Body) >= 1<<10 && i%8 != 0 {
			return
		}
		v, ns := legacyEncode(e)
		if ns {
			noSize.Add(1)
			if i < len(files) {
				noSizeCorpus.Add(1)
			}
		}
		got, err := decode(v, len(e.Body))
		if err != nil {
			t.Errorf("%s: %v", entryName(files, i, e), err)
			return
		}
		checkRoundTrip(t, entryName(files, i, e), got, e)
	})
	if noSize.Load() == 0 {
		t.Error("the legacy encoder wrote no frame without a content size: the test checks nothing")
	}
	t.Logf("%d of %d files of the corpus had a frame without a content size (%d entries in all): all read back",
		noSizeCorpus.Load(), len(files), noSize.Load())
}

// TestStoreRoundTripCorpus puts every entry of TestCodecRoundTripCorpus
// into a real Redis and gets it back: each comes back as it was.
func TestStoreRoundTripCorpus(t *testing.T) {
	files := corpus(t)
	entries := roundTripEntries(files)
	addr := redisAddr(t)
	s := newStore(t, newClient(t, addr))
	s.Prefix = testPrefix(t, addr)
	// The largest file of the corpus (1.37 MB, an HTML page) is more
	// than the default bound.
	s.MaxEntrySize = 2 << 20
	// A loaded machine (the race detector, a Cluster) may take longer than
	// DefaultTimeout to answer some of the thousands of commands at once:
	// that would be a failure to test here, not what this test checks.
	s.Timeout = 30 * time.Second
	ctx := context.Background()
	start := time.Now()
	// More goroutines than CPUs, so that some wait for Redis while the
	// others encode and decode.
	const workers = 16
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(entries); i += workers {
				e, origin := entries[i], fmt.Sprintf("https://%d.example", i)
				name := entryName(files, i, e)
				if err := s.Put(ctx, origin, e); err != nil {
					t.Errorf("%s: Put: %v", name, err)
					continue
				}
				got, err := s.Get(ctx, origin)
				if err != nil {
					t.Errorf("%s: Get: %v", name, err)
					continue
				}
				checkRoundTrip(t, name, got, e)
			}
		})
	}
	wg.Wait()
	t.Logf("%d entries put and got back in %v", len(entries), time.Since(start).Round(time.Millisecond))
}

// TestStoreReadsLegacyEntries: an entry that the Store wrote before its
// frames were single segments, with a body of 64 to 255 bytes and a frame
// without its content size, is read from Redis, and a Transport takes it
// instead of fetching.
func TestStoreReadsLegacyEntries(t *testing.T) {
	addr := redisAddr(t)
	body := "User-agent: *\nDisallow: /private\nDisallow: /private-too\nDisallow: /private-three\n"
	v, noSize := legacyEncode(&fleet.Entry{Access: fleet.AccessSuccess, Body: []byte(body),
		FetchedAt: time.Now(), Expires: time.Now().Add(time.Hour)})
	if !noSize {
		t.Fatalf("the %d-byte body's frame declares its size: the test checks nothing", len(body))
	}
	log := &logRecorder{}
	s := newSite(t, "User-agent: *\nDisallow: /\n")
	p := newProcess(t, addr, testPrefix(t, addr), slog.New(log))
	ctx := context.Background()
	p.store.once.Do(p.store.init)
	if err := p.store.client.Set(ctx, p.store.entryKey(s.origin()), v, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if e, err := p.store.Get(ctx, s.origin()); err != nil || e == nil || string(e.Body) != body {
		t.Fatalf("Get = %+v, %v; want the entry", e, err)
	}
	checkVerdicts(t, p.client, s.URL)
	if n := s.fetches.Load(); n != 0 {
		t.Errorf("robots.txt fetched %d times, want 0: the entry was in Redis", n)
	}
	if st := p.tr.Stats(); st.StoreHits != 1 || st.StoreErrors != 0 {
		t.Errorf("StoreHits %d, StoreErrors %d; want 1, 0", st.StoreHits, st.StoreErrors)
	}
	if n := log.count(slog.LevelWarn, ""); n != 0 {
		t.Errorf("%d warnings logged, want none", n)
	}
}
