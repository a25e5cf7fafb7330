package robots

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"
)

// Tests of the robots.txt fetch against bodies and bases that try to make
// the Transport obey rules a site never wrote, or to stop it.

// countReader counts the bytes read from r.
type countReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func TestReadBodyCutLine(t *testing.T) {
	const rules = "User-agent: *\nDisallow: /\nAllow: /public-area/\n"
	allowAt := strings.Index(rules, "Allow:")
	crlf := strings.ReplaceAll(rules, "\n", "\r\n")
	for _, c := range []struct {
		name  string
		body  string
		limit int64
		want  string
	}{
		{"limit mid-line", rules, int64(allowAt + len("Allow: /p")), rules[:allowAt]},
		{"limit at a line end", rules + "Disallow: /x\n", int64(len(rules)), rules},
		{"limit just before a line end", rules, int64(len(rules) - 1), rules[:len(rules)-1]},
		{"limit just before CR LF", crlf, int64(len(crlf) - 2), crlf[:len(crlf)-2]},
		{"limit between CR and LF", crlf, int64(len(crlf) - 1), crlf[:len(crlf)-1]},
		{"CR line ends, limit mid-line", strings.ReplaceAll(rules, "\n", "\r"), int64(allowAt + 3), strings.ReplaceAll(rules[:allowAt], "\n", "\r")},
		{"exactly the limit, no final line end", rules[:len(rules)-1], int64(len(rules) - 1), rules[:len(rules)-1]},
		{"exactly the limit", rules, int64(len(rules)), rules},
		{"shorter than the limit", rules, 1000, rules},
		{"no line end, over the limit", strings.Repeat("Disallow: /", 10), 40, ""},
		{"empty", "", 40, ""},
	} {
		for _, known := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/Content-Length %v", c.name, known), func(t *testing.T) {
				cr := &countReader{r: strings.NewReader(c.body)}
				resp := &http.Response{StatusCode: 200, Body: io.NopCloser(cr), ContentLength: -1, Header: http.Header{}}
				if known {
					resp.ContentLength = int64(len(c.body))
				}
				got, err := readBody(resp, c.limit)
				if err != nil {
					t.Fatalf("readBody: %v", err)
				}
				if string(got) != c.want {
					t.Errorf("readBody = %q, want %q", got, c.want)
				}
				if cap(got)-len(got) > 64 {
					t.Errorf("readBody kept capacity %d for %d bytes", cap(got), len(got))
				}
				if n := cr.n.Load(); n > c.limit+1 {
					t.Errorf("read %d bytes with a limit of %d", n, c.limit)
				}
			})
		}
	}
}

func TestReadBodyShort(t *testing.T) {
	for _, enc := range []string{"", "gzip"} {
		body := "User-agent: *\nDisallow: /private\n"
		hdr := http.Header{}
		if enc != "" {
			body = gzipString(body)
			hdr.Set("Content-Encoding", enc)
		}
		resp := &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)) + 10, Header: hdr}
		if got, err := readBody(resp, DefaultMaxBodySize); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("Content-Encoding %q: readBody of a body shorter than its Content-Length = %q, %v; want io.ErrUnexpectedEOF", enc, got, err)
		}
	}
}

// padTo returns head, then comment lines, then tail, such that the whole is
// n bytes long plus len(tail).
func padTo(head string, n int, tail string) string {
	l := n - len(head)
	rem := l % 100
	if rem < 2 {
		rem += 100
	}
	line := "#" + strings.Repeat("x", 98) + "\n"
	return head + strings.Repeat(line, (l-rem)/100) + "#" + strings.Repeat("x", rem-2) + "\n" + tail
}

func TestCutLineThroughTransport(t *testing.T) {
	const head = "User-agent: *\nDisallow: /\n"
	const allow = "Allow: /public-area/\n"
	for _, c := range []struct {
		name   string
		body   string
		public bool // whether /public-area/x is allowed
	}{
		{"limit cuts the Allow line", padTo(head, DefaultMaxBodySize-len("Allow: /p"), allow+"# more\n"), false},
		{"limit at the end of the Allow line", padTo(head, DefaultMaxBodySize-len(allow), allow+"# more\n"), true},
		{"limit before the Allow line's end", padTo(head, DefaultMaxBodySize-len(allow)+1, allow+"# more\n"), true},
		{"exactly the limit", padTo(head, DefaultMaxBodySize-len(allow)+1, allow[:len(allow)-1]), true},
		{"one byte over the limit", padTo(head, DefaultMaxBodySize-len(allow)+1, allow[:len(allow)-1]+"/"), false},
	} {
		for _, known := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/Content-Length %v", c.name, known), func(t *testing.T) {
				mock := newMock()
				mock.RegisterResponder("GET", exampleRobots, func(req *http.Request) (*http.Response, error) {
					resp := httpmock.NewStringResponse(200, c.body)
					resp.ContentLength = -1
					if known {
						resp.ContentLength = int64(len(c.body))
					}
					return resp, nil
				})
				client := &http.Client{Transport: noDefaultPace(NewTransport(mock, "ExampleBot"))}
				if de := wantRefused(t, client, "https://example.com/private/secret"); de.Rule != "Disallow: /" {
					t.Errorf("/private/secret refused by %q, want Disallow: /", de.Rule)
				}
				if c.public {
					wantAllowed(t, client, "https://example.com/public-area/x")
				} else if de := wantRefused(t, client, "https://example.com/public-area/x"); de.Rule != "Disallow: /" {
					t.Errorf("/public-area/x refused by %q, want Disallow: /", de.Rule)
				}
			})
		}
	}

	t.Run("no line end at all", func(t *testing.T) {
		mock := newMock()
		body := strings.Repeat("Disallow: /", DefaultMaxBodySize/10)
		mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, body))
		client := &http.Client{Transport: noDefaultPace(NewTransport(mock, "ExampleBot"))}
		wantAllowed(t, client, "https://example.com/private") // nothing whole was read: no rules
	})
}

// panicBody is a response body whose Read or Close panics.
type panicBody struct {
	onRead, onClose any // the panic values; nil for none
}

func (b *panicBody) Read(p []byte) (int, error) {
	if b.onRead != nil {
		panic(b.onRead)
	}
	return 0, io.EOF
}

func (b *panicBody) Close() error {
	if b.onClose != nil {
		panic(b.onClose)
	}
	return nil
}

func TestBasePanics(t *testing.T) {
	boom := errors.New("boom")
	for _, c := range []struct {
		name  string
		robot func(req *http.Request) *http.Response // answers /robots.txt, or panics
		value string                                 // the panic value as the error shows it
	}{
		{"RoundTrip", func(*http.Request) *http.Response { panic("kaput") }, "kaput"},
		{"RoundTrip, an error", func(*http.Request) *http.Response { panic(boom) }, "boom"},
		{"RoundTrip, nil pointer", func(req *http.Request) *http.Response {
			var resp *http.Response
			resp.Request = req
			return resp
		}, "runtime error: invalid memory address or nil pointer dereference"},
		{"body Read", func(req *http.Request) *http.Response {
			return &http.Response{StatusCode: 200, ContentLength: -1, Body: &panicBody{onRead: "kaput"}, Request: req}
		}, "kaput"},
		{"body Read and Close", func(req *http.Request) *http.Response {
			return &http.Response{StatusCode: 200, ContentLength: -1, Body: &panicBody{onRead: "kaput", onClose: "again"}, Request: req}
		}, "again"}, // the later panic is the one recovered
		{"body Close", func(req *http.Request) *http.Response {
			return &http.Response{StatusCode: 200, ContentLength: -1, Body: &panicBody{onClose: "kaput"}, Request: req}
		}, "kaput"},
		{"503 body", func(req *http.Request) *http.Response {
			return &http.Response{StatusCode: 503, Body: &panicBody{onRead: "kaput"}, Request: req}
		}, "kaput"},
		{"redirect body", func(req *http.Request) *http.Response {
			return &http.Response{StatusCode: 301, Header: http.Header{"Location": {"/elsewhere"}}, Body: &panicBody{onRead: "kaput"}, Request: req}
		}, "kaput"},
	} {
		for _, deadline := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/deadline %v", c.name, deadline), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var robotsCalls atomic.Int32
					base := rtFunc(func(req *http.Request) (*http.Response, error) {
						if req.URL.Path == "/robots.txt" {
							robotsCalls.Add(1)
							return c.robot(req), nil
						}
						return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
					})
					var logs syncBuffer
					tr := &Transport{Base: base, Agent: "FaultBot", Logger: slog.New(slog.NewTextHandler(&logs, nil))}

					// send sends GET u, with a deadline or not, and returns
					// the refusal, failing unless it came within noHang.
					send := func(u string, deadline bool) *DisallowedError {
						t.Helper()
						ctx := context.Background()
						if deadline {
							var cancel context.CancelFunc
							ctx, cancel = context.WithTimeout(ctx, noHang)
							defer cancel()
						}
						req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
						done := make(chan error, 1)
						go func() {
							resp, err := tr.RoundTrip(req)
							if resp != nil {
								resp.Body.Close()
							}
							done <- err
						}()
						var err error
						select {
						case err = <-done:
						case <-time.After(noHang):
							t.Fatalf("GET %s: no answer within %v", u, noHang)
						}
						de, ok := errors.AsType[*DisallowedError](err)
						if !ok || !errors.Is(err, ErrUnreachable) {
							t.Fatalf("GET %s: %v, want a refusal for an unreachable robots.txt", u, err)
						}
						return de
					}

					de := send("http://example.com/private", deadline)
					want := "robots: Base panicked fetching http://example.com/robots.txt: " + c.value
					if msg := de.Err.Error(); !strings.HasPrefix(msg, want) {
						t.Errorf("Err = %q, want it to begin %q", msg, want)
					}
					if c.value == "boom" && !errors.Is(de, boom) {
						t.Errorf("Err = %v does not wrap the panic's error", de.Err)
					}
					// Later requests to the origin are answered at once,
					// with or without a deadline, from the cached result:
					// no time passes in the bubble.
					for _, d := range []bool{false, true} {
						start := time.Now()
						send("http://example.com/public", d)
						if took := time.Since(start); took != 0 {
							t.Errorf("a later request took %v", took)
						}
					}
					if n := robotsCalls.Load(); n != 1 {
						t.Errorf("robots.txt fetched %d times, want 1", n)
					}
					if st := tr.Stats(); st.FetchUnreachable != 1 {
						t.Errorf("Stats = %+v, want one unreachable fetch", st)
					}
					if l := logs.String(); !strings.Contains(l, "Base panicked") || !strings.Contains(l, "fetch_body_test.go") {
						t.Errorf("log has no record of the panic with its stack:\n%s", l)
					}
				})
			})
		}
	}
}

func TestBasePanicsWithoutLogger(t *testing.T) {
	base := rtFunc(func(req *http.Request) (*http.Response, error) { panic("kaput") })
	tr := &Transport{NoDefaultPace: true, Base: base, Agent: "FaultBot"}
	err := tr.Check(context.Background(), mustURL("http://example.com/"))
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "Base panicked") {
		t.Errorf("Check = %v, want an unreachable refusal that says Base panicked", err)
	}
}

func deflateRaw(s string) string {
	var b bytes.Buffer
	w, _ := flate.NewWriter(&b, flate.DefaultCompression)
	io.WriteString(w, s)
	w.Close()
	return b.String()
}

func zlibString(s string) string {
	var b bytes.Buffer
	w := zlib.NewWriter(&b)
	io.WriteString(w, s)
	w.Close()
	return b.String()
}

// TestContentEncodingNotDecodedByBase runs the fault server behind a base
// that does not decode (DisableCompression): the Transport decodes what it
// can and fails closed on the rest.
func TestContentEncodingNotDecodedByBase(t *testing.T) {
	gz := gzipString(faultRules)
	badCRC := []byte(gz)
	badCRC[len(badCRC)-8] ^= 0xFF
	for _, c := range []struct {
		name string
		hdr  string
		body string
		want outcome
		msg  string // in the refusal, if unreachable
	}{
		{"gzip", "Content-Encoding: gzip\r\n", gz, rules, ""},
		{"x-gzip", "Content-Encoding: x-gzip\r\n", gz, rules, ""},
		{"GZIP", "Content-Encoding: GZIP\r\n", gz, rules, ""},
		{"gzip, identity", "Content-Encoding: gzip, identity\r\n", gz, rules, ""},
		{"identity on its own line", "Content-Encoding: identity\r\nContent-Encoding: gzip\r\n", gz, rules, ""},
		{"deflate, zlib-wrapped", "Content-Encoding: deflate\r\n", zlibString(faultRules), rules, ""},
		{"deflate, raw", "Content-Encoding: deflate\r\n", deflateRaw(faultRules), rules, ""},
		{"identity", "Content-Encoding: identity\r\n", faultRules, rules, ""},
		{"gzip, empty body", "Content-Encoding: gzip\r\n", "", noRules, ""},
		{"deflate, empty body", "Content-Encoding: deflate\r\n", "", noRules, ""},
		{"gzip without its header", "", gz, noRules, ""},
		{"br", "Content-Encoding: br\r\n", "\x1b\x20\x00\xf8\x25\x00", unreachable, "Content-Encoding br: unsupported"},
		{"zstd", "Content-Encoding: zstd\r\n", "\x28\xb5\x2f\xfd", unreachable, "Content-Encoding zstd: unsupported"},
		{"unknown", "Content-Encoding: rot13\r\n", faultRules, unreachable, "unsupported"},
		{"gzip twice", "Content-Encoding: gzip, gzip\r\n", gzipString(gz), unreachable, "unsupported Content-Encoding"},
		{"gzip, corrupt", "Content-Encoding: gzip\r\n", gz[:20] + "garbage", unreachable, "Content-Encoding gzip"},
		{"gzip, cut short", "Content-Encoding: gzip\r\n", gz[:len(gz)-10], unreachable, "Content-Encoding gzip"},
		{"gzip, bad checksum", "Content-Encoding: gzip\r\n", string(badCRC), unreachable, "Content-Encoding gzip"},
		{"gzip, not gzip", "Content-Encoding: gzip\r\n", faultRules, unreachable, "Content-Encoding gzip"},
		{"deflate, corrupt", "Content-Encoding: deflate\r\n", "\xff\xff\xff\xff" + faultRules, unreachable, "Content-Encoding deflate"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := newFaultServer(t, reply(200, c.hdr, c.body))
			base := loopbackBase(nil, nil)
			base.DisableCompression = true
			tr := faultTransport(t, base)
			refusals := checkOrigin(t, tr, srv, "http://"+srv.Addr(), c.want)
			for _, de := range refusals {
				if c.msg != "" && !strings.Contains(de.Error(), c.msg) {
					t.Errorf("refusal %q does not say %q", de.Error(), c.msg)
				}
			}
			srv.Close()
		})
	}
}

// endlessGzip is a gzip body that never ends: a member holding head, then
// the same member of padding again and again. It counts the compressed
// bytes read.
type endlessGzip struct {
	head, pad []byte
	off       int
	read      atomic.Int64
	closed    atomic.Bool
}

func (e *endlessGzip) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		var src []byte
		if e.off < len(e.head) {
			src = e.head[e.off:]
		} else {
			src = e.pad[(e.off-len(e.head))%len(e.pad):]
		}
		k := copy(p[n:], src)
		n += k
		e.off += k
	}
	e.read.Add(int64(n))
	return n, nil
}

func (e *endlessGzip) Close() error {
	e.closed.Store(true)
	return nil
}

func TestGzipBomb(t *testing.T) {
	// Each padding member holds 1 MiB of comment lines in a few KiB. The
	// limit falls inside a line of the padding, so the cut-line rule holds
	// under the decoding too: the pad's "Allow" lines are whole or absent.
	pad := strings.Repeat("# a line of padding\nAllow: /private/ok-but-cut\n", 1<<20/46)
	body := &endlessGzip{head: []byte(gzipString(faultRules)), pad: []byte(gzipString(pad))}
	base := rtFunc(func(req *http.Request) (*http.Response, error) {
		if req.URL.Path == "/robots.txt" {
			return &http.Response{StatusCode: 200, ContentLength: -1, Header: http.Header{"Content-Encoding": {"gzip"}}, Body: body, Request: req}, nil
		}
		return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
	})
	tr := &Transport{NoDefaultPace: true, Base: base, Agent: "FaultBot"}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	err := tr.Check(context.Background(), mustURL("http://example.com/private/x"))
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if de, ok := errors.AsType[*DisallowedError](err); !ok || de.Rule != "Disallow: /private" {
		t.Errorf("Check(/private/x) = %v, want refused by Disallow: /private", err)
	}
	if err := tr.Check(context.Background(), mustURL("http://example.com/private/ok-but-cut")); err != nil {
		t.Errorf("Check(/private/ok-but-cut) = %v, want allowed by the pad's Allow lines", err)
	}
	if n := body.read.Load(); n > 64<<10 {
		t.Errorf("read %d KiB of compressed body for a limit of %d KiB of text", n>>10, DefaultMaxBodySize>>10)
	}
	if !body.closed.Load() {
		t.Errorf("body not closed")
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("%d MiB allocated to read a gzip bomb limited to 500 KiB", alloc>>20)
	}
	t.Logf("read %d KiB compressed, in %v", body.read.Load()>>10, took)
}

// TestGzipCutLine checks that the limit applies to the decoded text, and
// drops the line it cuts there.
func TestGzipCutLine(t *testing.T) {
	const head = "User-agent: *\nDisallow: /\n"
	const allow = "Allow: /public-area/\n"
	for _, c := range []struct {
		name   string
		text   string
		public bool
	}{
		{"limit cuts the Allow line", padTo(head, DefaultMaxBodySize-len("Allow: /p"), allow), false},
		{"limit at the end of the Allow line", padTo(head, DefaultMaxBodySize-len(allow), allow+"# more\n"), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			gz := gzipString(c.text)
			base := rtFunc(func(req *http.Request) (*http.Response, error) {
				if req.URL.Path == "/robots.txt" {
					return &http.Response{StatusCode: 200, ContentLength: int64(len(gz)), Header: http.Header{"Content-Encoding": {"gzip"}},
						Body: io.NopCloser(strings.NewReader(gz)), Request: req}, nil
				}
				return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
			})
			tr := &Transport{NoDefaultPace: true, Base: base, Agent: "FaultBot"}
			if err := tr.Check(context.Background(), mustURL("http://example.com/private")); !errors.Is(err, ErrDisallowed) {
				t.Errorf("Check(/private) = %v, want refused", err)
			}
			err := tr.Check(context.Background(), mustURL("http://example.com/public-area/x"))
			if c.public && err != nil || !c.public && !errors.Is(err, ErrDisallowed) {
				t.Errorf("Check(/public-area/x) = %v, want allowed %v", err, c.public)
			}
		})
	}
}

// panicHandler is a slog.Handler that panics on every record.
type panicHandler struct{}

func (panicHandler) Enabled(context.Context, slog.Level) bool  { return true }
func (panicHandler) Handle(context.Context, slog.Record) error { panic("logger kaput") }
func (h panicHandler) WithAttrs([]slog.Attr) slog.Handler      { return h }
func (h panicHandler) WithGroup(string) slog.Handler           { return h }

// TestBasePanicsWithPanickingLogger: when the Logger panics too, as it logs
// the panic of Base, the flight still ends, the origin is refused as
// unreachable, and the process lives on (the fetch may run on a goroutine of
// the Transport's own, where no caller could recover).
func TestBasePanicsWithPanickingLogger(t *testing.T) {
	for _, where := range []string{"RoundTrip", "body Read"} {
		for _, deadline := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/deadline %v", where, deadline), func(t *testing.T) {
				var robotsCalls atomic.Int32
				base := rtFunc(func(req *http.Request) (*http.Response, error) {
					if req.URL.Path != "/robots.txt" {
						return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
					}
					robotsCalls.Add(1)
					if where == "RoundTrip" {
						panic("kaput")
					}
					return &http.Response{StatusCode: 200, ContentLength: -1, Body: &panicBody{onRead: "kaput"}, Request: req}, nil
				})
				tr := &Transport{NoDefaultPace: true, Base: base, Agent: "FaultBot", Logger: slog.New(panicHandler{})}
				for i := range 3 {
					checkRefusedForPanic(t, tr, "http://example.com/page", deadline, fmt.Sprintf("request %d", i))
				}
				if n := robotsCalls.Load(); n != 1 {
					t.Errorf("robots.txt fetched %d times, want 1", n)
				}
			})
		}
	}
}

// TestDeflateBomb: a deflate body (zlib-wrapped or raw) that decodes to far
// more than the limit is read only as far as the limit needs, in little
// memory, and the line the limit cuts is dropped.
func TestDeflateBomb(t *testing.T) {
	var text strings.Builder
	text.WriteString(faultRules)
	pad := "# a line of padding\nAllow: /private/ok-but-cut\n"
	for text.Len() < 8<<20 {
		text.WriteString(pad)
	}
	for _, c := range []struct {
		name string
		body string
	}{
		{"zlib", zlibString(text.String())},
		{"raw", deflateRaw(text.String())},
	} {
		t.Run(c.name, func(t *testing.T) {
			cr := &countReader{r: strings.NewReader(c.body)}
			base := rtFunc(func(req *http.Request) (*http.Response, error) {
				if req.URL.Path == "/robots.txt" {
					return &http.Response{StatusCode: 200, ContentLength: int64(len(c.body)), Header: http.Header{"Content-Encoding": {"deflate"}},
						Body: io.NopCloser(cr), Request: req}, nil
				}
				return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
			})
			tr := &Transport{NoDefaultPace: true, Base: base, Agent: "FaultBot"}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := tr.Check(context.Background(), mustURL("http://example.com/private/x"))
			runtime.ReadMemStats(&after)
			if de, ok := errors.AsType[*DisallowedError](err); !ok || de.Rule != "Disallow: /private" {
				t.Errorf("Check(/private/x) = %v, want refused by Disallow: /private", err)
			}
			if err := tr.Check(context.Background(), mustURL("http://example.com/private/ok-but-cut")); err != nil {
				t.Errorf("Check(/private/ok-but-cut) = %v, want allowed", err)
			}
			if n := cr.n.Load(); n > 64<<10 {
				t.Errorf("read %d KiB of a %d KiB compressed body for a limit of %d KiB of text", n>>10, len(c.body)>>10, DefaultMaxBodySize>>10)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
				t.Errorf("%d MiB allocated to read a deflate bomb limited to 500 KiB", alloc>>20)
			}
		})
	}
}
