package redisstore

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/f9014239/robots"
)

func codecEntries() []*robots.Entry {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	return []*robots.Entry{
		{Access: robots.AccessSuccess, Body: []byte(disallowPrivate), FetchedAt: t0, Expires: t0.Add(24 * time.Hour)},
		{Access: robots.AccessSuccess, Body: []byte{}, FetchedAt: t0, Expires: t0.Add(time.Minute)},
		{Access: robots.AccessUnavailable, FetchedAt: t0, Expires: t0.Add(time.Hour)},
		{Access: robots.AccessUnreachable, Expires: t0.Add(time.Minute), UnreachableSince: t0, Failures: 1,
			Error: "robots: fetching https://example.com/robots.txt: 503 Service Unavailable"},
		// The last good copy, obeyed while the origin is unreachable.
		{Access: robots.AccessSuccess, Body: []byte("User-agent: *\nDisallow: /\n"), FetchedAt: t0,
			Expires: t0.Add(48 * time.Hour), UnreachableSince: t0.Add(24 * time.Hour), Failures: 7, Error: "robots: timeout"},
		{}, // the zero Entry
		// A body that compresses.
		{Access: robots.AccessSuccess, Body: []byte(longRobots), FetchedAt: t0, Expires: t0.Add(24 * time.Hour)},
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
	e := &robots.Entry{Access: robots.AccessSuccess, Body: []byte(longRobots)}
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
	if v := encode(&robots.Entry{Access: robots.AccessSuccess, Body: []byte(disallowPrivate)}); v[len(magic)]&compressed != 0 {
		t.Error("a short body was compressed")
	}
	// A huge declared size is refused before anything is decoded.
	bomb := encoder().EncodeAll(make([]byte, 8<<20), nil)
	if len(bomb) > DefaultMaxEntrySize {
		t.Fatalf("a zero-filled 8 MiB body compresses to %d bytes", len(bomb))
	}
	v := append([]byte(magic), byte(robots.AccessSuccess)|compressed, 0, 0, 0, 0, 0)
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
		if e.Access == robots.AccessSuccess && got.Body == nil {
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
	for _, c := range []struct {
		name string
		val  string
	}{
		{"empty", ""},
		{"json", `{"Access":1,"Body":"VXNlci1hZ2VudDogKgo="}`},
		{"other magic", "rE\x01" + string(valid[len(magic):])},
		{"version 1", "robots.Entry\x01" + string(valid[len(magic):])},
		{"trailing bytes", string(valid) + "x"},
		{"unknown access", magic + "\x07" + string(valid[len(magic)+1:])},
		{"body of an unavailable entry", string(encode(&robots.Entry{Access: robots.AccessUnavailable, Body: []byte("x")}))},
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
