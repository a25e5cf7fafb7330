package robots

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/f9014239/robots/fleet"

	"go.uber.org/goleak"
)

// The fault suite runs the Transport against real servers on loopback that
// misbehave, and checks that each fault gets the verdict of RFC 9309 §2.3.1
// within noHang, that no refused request reaches the server, and that no
// goroutine outlives the test.

const (
	faultRules = "User-agent: *\nDisallow: /private\n"
	// faultTimeout is the Transport.FetchTimeout of the cases whose slow
	// server the timeout is to cut, short to keep the suite quick.
	faultTimeout = 500 * time.Millisecond
	// slowOK is the FetchTimeout of every other case: there slow is not
	// the fault, and a loaded machine can take more than faultTimeout to
	// answer on loopback (a TLS handshake under the race detector, say).
	slowOK = noHang / 2
)

// faultTransport returns a Transport with a fetch timeout of slowOK over a
// loopback-only base, and a cleanup that closes the base's idle
// connections and then checks that no goroutine started since is left.
func faultTransport(t *testing.T, base *http.Transport) *Transport {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		base.CloseIdleConnections()
		goleak.VerifyNone(t, ignore)
	})
	return &Transport{NoDefaultPace: true, Base: base, Agent: "FaultBot", FetchTimeout: slowOK}
}

// outcome is what a fault must lead to: the verdicts for /private and
// /public, and the access result the fetch is counted as.
type outcome struct {
	private, public verdict
	access          fleet.Access
}

var (
	rules       = outcome{refusedRule, allowed, fleet.AccessSuccess}           // 2xx: the body's rules decide
	noRules     = outcome{allowed, allowed, fleet.AccessSuccess}               // 2xx with nothing usable in it
	unavailable = outcome{allowed, allowed, fleet.AccessUnavailable}           // 4xx, too many redirects
	unreachable = outcome{refusedWhole, refusedWhole, fleet.AccessUnreachable} // 429, 5xx, network
)

// checkOrigin sends GET origin/private and origin/public through tr and
// checks the verdicts, the server's counters (one robots.txt fetch, no
// refused page requested) and the Transport's fetch counters.
func checkOrigin(t *testing.T, tr *Transport, srv *faultServer, origin string, want outcome) []*DisallowedError {
	t.Helper()
	var refusals []*DisallowedError
	for _, p := range []struct {
		path string
		want verdict
	}{{"/private", want.private}, {"/public", want.public}} {
		before := srv.Hits(p.path)
		got, de, took := decideWithin(t, tr, origin+p.path)
		if got != p.want {
			t.Errorf("GET %s%s = %v (%v) after %v, want %v", origin, p.path, got, de, took.Round(time.Millisecond), p.want)
		}
		if de != nil {
			refusals = append(refusals, de)
			if de.Rule != "" && de.Rule != "Disallow: /private" {
				t.Errorf("GET %s%s refused by %q, want Disallow: /private", origin, p.path, de.Rule)
			}
		}
		sent := srv.Hits(p.path) - before
		if got == allowed && sent != 1 || got != allowed && sent != 0 {
			t.Errorf("GET %s%s was %v but the server saw it %d times", origin, p.path, got, sent)
		}
	}
	st := tr.Stats()
	if n := [...]uint64{st.FetchUnreachable, st.FetchSuccess, st.FetchUnavailable}[want.access]; n != 1 {
		t.Errorf("Stats = %+v, want one %v fetch", st, want.access)
	}
	return refusals
}

func TestFaultyServerVerdicts(t *testing.T) {
	rulesResp := func(hdr string) string {
		return fmt.Sprintf("HTTP/1.1 200 OK\r\n%sContent-Length: %d\r\n\r\n%s", hdr, len(faultRules), faultRules)
	}
	chunked := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	chunk := func(s string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(s), s) }
	garbage := make([]byte, 4096)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}
	utf16le := []byte{0xFF, 0xFE}
	for _, r := range utf16.Encode([]rune(faultRules)) {
		utf16le = append(utf16le, byte(r), byte(r>>8))
	}

	cases := []struct {
		name string
		h    faultHandler
		want outcome
		err  error // if set, the refusal's Err matches it
	}{
		// The well-behaved results, as a baseline.
		{"200", reply(200, "", faultRules), rules, nil},
		{"200 chunked", raw(chunked + chunk(faultRules[:10]) + chunk(faultRules[10:]) + "0\r\n\r\n"), rules, nil},
		{"404", reply(404, "", "User-agent: *\nDisallow: /\n"), unavailable, nil},
		{"403", reply(403, "", ""), unavailable, nil},
		{"410", reply(410, "", ""), unavailable, nil},
		{"429", reply(429, "", faultRules), unreachable, nil},
		{"500", reply(500, "", faultRules), unreachable, nil},
		{"503", reply(503, "Retry-After: 120\r\n", ""), unreachable, nil},
		{"status 600", raw("HTTP/1.1 600 Whatever\r\nContent-Length: 0\r\n\r\n"), unreachable, nil},
		{"status 999 with rules", raw("HTTP/1.1 999 Nine\r\n" + rulesResp("")[len("HTTP/1.1 200 OK\r\n"):]), unreachable, nil},

		// Slow servers: each is cut by FetchTimeout.
		{"never answers", stall(""), unreachable, context.DeadlineExceeded},
		{"headers trickle", trickle(rulesResp(""), 20*time.Millisecond), unreachable, context.DeadlineExceeded},
		{"status line only", stall("HTTP/1.1 200 OK\r\n"), unreachable, context.DeadlineExceeded},
		{"body trickles", func(c net.Conn, r *http.Request, stop <-chan struct{}) {
			head := rulesResp("")
			io.WriteString(c, head[:len(head)-len(faultRules)])
			trickle(faultRules, 30*time.Millisecond)(c, r, stop)
		}, unreachable, context.DeadlineExceeded},
		{"one byte per segment", trickle(rulesResp(""), 0), rules, nil},
		{"1 GB Content-Length, held open", stall("HTTP/1.1 200 OK\r\nContent-Length: 1073741824\r\n\r\n" + faultRules), unreachable, context.DeadlineExceeded},

		// Connections that break.
		{"closed before answering", raw(""), unreachable, nil},
		{"reset before answering", reset(""), unreachable, nil},
		{"closed mid-body", raw("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + faultRules), unreachable, io.ErrUnexpectedEOF},
		{"reset mid-body", reset("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + faultRules), unreachable, nil},
		{"1 GB Content-Length, then closed", raw("HTTP/1.1 200 OK\r\nContent-Length: 1073741824\r\n\r\n" + faultRules), unreachable, io.ErrUnexpectedEOF},
		{"truncated chunked body", raw(chunked + chunk(faultRules)), unreachable, io.ErrUnexpectedEOF},
		{"chunked, reset mid-chunk", reset(chunked + "100\r\n" + faultRules), unreachable, nil},
		{"bad chunk size", raw(chunked + "zz\r\n" + faultRules + "\r\n0\r\n\r\n"), unreachable, nil},
		{"chunk longer than its size", raw(chunked + "3\r\n" + faultRules + "\r\n0\r\n\r\n"), unreachable, nil},

		// Responses that are not HTTP.
		{"invalid status line", raw("HTTP/1.1 two hundred OK\r\nContent-Length: 0\r\n\r\n"), unreachable, nil},
		{"no status line (HTTP/0.9)", raw(faultRules), unreachable, nil},
		{"another protocol", raw("SSH-2.0-OpenSSH_9.6\r\n"), unreachable, nil},
		{"malformed header", raw("HTTP/1.1 200 OK\r\nthis is no header\r\n\r\n" + faultRules), unreachable, nil},
		{"conflicting Content-Length", raw("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 33\r\n\r\n" + faultRules), unreachable, nil},
		{"negative Content-Length", raw("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n" + faultRules), unreachable, nil},

		// Bodies that are not robots.txt: what can be parsed is, the rest
		// is ignored (RFC 9309 §2.6).
		{"Content-Length shorter than body", raw("HTTP/1.1 200 OK\r\nContent-Length: 14\r\nConnection: close\r\n\r\n" + faultRules), noRules, nil},
		{"gzip, Content-Encoding set", reply(200, "Content-Encoding: gzip\r\n", gzipString(faultRules)), rules, nil},
		{"gzip, no Content-Encoding", reply(200, "", gzipString(faultRules)), noRules, nil},
		{"gzip, Content-Encoding set, corrupt", reply(200, "Content-Encoding: gzip\r\n", gzipString(faultRules)[:20]+"garbage"), unreachable, nil},
		{"HTML page", reply(200, "Content-Type: text/html\r\n", "<!DOCTYPE html><html><head><title>Not Found</title></head><body><h1>Sorry</h1></body></html>"), noRules, nil},
		{"HTML around rules", reply(200, "Content-Type: text/html\r\n", "<html><body><pre>\n"+faultRules+"</pre></body></html>\n"), rules, nil},
		{"binary garbage", reply(200, "Content-Type: application/octet-stream\r\n", string(garbage)), noRules, nil},
		{"UTF-16LE with BOM", reply(200, "", string(utf16le)), noRules, nil},
		{"UTF-8 BOM", reply(200, "", "\xEF\xBB\xBF"+faultRules), rules, nil},
		{"CR line ends", reply(200, "", strings.ReplaceAll(faultRules, "\n", "\r")), rules, nil},
		{"NUL bytes", reply(200, "", "User-agent: *\n\x00\x00\nDisallow: /private\n\x00"), rules, nil},
		{"NUL bytes before the group", reply(200, "", "\x00\x00"+faultRules), noRules, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newFaultServer(t, c.h)
			tr := faultTransport(t, loopbackBase(nil, nil))
			if c.err == context.DeadlineExceeded {
				tr.FetchTimeout = faultTimeout
			}
			refusals := checkOrigin(t, tr, srv, "http://"+srv.Addr(), c.want)
			if n := srv.Hits("/robots.txt"); n != 1 {
				t.Errorf("robots.txt fetched %d times, want 1", n)
			}
			for _, de := range refusals {
				if c.err != nil && !errors.Is(de, c.err) {
					t.Errorf("refusal %v does not match %v", de, c.err)
				}
			}
			srv.Close() // ends stalled handlers before the leak check
		})
	}
}

func gzipString(s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	io.WriteString(zw, s)
	zw.Close()
	return b.String()
}

// TestFaultEndlessBody serves bodies that never end, and checks that the
// Transport reads the first 500 KiB, obeys the rules in it, ignores a rule
// past it, and hangs up at once: the server's writes fail within noHang.
// The memory allocated meanwhile is bounded by the size limit, not by what
// the server sends or claims.
func TestFaultEndlessBody(t *testing.T) {
	for _, c := range []struct {
		name string
		hdr  string
		gzip bool
	}{
		{"no length", "", false},
		{"1 GB Content-Length", "Content-Length: 1073741824\r\n", false},
		{"chunked", "Transfer-Encoding: chunked\r\n", false},
		{"gzip bomb", "Content-Encoding: gzip\r\n", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var sent atomic.Int64
			hungUp := make(chan struct{})
			srv := newFaultServer(t, func(conn net.Conn, _ *http.Request, stop <-chan struct{}) {
				defer close(hungUp)
				io.WriteString(conn, "HTTP/1.1 200 OK\r\n"+c.hdr+"Connection: close\r\n\r\n")
				var w io.Writer = &countWriter{conn, &sent}
				if strings.Contains(c.hdr, "chunked") {
					w = &chunkWriter{w}
				}
				// A gzip stream may hold many members, read as one
				// body: each piece is compressed once, sent many times.
				rules, late := faultRules, "Disallow: /late\n"
				pad := strings.Repeat("# this line pads the file\n", 1000)
				padLen := len(pad) // uncompressed
				if c.gzip {
					rules, late, pad = gzipString(rules), gzipString(late), gzipString(pad)
				}
				if _, err := io.WriteString(w, rules); err != nil {
					return
				}
				for n := 0; ; n += padLen {
					if n > DefaultMaxBodySize+100<<10 && n < DefaultMaxBodySize+200<<10 {
						if _, err := io.WriteString(w, late); err != nil {
							return
						}
					}
					if _, err := io.WriteString(w, pad); err != nil {
						return
					}
					select {
					case <-stop:
						return
					default:
					}
				}
			})
			tr := faultTransport(t, loopbackBase(nil, nil))
			tr.FetchTimeout = noHang / 2 // the size limit, not the timeout, must end the read
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			checkOrigin(t, tr, srv, "http://"+srv.Addr(), rules)
			if v, de, _ := decideWithin(t, tr, "http://"+srv.Addr()+"/late"); v != allowed {
				t.Errorf("GET /late = %v (%v); its rule lies past the size limit and must be ignored", v, de)
			}
			runtime.ReadMemStats(&after)
			select {
			case <-hungUp:
			case <-time.After(noHang):
				t.Fatalf("the server was still writing %v after the verdict (%d bytes sent)", noHang, sent.Load())
			}
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("server sent %d KiB before the Transport hung up; %d KiB allocated meanwhile", sent.Load()>>10, alloc>>10)
			if alloc > 64<<20 {
				t.Errorf("%d MiB allocated to read a robots.txt limited to 500 KiB", alloc>>20)
			}
			srv.Close()
		})
	}
}

type countWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

type chunkWriter struct{ w io.Writer }

func (c *chunkWriter) Write(p []byte) (int, error) {
	if _, err := fmt.Fprintf(c.w, "%x\r\n%s\r\n", len(p), p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// TestFaultRedirects follows redirect chains over several host names, all
// served by one loopback server.
func TestFaultRedirects(t *testing.T) {
	redirect := func(c net.Conn, loc string) {
		fmt.Fprintf(c, "HTTP/1.1 301 Moved Permanently\r\nLocation: %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", loc)
	}
	srv := newFaultServer(t, func(c net.Conn, req *http.Request, stop <-chan struct{}) {
		host, _, _ := strings.Cut(req.Host, ":")
		p := req.URL.Path
		switch host {
		case "loop.test": // /robots.txt → /a → /robots.txt → …
			if p == "/robots.txt" {
				redirect(c, "/a")
			} else {
				redirect(c, "http://loop.test/robots.txt")
			}
		case "five.test", "six.test": // n redirects, then the rules
			n := 5
			if host == "six.test" {
				n = 6
			}
			hop := 0
			fmt.Sscanf(p, "/r%d", &hop)
			if hop < n {
				redirect(c, fmt.Sprintf("/r%d", hop+1))
			} else {
				reply(200, "", faultRules)(c, req, stop)
			}
		case "cross.test": // to another host, whose file differs
			redirect(c, "http://other.test/robots.txt")
		case "other.test":
			reply(200, "", "User-agent: *\nDisallow: /public\n")(c, req, stop)
		case "relative.test":
			redirect(c, "//other.test/robots.txt")
		case "dns.test":
			redirect(c, "http://robots-fault.invalid/robots.txt")
		case "tls.test": // https to a server that speaks plain HTTP
			redirect(c, "https://tls.test/robots.txt")
		default:
			for scheme, loc := range nonHTTPRedirects {
				if host == scheme+".test" {
					redirect(c, loc)
				}
			}
		}
	})
	hosts := map[string]string{}
	for _, h := range []string{"loop", "five", "six", "cross", "other", "relative", "dns", "tls"} {
		hosts[h+".test:80"] = srv.Addr()
	}
	hosts["tls.test:443"] = srv.Addr()
	for scheme := range nonHTTPRedirects {
		hosts[scheme+".test:80"] = srv.Addr()
	}
	base := loopbackBase(hosts, nil)

	for _, c := range []struct {
		host  string
		want  outcome
		fetch int // requests for robots.txt and its hops
	}{
		{"loop", unavailable, maxRedirects + 1},
		{"five", rules, 6},
		{"six", unavailable, 6},
		{"cross", rules, 2}, // the rules of other.test govern cross.test
		{"relative", rules, 2},
		{"dns", unreachable, 1},
		{"tls", unreachable, 1},
	} {
		t.Run(c.host, func(t *testing.T) {
			tr := faultTransport(t, base)
			before := srv.hitsNot(isPage)
			if c.host == "cross" || c.host == "relative" {
				// other.test disallows /public, not /private.
				want := outcome{allowed, refusedRule, fleet.AccessSuccess}
				checkOriginRules(t, tr, srv, "http://"+c.host+".test", want, "Disallow: /public")
			} else {
				checkOrigin(t, tr, srv, "http://"+c.host+".test", c.want)
			}
			if n := srv.hitsNot(isPage) - before; n != c.fetch {
				t.Errorf("%d requests for robots.txt and its redirects, want %d", n, c.fetch)
			}
		})
	}
	if n := srv.HostHits("six.test", "/r6"); n != 0 {
		t.Errorf("the 6th redirect was followed %d times", n)
	}

	t.Run("other hosts keep their own file", func(t *testing.T) {
		tr := faultTransport(t, base)
		checkOriginRules(t, tr, srv, "http://cross.test", outcome{allowed, refusedRule, fleet.AccessSuccess}, "Disallow: /public")
		// other.test was reached only as a redirect target: its own
		// origin is fetched on its first use, and obeys its own file.
		before := srv.HostHits("other.test", "/robots.txt")
		if v, de, _ := decideWithin(t, tr, "http://other.test/public"); v != refusedRule {
			t.Errorf("GET other.test/public = %v (%v)", v, de)
		}
		if n := srv.HostHits("other.test", "/robots.txt") - before; n != 1 {
			t.Errorf("other.test/robots.txt fetched %d times for its own origin, want 1", n)
		}
	})

	t.Run("not HTTP", func(t *testing.T) {
		// A redirect to a scheme the fetch does not follow ends the chain
		// without a file, like a 404. data: would disallow all if read.
		for scheme := range nonHTTPRedirects {
			tr := faultTransport(t, base)
			before := srv.hitsNot(isPage)
			checkOrigin(t, tr, srv, "http://"+scheme+".test", unavailable)
			if n := srv.hitsNot(isPage) - before; n != 1 {
				t.Errorf("%s: %d requests, want only the first", scheme, n)
			}
		}
	})
}

var nonHTTPRedirects = map[string]string{
	"ftp":        "ftp://127.0.0.1/robots.txt",
	"file":       "file:///etc/passwd",
	"data":       "data:text/plain,User-agent:%20*%0ADisallow:%20/",
	"javascript": "javascript:location='/robots.txt'",
	"mailto":     "mailto:webmaster@example.com",
	"gopher":     "gopher://127.0.0.1:70/0/robots.txt",
	"empty":      "",
	"garbage":    "http://[::1%zz]/robots.txt",
}

// hitsNot returns how many requests the server has read for paths where
// skip is false.
func (s *faultServer) hitsNot(skip func(string) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, v := range s.hits {
		if _, p, _ := strings.Cut(k, " "); !skip(p) {
			n += v
		}
	}
	return n
}

// checkOriginRules is checkOrigin for a file whose deciding rule is rule.
func checkOriginRules(t *testing.T, tr *Transport, srv *faultServer, origin string, want outcome, rule string) {
	t.Helper()
	for _, p := range []struct {
		path string
		want verdict
	}{{"/private", want.private}, {"/public", want.public}} {
		before := srv.Hits(p.path)
		got, de, _ := decideWithin(t, tr, origin+p.path)
		if got != p.want || de != nil && de.Rule != rule {
			t.Errorf("GET %s%s = %v (%v), want %v by %q", origin, p.path, got, de, p.want, rule)
		}
		if sent := srv.Hits(p.path) - before; got == allowed && sent != 1 || got != allowed && sent != 0 {
			t.Errorf("GET %s%s was %v but the server saw it %d times", origin, p.path, got, sent)
		}
	}
}

// TestFaultDNS checks a host that does not resolve. The base never looks
// it up: .invalid names never resolve (RFC 6761), and the base fails every
// name that is not mapped to loopback as a lookup that found nothing, so no
// query leaves the machine.
func TestFaultDNS(t *testing.T) {
	tr := faultTransport(t, loopbackBase(nil, nil))
	for _, p := range []string{"/private", "/public"} {
		v, de, _ := decideWithin(t, tr, "http://robots-fault.invalid"+p)
		if v != refusedWhole {
			t.Fatalf("GET %s = %v (%v), want refused whole", p, v, de)
		}
		if dnsErr, ok := errors.AsType[*net.DNSError](de); !ok || !dnsErr.IsNotFound {
			t.Errorf("refusal %v does not carry the DNS error", de)
		}
	}
	if st := tr.Stats(); st.FetchUnreachable != 1 {
		t.Errorf("Stats = %+v, want one unreachable fetch", st)
	}
}

// TestFaultTLS checks TLS handshakes that fail: a certificate the client
// does not trust, a server that does not speak TLS, and one that accepts
// the connection and says nothing.
func TestFaultTLS(t *testing.T) {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, faultRules)
			return
		}
		io.WriteString(w, "page")
	}))
	defer ts.Close()
	ts.Config.ErrorLog = quietLog() // the handshake failures are the point

	t.Run("untrusted certificate", func(t *testing.T) {
		tr := faultTransport(t, loopbackBase(nil, nil)) // system roots only
		for _, p := range []string{"/private", "/public"} {
			v, de, _ := decideWithin(t, tr, ts.URL+p)
			if v != refusedWhole {
				t.Fatalf("GET %s = %v (%v), want refused whole", p, v, de)
			}
			if _, ok := errors.AsType[*tls.CertificateVerificationError](de); !ok {
				t.Errorf("refusal %v does not carry the certificate error", de)
			}
		}
	})

	t.Run("trusted certificate", func(t *testing.T) {
		roots := x509.NewCertPool()
		roots.AddCert(ts.Certificate())
		tr := faultTransport(t, loopbackBase(nil, &tls.Config{RootCAs: roots}))
		for p, want := range map[string]verdict{"/private": refusedRule, "/public": allowed} {
			if v, de, _ := decideWithin(t, tr, ts.URL+p); v != want {
				t.Errorf("GET %s = %v (%v), want %v", p, v, de, want)
			}
		}
	})

	t.Run("plain HTTP server", func(t *testing.T) {
		srv := newFaultServer(t, reply(200, "", faultRules))
		tr := faultTransport(t, loopbackBase(nil, nil))
		for _, p := range []string{"/private", "/public"} {
			if v, de, _ := decideWithin(t, tr, "https://"+srv.Addr()+p); v != refusedWhole {
				t.Errorf("GET %s = %v (%v), want refused whole", p, v, de)
			}
		}
		if n := srv.hitsNot(func(string) bool { return false }); n != 0 {
			t.Errorf("a plain server read %d HTTP requests sent over TLS", n)
		}
		srv.Close()
	})

	t.Run("silent server", func(t *testing.T) {
		// The server's cleanup runs first, and closes the connection
		// that net/http's dial may still hold in its handshake, before
		// the check for goroutines left over.
		tr := faultTransport(t, loopbackBase(nil, nil))
		tr.FetchTimeout = faultTimeout
		addr := silentServer(t)
		v, de, _ := decideWithin(t, tr, "https://"+addr+"/private")
		if v != refusedWhole || !errors.Is(de, context.DeadlineExceeded) {
			t.Errorf("GET = %v (%v), want refused whole by the fetch timeout", v, de)
		}
	})
}

// silentServer accepts connections on 127.0.0.1 and never reads or writes.
// It closes them when the test ends.
func silentServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

// TestFaultRetryAfter checks that 429 and 503 refuse the origin whole, that
// the refusal is cached (no new fetch for a while), and how long: the back-off,
// or longer if Retry-After asks for it, up to DefaultTTL.
func TestFaultRetryAfter(t *testing.T) {
	httpDate := time.Now().Add(3 * time.Hour).UTC().Format(http.TimeFormat)
	for _, c := range []struct {
		status     int
		retryAfter string
		want       time.Duration
	}{
		{429, "", retryMin},
		{503, "", retryMin},
		{429, "7200", 2 * time.Hour},
		{503, "7200", 2 * time.Hour},
		{503, httpDate, 3 * time.Hour},
		{503, "10", retryMin},                     // shorter than the back-off: the back-off
		{429, "99999999999", DefaultTTL},          // capped
		{503, "9223372036854775808", DefaultTTL},  // past int64 seconds: capped too
		{429, "99999999999999999999", DefaultTTL}, // 20 digits
		{503, "soon", retryMin},                   // malformed: ignored
		{503, "-5", retryMin},
	} {
		name := fmt.Sprintf("%d %q", c.status, c.retryAfter)
		if c.retryAfter == httpDate {
			name = fmt.Sprint(c.status, " HTTP-date")
		}
		t.Run(name, func(t *testing.T) {
			hdr := ""
			if c.retryAfter != "" {
				hdr = "Retry-After: " + c.retryAfter + "\r\n"
			}
			srv := newFaultServer(t, reply(c.status, hdr, faultRules))
			tr := faultTransport(t, loopbackBase(nil, nil))
			store := &fleet.MemoryStore{}
			tr.Store = store
			origin := "http://" + srv.Addr()
			start := time.Now()
			refusals := checkOrigin(t, tr, srv, origin, unreachable)
			for _, de := range refusals {
				if !strings.Contains(de.Error(), fmt.Sprint(c.status)) {
					t.Errorf("refusal %q does not name the status", de.Error())
				}
			}
			checkOrigin(t, tr, srv, origin, unreachable) // again: from the cache
			if n := srv.Hits("/robots.txt"); n != 1 {
				t.Errorf("robots.txt fetched %d times, want 1 until the retry", n)
			}
			e, _ := store.Get(context.Background(), origin)
			if e == nil {
				t.Fatal("no entry in the fleet.Store")
			}
			if got := e.Expires.Sub(start); got < c.want-time.Minute/2 || got > c.want+time.Minute/2 {
				t.Errorf("retried after %v, want %v", got.Round(time.Second), c.want)
			}
			srv.Close()
		})
	}
}

// TestFaultRobotsChanges serves a robots.txt that changes: the new rules
// apply once the old copy's lifetime is over, and not before.
func TestFaultRobotsChanges(t *testing.T) {
	var version atomic.Int32
	srv := newFaultServer(t, func(c net.Conn, req *http.Request, stop <-chan struct{}) {
		body := "User-agent: *\nDisallow: /private\n"
		if version.Load() > 0 {
			body = "User-agent: *\nDisallow: /public\n"
		}
		reply(200, "", body)(c, req, stop)
	})
	const ttl = time.Second
	tr := faultTransport(t, loopbackBase(nil, nil))
	tr.TTL = ttl
	origin := "http://" + srv.Addr()

	fetched := time.Now()
	checkOriginRules(t, tr, srv, origin, outcome{refusedRule, allowed, fleet.AccessSuccess}, "Disallow: /private")
	expired := time.Now().Add(ttl + 50*time.Millisecond) // the copy was fetched before now
	version.Store(1)
	if time.Since(fetched) < ttl/2 {
		// Still within the lifetime: the old copy decides.
		checkOriginRules(t, tr, srv, origin, outcome{refusedRule, allowed, fleet.AccessSuccess}, "Disallow: /private")
	}
	time.Sleep(time.Until(expired))
	checkOriginRules(t, tr, srv, origin, outcome{allowed, refusedRule, fleet.AccessSuccess}, "Disallow: /public")
	if n := srv.Hits("/robots.txt"); n != 2 {
		t.Errorf("robots.txt fetched %d times, want 2", n)
	}
	srv.Close()
}

// TestFaultBaseBreaksContract gives the Transport a base that breaks the
// RoundTripper contract as hand-written test doubles often do: a response
// with a nil Body (which http.Client accepts as empty), or neither a
// response nor an error (which http.Client reports as an error). The fetch
// of robots.txt runs in a goroutine of its own, where a panic would take the
// whole process down.
func TestFaultBaseBreaksContract(t *testing.T) {
	for _, c := range []struct {
		name string
		resp func(*http.Request) *http.Response
		want verdict // for /private
	}{
		{"200 nil Body", func(r *http.Request) *http.Response { return &http.Response{StatusCode: 200, Request: r} }, allowed},
		{"200 nil Body, ContentLength 50", func(r *http.Request) *http.Response {
			return &http.Response{StatusCode: 200, ContentLength: 50, Request: r}
		}, refusedWhole},
		{"404 nil Body", func(r *http.Request) *http.Response { return &http.Response{StatusCode: 404, Request: r} }, allowed},
		{"503 nil Body", func(r *http.Request) *http.Response { return &http.Response{StatusCode: 503, Request: r} }, refusedWhole},
		{"301 nil Body", func(r *http.Request) *http.Response {
			return &http.Response{StatusCode: 301, Header: http.Header{"Location": {"/elsewhere"}}, Request: r}
		}, allowed},
		{"nil response, nil error", func(*http.Request) *http.Response { return nil }, refusedWhole},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := rtFunc(func(req *http.Request) (*http.Response, error) {
				if req.URL.Path == "/robots.txt" || req.URL.Path == "/elsewhere" {
					return c.resp(req), nil
				}
				return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
			})
			tr := &Transport{NoDefaultPace: true, Base: base, Agent: "FaultBot"}
			req, _ := http.NewRequest(http.MethodGet, "http://example.com/private", nil)
			resp, err := tr.RoundTrip(req)
			got := allowed
			if err != nil {
				de, ok := errors.AsType[*DisallowedError](err)
				if !ok {
					t.Fatalf("GET /private: %v, want a verdict", err)
				}
				got = refusedWhole
				if de.Err == nil {
					got = refusedRule
				}
			} else {
				resp.Body.Close()
			}
			if got != c.want {
				t.Errorf("GET /private = %v (%v), want %v", got, err, c.want)
			}
		})
	}
}
