package redisstore

import (
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
	}
}

func TestCodecRoundTrip(t *testing.T) {
	for _, e := range codecEntries() {
		got, err := decode(encode(e))
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
		if e, err := decode(valid[:n]); err == nil {
			t.Errorf("decode of the first %d of %d bytes = %+v, want an error", n, len(valid), e)
		}
	}
	for _, c := range []struct {
		name string
		val  string
	}{
		{"empty", ""},
		{"json", `{"Access":1,"Body":"VXNlci1hZ2VudDogKgo="}`},
		{"other magic", "robots.Entry\x02" + string(valid[len(magic):])},
		{"trailing bytes", string(valid) + "x"},
		{"unknown access", magic + "\x07" + string(valid[len(magic)+1:])},
		{"body of an unavailable entry", string(encode(&robots.Entry{Access: robots.AccessUnavailable, Body: []byte("x")}))},
		{"huge length", magic + "\x01\x00\x00\x00\x00" + "\x00" + "\xff\xff\xff\xff\xff\xff\xff\xff\x7f"},
		{"huge failure count", magic + "\x00\x00\x00\x00" + "\xff\xff\xff\xff\x0f" + "\x00\x00"},
	} {
		if e, err := decode([]byte(c.val)); err == nil {
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
		e, err := decode(b)
		if err != nil {
			return
		}
		// What decodes encodes to a value that decodes the same.
		again, err := decode(encode(e))
		if err != nil || !entriesEqual(again, e) {
			t.Errorf("decode(%q) = %+v, which encodes to %+v, %v", b, e, again, err)
		}
	})
}
