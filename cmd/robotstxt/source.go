package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/f9014239/robots"
	"github.com/f9014239/robots/matcher"
)

const (
	// parseLimit is how much of a robots.txt file crawlers read: RFC 9309
	// §2.5 asks for at least 500 KiB, and Google stops there.
	parseLimit = matcher.MaxSize

	// lintLimit is how much of a robots.txt file lint reads, so that it can
	// say by how much a file is over parseLimit.
	lintLimit = 4 << 20

	// fetchTimeout is the default of -timeout, which bounds the fetch of
	// robots.txt and every other request the command sends, body included.
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

// originOf returns u's origin as package robots names it (see
// [robots.OriginOf]), or "" if u has none: such a URL is of no site.
func originOf(u *url.URL) string {
	o, err := robots.OriginOf(u)
	if err != nil {
		return ""
	}
	return o
}

// countLimit bounds how far readCounted reads to learn a file's size.
const countLimit = 1 << 30

// readFile reads at most keep bytes of the named file, or of stdin when name
// is "-", and counts the rest: size is the length of the file, or -1 when it
// is longer than countLimit.
func readFile(name string, stdin io.Reader, keep int64) (body []byte, size int64, err error) {
	if name == "-" {
		if stdin == nil {
			return nil, 0, errors.New("no standard input")
		}
		return readCounted(stdin, keep)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, 0, sourceError(name, err)
	}
	defer f.Close()
	return readCounted(f, keep)
}

// sourceError explains err, the failure to open name, a robots.txt source
// given on the command line, when no file has that name: what was expected,
// and what the name looks like instead (a URL of another scheme, or a host).
func sourceError(name string, err error) error {
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	const want = `the robots.txt source is a robots.txt file, "-" for standard input, or an http or https URL`
	if scheme, _, ok := strings.Cut(name, "://"); ok && validScheme(scheme) {
		return fmt.Errorf("%q: %s URLs are not supported; robots.txt is fetched only over http and https; %s", name, strings.ToLower(scheme), want)
	}
	msg := fmt.Sprintf("no file %q", name)
	if host, _, _ := strings.Cut(name, "/"); hostLike(host) {
		msg += "; for the site, give its URL: https://" + host + "/"
	}
	return fmt.Errorf("%s; %s", msg, want)
}

// validScheme reports whether s is a URL scheme (RFC 3986 §3.1).
func validScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return s != ""
}

// hostLike reports whether s looks like a host name, as in "example.com"
// or "example.com:8080", rather than a file name such as "robots.txt".
func hostLike(s string) bool {
	name, _, _ := strings.Cut(s, ":")
	dot := strings.LastIndexByte(name, '.')
	if dot <= 0 || dot == len(name)-1 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	switch strings.ToLower(name[dot+1:]) {
	case "txt", "text", "htm", "html", "xml", "json", "gz", "md", "log", "bak", "old", "orig":
		return false
	}
	return true
}

// readCounted reads at most keep bytes of r and counts the rest, up to
// countLimit bytes in all: size is the length of r, or -1 when it is longer.
func readCounted(r io.Reader, keep int64) (body []byte, size int64, err error) {
	body, err = io.ReadAll(io.LimitReader(r, keep))
	size = int64(len(body))
	if err != nil || size < keep {
		return body, size, err
	}
	n, err := io.Copy(io.Discard, io.LimitReader(r, countLimit-size+1))
	size += n
	if size > countLimit {
		size = -1
	}
	return body, size, err
}

// lineCount returns the number of lines in body, which ends at a line end
// (as [matcher.Truncate] leaves it) or at the end of the file: a line ends at
// LF, CR or CR LF, as in the matcher.
func lineCount(body []byte) int {
	n := 0
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '\r':
			if i+1 < len(body) && body[i+1] == '\n' {
				i++
			}
			n++
		case '\n':
			n++
		}
	}
	if len(body) > 0 && body[len(body)-1] != '\n' && body[len(body)-1] != '\r' {
		n++ // a last line without a line end
	}
	return n
}

// baseTransport returns the transport every command sends through: the
// default one, with timeout as a bound on the wait for response headers.
func baseTransport(timeout time.Duration) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = timeout
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
	size      int64    // of the whole body, as for readCounted
	err       error    // a network error, timeout or too many redirects
}

// errTooManyRedirects ends a robots.txt fetch after maxRedirects hops.
var errTooManyRedirects = errors.New("more than 5 redirects")

// fetchRobots sends GET /robots.txt for the origin of site through base,
// following up to maxRedirects redirects, and reads up to limit bytes of the
// body and counts the rest, all within timeout.
func fetchRobots(ctx context.Context, base http.RoundTripper, site *url.URL, agent string, limit int64, timeout time.Duration) *fetched {
	f := &fetched{url: robotsURL(site)}
	ctx, cancel := context.WithTimeout(ctx, timeout)
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
		f.body, f.size, f.err = readCounted(resp.Body, limit)
	}
	return f
}

// recorder is an [http.RoundTripper] that sends requests through base and
// records, for each response, its status and as much of its body as the
// caller reads, up to limit bytes, and one byte more if the caller stops
// there, to tell a body of limit bytes from a longer one. Check uses it to
// see the robots.txt file a [robots.Transport] fetched, so that it can name
// the group that applied.
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
	eof    bool // the body was read to its end
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
		// What crawlers read: not the line the limit cuts.
		f.body = bytes.Clone(matcher.Truncate(last.body.Bytes(), r.limit))
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
	if room := b.r.limit + 1 - b.rec.body.Len(); room > 0 {
		b.rec.body.Write(p[:min(n, room)])
	}
	if err == io.EOF {
		b.rec.eof = true
	}
	b.r.mu.Unlock()
	return n, err
}

// Close reads one byte past the limit if the caller stopped there, so that
// [matcher.Truncate] can tell whether the limit cuts a line.
func (b *recordingBody) Close() error {
	b.r.mu.Lock()
	peek := !b.rec.eof && b.rec.body.Len() == b.r.limit
	b.r.mu.Unlock()
	if peek {
		var one [1]byte
		if n, _ := io.ReadFull(b.ReadCloser, one[:]); n == 1 {
			b.r.mu.Lock()
			b.rec.body.WriteByte(one[0])
			b.r.mu.Unlock()
		}
	}
	return b.ReadCloser.Close()
}
