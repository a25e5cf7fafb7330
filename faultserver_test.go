package robots

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// faultServer is an HTTP/1.1 server on 127.0.0.1 that answers each request
// with raw bytes, so that it can misbehave in ways net/http's server will not:
// stall, trickle, lie about lengths, reset connections, speak garbage.
//
// Requests for paths under /private, /public and /late are pages: they are
// answered 200 "page" on a kept-alive connection and counted, so that a test
// can tell which requests the Transport let through. Every other request
// (robots.txt, redirect hops) goes to the fault handler, and the connection
// is closed when the handler returns. Close stops the handlers, closes every
// connection and waits for all of the server's goroutines.
type faultServer struct {
	ln     net.Listener
	handle faultHandler
	stop   chan struct{} // closed by Close
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]bool // guarded by mu
	hits  map[string]int    // guarded by mu: "host path" → requests
}

// faultHandler answers one request on c. It returns when it is done, when a
// write fails, or when stop is closed.
type faultHandler func(c net.Conn, req *http.Request, stop <-chan struct{})

func newFaultServer(t testing.TB, h faultHandler) *faultServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &faultServer{ln: ln, handle: h, stop: make(chan struct{}), conns: map[net.Conn]bool{}, hits: map[string]int{}}
	s.wg.Go(s.serve)
	t.Cleanup(s.Close)
	return s
}

// Addr returns the server's "127.0.0.1:port".
func (s *faultServer) Addr() string { return s.ln.Addr().String() }

// URL returns "http://127.0.0.1:port" followed by path.
func (s *faultServer) URL(path string) string { return "http://" + s.Addr() + path }

// Hits returns how many requests for path the server has read, on any host.
func (s *faultServer) Hits(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, v := range s.hits {
		if _, p, _ := strings.Cut(k, " "); p == path {
			n += v
		}
	}
	return n
}

// HostHits returns how many requests for path the server has read with the
// Host header host.
func (s *faultServer) HostHits(host, path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[host+" "+path]
}

func (s *faultServer) Close() {
	select {
	case <-s.stop:
		return
	default:
	}
	close(s.stop)
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *faultServer) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		select {
		case <-s.stop:
			s.mu.Unlock()
			c.Close()
			return
		default:
		}
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Go(func() {
			s.conn(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			c.Close()
		})
	}
}

func (s *faultServer) conn(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		s.mu.Lock()
		s.hits[req.Host+" "+req.URL.Path]++
		s.mu.Unlock()
		if isPage(req.URL.Path) {
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\npage"); err != nil {
				return
			}
			continue
		}
		s.handle(c, req, s.stop)
		return
	}
}

func isPage(path string) bool {
	for _, p := range []string{"/private", "/public", "/late"} {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// reply returns a handler that writes a whole response with Content-Length
// and "Connection: close"; hdr is "Name: value" lines, each ending in CRLF.
func reply(status int, hdr, body string) faultHandler {
	return func(c net.Conn, _ *http.Request, _ <-chan struct{}) {
		fmt.Fprintf(c, "HTTP/1.1 %d %s\r\n%sContent-Length: %d\r\nConnection: close\r\n\r\n%s",
			status, http.StatusText(status), hdr, len(body), body)
	}
}

// raw returns a handler that writes b as it is.
func raw(b string) faultHandler {
	return func(c net.Conn, _ *http.Request, _ <-chan struct{}) { io.WriteString(c, b) }
}

// stall returns a handler that writes b, then waits, holding the connection,
// until the server closes.
func stall(b string) faultHandler {
	return func(c net.Conn, _ *http.Request, stop <-chan struct{}) {
		io.WriteString(c, b)
		<-stop
	}
}

// trickle returns a handler that writes b one byte at a time, every gap.
// With gap 0, it writes the bytes one by one without waiting: each goes in
// its own TCP segment.
func trickle(b string, gap time.Duration) faultHandler {
	return func(c net.Conn, _ *http.Request, stop <-chan struct{}) {
		var tick <-chan time.Time
		if gap > 0 {
			t := time.NewTicker(gap)
			defer t.Stop()
			tick = t.C
		}
		for i := 0; i < len(b); i++ {
			if _, err := c.Write([]byte{b[i]}); err != nil {
				return
			}
			if tick == nil {
				continue
			}
			select {
			case <-tick:
			case <-stop:
				return
			}
		}
	}
}

// reset returns a handler that writes b and then resets the connection
// (RST, not FIN).
func reset(b string) faultHandler {
	return func(c net.Conn, _ *http.Request, _ <-chan struct{}) {
		io.WriteString(c, b)
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
	}
}

// loopbackBase returns a base transport that never sends a packet off the
// machine: it dials the addresses in hosts ("name:port" → "127.0.0.1:port"),
// and loopback IP addresses as they are; any other name fails as a DNS
// lookup that found nothing, without a lookup. tlsConfig may be nil.
func loopbackBase(hosts map[string]string, tlsConfig *tls.Config) *http.Transport {
	var d net.Dialer
	return &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if to, ok := hosts[addr]; ok {
				addr = to
			}
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
				return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
			}
			return d.DialContext(ctx, network, addr)
		},
		TLSClientConfig:     tlsConfig,
		TLSHandshakeTimeout: 5 * time.Second,
		ForceAttemptHTTP2:   false,
	}
}

// noHang is the generous bound within which every call of the fault suite
// must return. It proves there is no hang; it does not measure speed.
const noHang = 10 * time.Second

// verdict is how a Transport decided for one URL.
type verdict int

const (
	allowed      verdict = iota // sent
	refusedRule                 // refused by a rule of robots.txt
	refusedWhole                // refused because robots.txt is unreachable
)

func (v verdict) String() string {
	return [...]string{"allowed", "refused by a rule", "refused whole (unreachable)"}[v]
}

// decideWithin sends GET u through tr, bounded by noHang, and returns the
// verdict, the refusal (if any) and how long the call took. It fails t on
// any other outcome.
func decideWithin(t *testing.T, tr *Transport, u string) (verdict, *DisallowedError, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), noHang)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := tr.RoundTrip(req)
	took := time.Since(start)
	if resp != nil {
		if err != nil {
			t.Errorf("GET %s: a response and an error (%v)", u, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if took >= noHang || ctx.Err() != nil {
		t.Fatalf("GET %s: no verdict within %v (err %v)", u, noHang, err)
	}
	if err == nil {
		if resp.StatusCode != 200 {
			t.Errorf("GET %s: status %d from the page server", u, resp.StatusCode)
		}
		return allowed, nil, took
	}
	de, ok := errors.AsType[*DisallowedError](err)
	if !ok || !errors.Is(err, ErrDisallowed) {
		t.Fatalf("GET %s: %v, want a response or a *DisallowedError", u, err)
	}
	switch {
	case de.Rule != "" && de.Line > 0 && de.Err == nil:
		return refusedRule, de, took
	case de.Rule == "" && de.Line == 0 && de.Err != nil:
		return refusedWhole, de, took
	}
	t.Fatalf("GET %s: malformed refusal %+v", u, de)
	return 0, nil, 0
}
