package pacing

import (
	"context"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"testing"
	"time"
)

func TestRegistrableDomain(t *testing.T) {
	for _, c := range []struct{ origin, want string }{
		{"https://a.example.co.uk", "example.co.uk"},
		{"http://b.a.example.co.uk:8080", "example.co.uk"},
		{"https://EXAMPLE.com.", "example.com"},
		{"https://alice.github.io", "alice.github.io"}, // a private suffix: apart
		{"https://bob.blogspot.com", "bob.blogspot.com"},
		{"https://co.uk", "co.uk"}, // a public suffix: its own group
		{"https://localhost:8080", "localhost"},
		{"https://intranet", "intranet"},
		{"https://192.0.2.1:8443", "192.0.2.1"},
		{"https://[2001:db8::1]:443", "[2001:db8::1]"},
		{"https://[fe80::1%25eth0]", "[fe80::1%25eth0]"},
		{"https://xn--bcher-kva.example", "xn--bcher-kva.example"},
		{"https://a.xn--bcher-kva.example", "xn--bcher-kva.example"},
		{"", ""},
	} {
		if got := RegistrableDomain(c.origin); got != c.want {
			t.Errorf("RegistrableDomain(%q) = %q, want %q", c.origin, got, c.want)
		}
	}
}

// site is a Site for the tests.
type site struct {
	origin string
	p      Pace
}

func (s *site) Origin() string { return s.origin }
func (s *site) Pace() *Pace    { return &s.p }

// learnTurns returns Turns with address groups that learn, and the proxy
// function given.
func learnTurns(proxy func(*http.Request) (*url.URL, error), uncapped ...netip.Prefix) *Turns {
	tn := new(Turns)
	tn.Init(Config{TurnTimeout: time.Minute, CallTimeout: time.Second, MaxAdaptive: time.Hour,
		Groups: GroupConfig{DomainCap: 4, AddressCeiling: 8, Learn: true, Proxy: proxy, Uncapped: uncapped}}, time.Now())
	return tn
}

// connect sends a request to s through tn and reports a connection to a
// as net/http's Transport does, returning whether a trace was set.
func connect(t *testing.T, tn *Turns, s *site, a netip.Addr) bool {
	t.Helper()
	ctx := context.Background()
	tk, err := tn.Wait(ctx, s, Ask{Known: true}, nil, tn.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(s.origin + "/")
	tctx := tn.Traced(ctx, s, tk, u)
	tr := httptrace.ContextClientTrace(tctx)
	if tr != nil {
		tr.GotConn(httptrace.GotConnInfo{Conn: fakeConn{a}})
		tr.GotConn(httptrace.GotConnInfo{Conn: fakeConn{netip.MustParseAddr("203.0.113.9")}}) // a redirect's: ignored
	}
	tn.Release(ctx, s, tk, tk.At(), false)
	return tr != nil
}

type fakeConn struct{ a netip.Addr }

func (c fakeConn) RemoteAddr() net.Addr {
	return net.TCPAddrFromAddrPort(netip.AddrPortFrom(c.a, 443))
}
func (fakeConn) Read([]byte) (int, error)         { return 0, nil }
func (fakeConn) Write([]byte) (int, error)        { return 0, nil }
func (fakeConn) Close() error                     { return nil }
func (fakeConn) LocalAddr() net.Addr              { return nil }
func (fakeConn) SetDeadline(time.Time) error      { return nil }
func (fakeConn) SetReadDeadline(time.Time) error  { return nil }
func (fakeConn) SetWriteDeadline(time.Time) error { return nil }

// TestLearnAddress: the first request of an origin learns its address, the
// next ones within AddressTTL carry no trace; two origins on one address
// share its group; an IPv4-mapped address is the IPv4 one; a request
// through a proxy learns nothing; an address in Uncapped has no group.
func TestLearnAddress(t *testing.T) {
	a := netip.MustParseAddr("192.0.2.1")
	tn := learnTurns(nil, netip.MustParsePrefix("198.51.100.0/24"))
	s1, s2 := &site{origin: "https://one.example"}, &site{origin: "https://two.example"}
	if !connect(t, tn, s1, a) {
		t.Fatal("the first request carries no trace")
	}
	if connect(t, tn, s1, a) {
		t.Error("the second request within AddressTTL carries a trace")
	}
	connect(t, tn, s2, netip.MustParseAddr("::ffff:192.0.2.1"))
	m1, m2 := s1.p.member.Load(), s2.p.member.Load()
	if m1.addr == nil || m1.addr != m2.addr || m1.addr.key != "192.0.2.1" {
		t.Fatalf("the two origins' address groups: %v, %v; want one, 192.0.2.1", m1.addr, m2.addr)
	}
	if c, _, ok := tn.AddressState(a); !ok || c != AddressStart {
		t.Errorf("the shared address's cap: %d (%v), want %d", c, ok, AddressStart)
	}
	s3 := &site{origin: "https://three.example"}
	connect(t, tn, s3, netip.MustParseAddr("198.51.100.7"))
	if m := s3.p.member.Load(); m.addr != nil {
		t.Errorf("an uncapped address has the group %s", m.addr.key)
	}
	if _, n := tn.GroupsKept(); n != 1 {
		t.Errorf("%d address groups, want 1", n)
	}

	proxied := learnTurns(func(*http.Request) (*url.URL, error) { return url.Parse("http://proxy.example:3128") })
	s4 := &site{origin: "https://four.example"}
	if connect(t, proxied, s4, a) {
		t.Error("a request through a proxy carries a trace")
	}
}

// TestAIMD: an address group's cap grows by one for each cap's worth of
// quick answers while constrained, halves once for a burst of failures,
// halves on rising answer times, and stays between 1 and its ceiling.
func TestAIMD(t *testing.T) {
	var c Counts
	g := &group{kind: kindAddress, cap: 4, ceiling: 8, sharedAt: 1}
	now := time.Duration(1)
	answer := func(took time.Duration, failed bool) {
		now += took
		g.inflight = g.cap // constrained
		g.release(now, now-took, took, failed, &c)
	}
	for range 4 {
		answer(20*time.Millisecond, false)
	}
	if g.cap != 5 {
		t.Fatalf("after 4 quick answers at cap 4: %d, want 5", g.cap)
	}
	for range 100 {
		answer(20*time.Millisecond, false)
	}
	if g.cap != 8 {
		t.Fatalf("after many quick answers: %d, want the ceiling 8", g.cap)
	}
	sent := now
	for range 3 { // three failures of requests sent at once: one halving
		now += time.Millisecond
		g.inflight = g.cap
		g.release(now, sent, 20*time.Millisecond, true, &c)
	}
	if g.cap != 4 || c.Halvings.Load() != 1 {
		t.Fatalf("after a burst of failures: cap %d, %d halvings; want 4, 1", g.cap, c.Halvings.Load())
	}
	for range 20 {
		answer(500*time.Millisecond, false) // answers slow down
	}
	if g.cap != 1 {
		t.Errorf("after slowing answers: cap %d, want 1", g.cap)
	}
}
