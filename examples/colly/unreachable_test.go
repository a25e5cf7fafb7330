package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/f9014239/robots"
)

// TestCrawlDeadHost: a host that refuses connections is reported with why
// its robots.txt is unreachable, not only that it is.
func TestCrawlDeadHost(t *testing.T) {
	s := httptest.NewServer(http.NotFoundHandler())
	dead := s.URL
	s.Close() // nothing listens there now
	var out strings.Builder
	res, err := crawl([]string{dead + "/"}, options{agent: "examplebot", max: 5}, nil, &out)
	if err != nil {
		t.Fatal(err)
	}
	if why := res.Refused[dead+"/"]; why != "robots.txt unreachable: connection refused" {
		t.Errorf("dead host: refused as %q, want why it is unreachable\n%s", why, out.String())
	}
	if !strings.Contains(out.String(), "refused "+dead+"/ (robots.txt unreachable: connection refused; retry after ") {
		t.Errorf("output:\n%s", out.String())
	}
}

// TestUnreachableWhy names the cause of each kind of unreachable robots.txt,
// from the error package robots wraps.
func TestUnreachableWhy(t *testing.T) {
	u := "http://example.com/robots.txt"
	for _, c := range []struct {
		err  error
		want string
	}{
		{&url.Error{Op: "Get", URL: u, Err: &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "example.com", IsNotFound: true}}},
			"DNS: no such host example.com"},
		{&net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}, "connection refused"},
		{&net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNRESET}}, "connection reset"},
		{&net.OpError{Op: "dial", Net: "tcp", Err: &timeoutError{}}, "timed out"},
		{errors.New("503 Service Unavailable"), "503 Service Unavailable"},
	} {
		err := &robots.DisallowedError{Err: fmt.Errorf("robots: fetching %s: %w", u, c.err), RetryAt: time.Now()}
		if got := unreachableWhy(err); got != c.want {
			t.Errorf("unreachableWhy(%v) = %q, want %q", err, got, c.want)
		}
	}
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }
