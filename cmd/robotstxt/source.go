package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/f9014239/robots/matcher"
)

const (
	// parseLimit is how much of a robots.txt file crawlers read: RFC 9309
	// §2.5 asks for at least 500 KiB, and Google stops there.
	parseLimit = matcher.MaxSize

	// lintLimit is how much of a robots.txt file lint reads, so that it can
	// say by how much a file is over parseLimit.
	lintLimit = 4 << 20

	// fetchTimeout bounds every request the command sends, body included.
	fetchTimeout = 30 * time.Second

	// maxRedirects is how many redirects a robots.txt fetch follows
	// (RFC 9309 §2.3.1.2 asks for at least five).
	maxRedirects = 5
)

// userAgent returns the User-Agent header sent for the product token.
func userAgent(token string) string {
	return token + " (+https://github.com/f9014239/robots)"
}

// isURL reports whether arg names a web site rather than a local file.
func isURL(arg string) bool {
	s := strings.ToLower(arg)
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

// parseSite parses the URL of a site given on the command line.
func parseSite(arg string) (*url.URL, error) {
	u, err := url.Parse(arg)
	if err != nil {
		return nil, err
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%q has no host", arg)
	}
	return u, nil
}

// robotsURL returns the URL of the robots.txt file that governs u.
func robotsURL(u *url.URL) *url.URL {
	return &url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/robots.txt"}
}

// originOf returns u's scheme and host, lower case, without a default port:
// the key under which one robots.txt file applies (RFC 9309 §2.3).
func originOf(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Host)
	if h, port, err := net.SplitHostPort(host); err == nil &&
		(scheme == "http" && port == "80" || scheme == "https" && port == "443") {
		host = h
		if strings.Contains(h, ":") {
			host = "[" + h + "]"
		}
	}
	return scheme + "://" + host
}

// readFile reads at most limit bytes of the named file. truncated reports
// whether the file is longer.
func readFile(name string, limit int64) (body []byte, truncated bool, err error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	return readLimited(f, limit)
}

// readLimited reads at most limit bytes of r. truncated reports whether r
// had more.
func readLimited(r io.Reader, limit int64) (body []byte, truncated bool, err error) {
	body, err = io.ReadAll(io.LimitReader(r, limit+1))
	if int64(len(body)) > limit {
		return body[:limit], true, err
	}
	return body, false, err
}

// baseTransport returns the transport every command sends through: the
// default one, with a bound on the wait for response headers.
func baseTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = fetchTimeout
	return t
}

// fetched is the outcome of a GET of a robots.txt file.
type fetched struct {
	url       *url.URL // the URL fetched, before redirects
	final     *url.URL // the URL that answered, after redirects
	status    int      // of the last response; 0 when err is set
	statusMsg string   // as in "404 Not Found"
	redirects int      // how many were followed
	body      []byte   // up to the reader's limit; nil unless status is 2xx
	truncated bool     // body was cut at the limit
	err       error    // a network error, timeout or too many redirects
}

// errTooManyRedirects ends a robots.txt fetch after maxRedirects hops.
var errTooManyRedirects = errors.New("more than 5 redirects")

// fetchRobots sends GET /robots.txt for the origin of site through base,
// following up to maxRedirects redirects, and reads up to limit bytes of the
// body, all within fetchTimeout.
func fetchRobots(ctx context.Context, base http.RoundTripper, site *url.URL, agent string, limit int64) *fetched {
	f := &fetched{url: robotsURL(site)}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	client := &http.Client{
		Transport: base,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return errTooManyRedirects
			}
			return nil
		},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url.String(), nil)
	if err != nil {
		f.err = err
		return f
	}
	req.Header.Set("User-Agent", userAgent(agent))
	resp, err := client.Do(req)
	if err != nil {
		// On too many redirects, resp is the last one, its body closed.
		f.err = err
		if resp != nil {
			f.status, f.statusMsg = resp.StatusCode, resp.Status
			f.redirects = maxRedirects + 1
		}
		return f
	}
	defer resp.Body.Close()
	f.final = resp.Request.URL
	for r := resp.Request; r.Response != nil; r = r.Response.Request {
		f.redirects++
	}
	f.status, f.statusMsg = resp.StatusCode, resp.Status
	if resp.StatusCode/100 == 2 {
		f.body, f.truncated, f.err = readLimited(resp.Body, limit)
	}
	return f
}

// recorder is an [http.RoundTripper] that sends requests through base and
// records, for each response, its status and as much of its body as the
// caller reads (up to limit bytes). Check uses it to see the robots.txt file
// a [robots.Transport] fetched, so that it can name the group that applied.
type recorder struct {
	base  http.RoundTripper
	limit int

	mu   sync.Mutex
	recs []*recording // since the last take; guarded by mu, as are their fields
}

type recording struct {
	url    *url.URL
	status int
	msg    string
	err    error
	body   bytes.Buffer
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	rec := &recording{url: req.URL, err: err}
	if err == nil {
		rec.status, rec.msg = resp.StatusCode, resp.Status
		resp.Body = &recordingBody{ReadCloser: resp.Body, r: r, rec: rec}
	}
	r.mu.Lock()
	r.recs = append(r.recs, rec)
	r.mu.Unlock()
	return resp, err
}

// CloseIdleConnections closes the idle connections of base.
func (r *recorder) CloseIdleConnections() {
	if c, ok := r.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// take returns what was recorded since the last take as a fetched, or nil
// when nothing was.
func (r *recorder) take() *fetched {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.recs) == 0 {
		return nil
	}
	first, last := r.recs[0], r.recs[len(r.recs)-1]
	f := &fetched{
		url:       first.url,
		final:     last.url,
		status:    last.status,
		statusMsg: last.msg,
		redirects: len(r.recs) - 1,
		err:       last.err,
	}
	if last.err == nil && last.status/100 == 2 {
		f.body = bytes.Clone(last.body.Bytes())
	}
	r.recs = nil
	return f
}

type recordingBody struct {
	io.ReadCloser
	r   *recorder
	rec *recording
}

func (b *recordingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.r.mu.Lock()
	if room := b.r.limit - b.rec.body.Len(); room > 0 {
		b.rec.body.Write(p[:min(n, room)])
	}
	b.r.mu.Unlock()
	return n, err
}
