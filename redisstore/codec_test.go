package redisstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/f9014239/robots/fleet"

	"github.com/klauspost/compress/zstd"
)

func codecEntries() []*fleet.Entry {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	return []*fleet.Entry{
		{Access: fleet.AccessSuccess, Body: []byte(disallowPrivate), FetchedAt: t0, Expires: t0.Add(24 * time.Hour)},
		{Access: fleet.AccessSuccess, Body: []byte{}, FetchedAt: t0, Expires: t0.Add(time.Minute)},
		{Access: fleet.AccessUnavailable, FetchedAt: t0, Expires: t0.Add(time.Hour)},
		{Access: fleet.AccessUnreachable, Expires: t0.Add(time.Minute), UnreachableSince: t0, Failures: 1,
			Error: "robots: fetching https://example.com/robots.txt: 503 Service Unavailable"},
		// The last good copy, obeyed while the origin is unreachable.
		{Access: fleet.AccessSuccess, Body: []byte("User-agent: *\nDisallow: /\n"), FetchedAt: t0,
			Expires: t0.Add(48 * time.Hour), UnreachableSince: t0.Add(24 * time.Hour), Failures: 7, Error: "robots: timeout"},
		{}, // the zero Entry
		// A body that compresses.
		{Access: fleet.AccessSuccess, Body: []byte(longRobots), FetchedAt: t0, Expires: t0.Add(24 * time.Hour)},
		// Validators, to revalidate with.
		{Access: fleet.AccessSuccess, Body: []byte(longRobots), FetchedAt: t0, Expires: t0.Add(24 * time.Hour),
			ETag: `W/"5f-1a2b"`, LastModified: "Sun, 01 Mar 2026 11:00:00 GMT"},
		{Access: fleet.AccessSuccess, Body: []byte{}, FetchedAt: t0, Expires: t0.Add(time.Hour), ETag: `"e"`},
	}
}

// longRobots is a robots.txt body of a few KiB that compresses well, as
// real ones do.
var longRobots = func() string {
	var b strings.Builder
	b.WriteString("User-agent: *\nCrawl-delay: 2\n")
	for i := range 200 {
		fmt.Fprintf(&b, "Disallow: /section-%d/private/\nAllow: /section-%d/public/*.html$\n", i, i)
	}
	return b.String()
}()

// TestCodecCompresses checks that a large body is kept compressed, and that
// decode refuses a compressed body larger than its bound, a frame that is
// not zstd, and one that is cut or altered.
func TestCodecCompresses(t *testing.T) {
	e := &fleet.Entry{Access: fleet.AccessSuccess, Body: []byte(longRobots)}
	val := encode(e)
	if val[len(magic)]&compressed == 0 || len(val)*4 > len(longRobots) {
		t.Errorf("a %d-byte body encodes to %d bytes, want it compressed 4 times or more", len(longRobots), len(val))
	}
	if _, err := decode(val, len(longRobots)-1); err == nil {
		t.Errorf("decode with a bound of %d bytes accepted a %d-byte body", len(longRobots)-1, len(longRobots))
	}
	if got, err := decode(val, len(longRobots)); err != nil || string(got.Body) != longRobots {
		t.Errorf("decode with a bound of the body's size: %v", err)
	}
	// A short body is kept as it is.
	if v := encode(&fleet.Entry{Access: fleet.AccessSuccess, Body: []byte(disallowPrivate)}); v[len(magic)]&compressed != 0 {
		t.Error("a short body was compressed")
	}
	// A huge declared size is refused before anything is decoded.
	bomb := encoder().EncodeAll(make([]byte, 8<<20), nil)
	if len(bomb) > DefaultMaxEntrySize {
		t.Fatalf("a zero-filled 8 MiB body compresses to %d bytes", len(bomb))
	}
	v := append([]byte(magic), byte(fleet.AccessSuccess)|compressed, 0, 0, 0, 0, 0)
	v = binary.AppendUvarint(v, uint64(len(bomb)))
	v = append(v, bomb...)
	if _, err := decode(v, DefaultMaxEntrySize); err == nil {
		t.Error("decode accepted a body declared 8 MiB long")
	}
	// Altered frames are errors, never a different body.
	body := val[len(val)-200:]
	for i := range body {
		orig := body[i]
		body[i] ^= 0x5a
		if got, err := decode(val, DefaultMaxEntrySize); err == nil && string(got.Body) != longRobots {
			t.Fatalf("a frame altered at byte %d decoded to a different body", i)
		}
		body[i] = orig
	}
}

func TestCodecRoundTrip(t *testing.T) {
	for _, e := range codecEntries() {
		got, err := decode(encode(e), DefaultMaxEntrySize)
		if err != nil {
			t.Errorf("decode(encode(%+v)): %v", e, err)
			continue
		}
		if !entriesEqual(got, e) {
			t.Errorf("decode(encode(%+v)) = %+v", e, got)
		}
		if e.Access == fleet.AccessSuccess && got.Body == nil {
			t.Errorf("decode(encode(%+v)) has a nil Body, want the (empty) robots.txt", e)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	valid := encode(codecEntries()[4])
	// Every proper prefix of a valid value is an error, not a shorter entry.
	for n := range len(valid) {
		if e, err := decode(valid[:n], DefaultMaxEntrySize); err == nil {
			t.Errorf("decode of the first %d of %d bytes = %+v, want an error", n, len(valid), e)
		}
	}
	// So is every prefix of one with validators, but the one that ends
	// with its body: the entry as an earlier version wrote it, which
	// loses only the revalidation.
	withValidators := encode(codecEntries()[7])
	bodyEnd := len(withValidators) - 2 - len(codecEntries()[7].ETag) - len(codecEntries()[7].LastModified)
	for n := range len(withValidators) {
		e, err := decode(withValidators[:n], DefaultMaxEntrySize)
		if n == bodyEnd {
			if err != nil || e.ETag != "" || string(e.Body) != longRobots {
				t.Errorf("decode of the entry without its validators = %+v, %v", e, err)
			}
		} else if err == nil {
			t.Errorf("decode of the first %d of %d bytes = %+v, want an error", n, len(withValidators), e)
		}
	}
	for _, c := range []struct {
		name string
		val  string
	}{
		{"empty", ""},
		{"validators cut", string(valid) + "\x05\"ab"},
		{"json", `{"Access":1,"Body":"VXNlci1hZ2VudDogKgo="}`},
		{"other magic", "rE\x01" + string(valid[len(magic):])},
		{"version 1", "fleet.Entry\x01" + string(valid[len(magic):])},
		{"trailing bytes", string(valid) + "x"},
		{"unknown access", magic + "\x07" + string(valid[len(magic)+1:])},
		{"body of an unavailable entry", string(encode(&fleet.Entry{Access: fleet.AccessUnavailable, Body: []byte("x")}))},
		{"huge length", magic + "\x01\x00\x00\x00\x00" + "\x00" + "\xff\xff\xff\xff\xff\xff\xff\xff\x7f"},
		{"huge failure count", magic + "\x00\x00\x00\x00" + "\xff\xff\xff\xff\x0f" + "\x00\x00"},
	} {
		if e, err := decode([]byte(c.val), DefaultMaxEntrySize); err == nil {
			t.Errorf("%s: decode = %+v, want an error", c.name, e)
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, e := range codecEntries() {
		f.Add(encode(e))
	}
	f.Add([]byte(magic))
	f.Add([]byte(strings.Repeat("\xff", 40)))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decode(b, 1<<16)
		if err != nil {
			return
		}
		// What decodes encodes to a value that decodes the same.
		again, err := decode(encode(e), DefaultMaxEntrySize)
		if err != nil || !entriesEqual(again, e) {
			t.Errorf("decode(%q) = %+v, which encodes to %+v, %v", b, e, again, err)
		}
	})
}

// TestDecodeBadFrames: a value of a later format version, a frame cut
// short, one that declares more than it holds, and zstd bombs (a small
// frame that expands far past the bound, with and without a declared size)
// are each an error that says what is wrong, never a panic, and cost no
// more memory than about the bound.
func TestDecodeBadFrames(t *testing.T) {
	e := &fleet.Entry{Access: fleet.AccessSuccess, FetchedAt: time.Unix(1, 0), Expires: time.Unix(2, 0)}
	body200 := []byte(longRobots[:200])
	e.Body = body200
	v200 := encode(e)
	z200 := frameOf(t, v200)
	if v200[len(magic)]&compressed == 0 || z200[4]&0x20 == 0 || z200[5] != 200 {
		t.Fatalf("a 200-byte body: frame % x, want a single segment that declares 200 bytes", z200[:8])
	}

	// A bomb: 16 MiB of zeros, as a frame that declares its size (a
	// single segment) and as one that does not (a stream).
	const bombSize = 16 << 20
	zeros := make([]byte, bombSize)
	sized := encoder().EncodeAll(zeros, nil)
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		t.Fatal(err)
	}
	w.Write(zeros)
	w.Close()
	unsized := buf.Bytes()
	var h zstd.Header
	if err := h.Decode(unsized); err != nil || h.HasFCS {
		t.Fatalf("the streamed bomb's header: %+v, %v; want no content size", h, err)
	}
	if len(sized) > 64<<10 || len(unsized) > 64<<10 {
		t.Fatalf("bombs of %d and %d bytes, want small ones", len(sized), len(unsized))
	}

	declared := func(n byte) []byte { // z200 declaring n bytes
		z := bytes.Clone(z200)
		z[5] = n
		return z
	}
	for _, c := range []struct {
		name    string
		val     []byte
		maxBody int
		want    string // in the error
	}{
		{"later version", append([]byte("rE\x03"), v200[len(magic):]...), DefaultMaxEntrySize, "format version 3; this Store reads version 2"},
		{"version 1", append([]byte("fleet.Entry\x01"), v200[len(magic):]...), DefaultMaxEntrySize, "format version 1"},
		{"frame cut in its header", withFrame(e, z200[:5]), DefaultMaxEntrySize, "compressed body"},
		{"frame cut in its block", withFrame(e, z200[:len(z200)/2]), DefaultMaxEntrySize, "compressed body"},
		{"frame without its checksum", withFrame(e, z200[:len(z200)-4]), DefaultMaxEntrySize, "compressed body"},
		{"frame declares more than it holds", withFrame(e, declared(250)), DefaultMaxEntrySize, "compressed body"},
		{"frame declares less than it holds", withFrame(e, declared(100)), DefaultMaxEntrySize, "compressed body"},
		{"frame declares nothing", withFrame(e, declared(0)), DefaultMaxEntrySize, "declared empty"},
		{"frame declares more than the bound", v200, 199, "more than 199"},
		{"skippable frame", withFrame(e, []byte("\x50\x2a\x4d\x18\x04\x00\x00\x00abcd")), DefaultMaxEntrySize, "skippable"},
		{"bomb with its size", withFrame(e, sized), DefaultMaxEntrySize, fmt.Sprintf("compressed body of %d bytes, more than %d", bombSize, DefaultMaxEntrySize)},
		{"bomb without its size", withFrame(e, unsized), DefaultMaxEntrySize, fmt.Sprintf("compressed body of more than %d bytes", DefaultMaxEntrySize)},
		{"bomb without its size, small bound", withFrame(e, unsized), 1000, "compressed body of more than 1000 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got *fleet.Entry
			var err error
			allocated := allocatedBytes(func() { got, err = decode(c.val, c.maxBody) })
			if err == nil {
				t.Fatalf("decode = %+v, want an error", got)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("decode: %v; want an error that says %q", err, c.want)
			}
			// Each try of the frame without a size allocates its
			// buffer, 1 + 1/8 + 1/64 ... of the bound in all, and
			// the last may grow once, to twice the bound, as the
			// decoder writes a block past its capacity.
			if limit := uint64(4*c.maxBody + 1<<20); allocated > limit {
				t.Errorf("decode allocated %d bytes, want at most %d", allocated, limit)
			}
		})
	}
	// The bomb without a size costs a few allocations, not one per KiB.
	val := withFrame(e, unsized)
	if n := testing.AllocsPerRun(5, func() { decode(val, DefaultMaxEntrySize) }); n > 50 {
		t.Errorf("decoding the bomb without its size: %v allocations, want at most 50", n)
	}
}

// allocatedBytes returns the bytes that the heap allocated while f ran.
func allocatedBytes(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
