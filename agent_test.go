package robots

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"

	"github.com/f9014239/robots/internal/agenttoken"
)

const ownGroup = "User-agent: mybot\nDisallow: /\n\nUser-agent: *\nAllow: /\n"

// TestAgentGivenAsUserAgent: an Agent given with a version, or as a whole
// User-Agent header, names its token, not "*".
func TestAgentGivenAsUserAgent(t *testing.T) {
	for _, agent := range []string{"MyBot", "MyBot/1.0", "Mozilla/5.0 (compatible; MyBot/1.0; +https://example.com/bot)", "mybot"} {
		mock := newMock()
		mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, ownGroup))
		client := &http.Client{Transport: noDefaultPace(NewTransport(mock, agent))}
		de := wantRefused(t, client, "https://example.com/page")
		if de.Agent != "MyBot" && de.Agent != "mybot" {
			t.Errorf("Agent %q: refused as %q, want MyBot", agent, de.Agent)
		}
	}
}

// TestAgentWithoutToken: an Agent that names no token, given to NewTransport
// or set in a Transport, fails every request with an error that says so, and
// sends nothing.
func TestAgentWithoutToken(t *testing.T) {
	mock := newMock()
	client := &http.Client{Transport: noDefaultPace(NewTransport(mock, ""))} // as from an unset environment variable
	if err := get(client, "https://example.com/page"); err == nil || errors.Is(err, ErrDisallowed) || !strings.Contains(err.Error(), "empty agent") {
		t.Errorf("NewTransport(mock, \"\"): err = %v, want an error that names the empty agent", err)
	}
	if n := mock.GetTotalCallCount(); n != 0 {
		t.Errorf("NewTransport(mock, \"\"): %d requests sent, want none", n)
	}
	for _, agent := range []string{"/1.0", "(bot)", "  ", "***", "My Crawler", "My Crawler/1.0", "Example Bot (+https://example.com)"} {
		for _, tr := range []*Transport{noDefaultPace(NewTransport(newMock(), agent)), {Base: newMock(), Agent: agent}} {
			err := get(&http.Client{Transport: tr}, "https://example.com/page")
			if err == nil || errors.Is(err, ErrDisallowed) || !strings.Contains(err.Error(), "names no product token") && !strings.Contains(err.Error(), "is words, not a product token") {
				t.Errorf("Agent %q: err = %v, want an error that says the agent names no token", agent, err)
			}
			if n := tr.Base.(*httpmock.MockTransport).GetTotalCallCount(); n != 0 {
				t.Errorf("Agent %q: %d requests sent, want none", agent, n)
			}
		}
	}

	// User-Agent headers with words in them still name their token.
	for agent, tok := range map[string]string{
		"ExampleBot/1.0 (+https://example.com/bot)":                      "ExampleBot",
		"Mozilla/5.0 (compatible; ExampleBot/1.0; +https://example.com)": "ExampleBot",
		"Mozilla/5.0 (compatible; ExampleBot; +https://example.com)":     "ExampleBot",
	} {
		if got, err := tokenOf(agent); got != tok || err != nil {
			t.Errorf("tokenOf(%q) = %q, %v; want %q", agent, got, err, tok)
		}
	}

	// A UserAgent that does not name the Agent would hide the crawler's
	// token from site owners: as loud.
	mock = newMock()
	tr := &Transport{NoDefaultPace: true, Base: mock, Agent: "ExampleBot", UserAgent: "Mozilla/5.0 (compatible; OtherBot/1.0)"}
	if err := get(&http.Client{Transport: tr}, "https://example.com/page"); err == nil || errors.Is(err, ErrDisallowed) ||
		!strings.Contains(err.Error(), "does not name the agent") {
		t.Errorf("UserAgent without the Agent's token: err = %v, want an error that says so", err)
	}
	if n := mock.GetTotalCallCount(); n != 0 {
		t.Errorf("UserAgent without the Agent's token: %d requests sent, want none", n)
	}
	tr = &Transport{NoDefaultPace: true, Base: mock, Agent: "examplebot", UserAgent: "Mozilla/5.0 (compatible; ExampleBot/1.0)"}
	if err := get(&http.Client{Transport: tr}, "https://example.com/page"); err != nil {
		t.Errorf("UserAgent naming the Agent in another case: %v", err)
	}
}

// TestBareProductUserAgent: with Agent empty, "User-Agent: ExampleBot" names
// ExampleBot.
func TestBareProductUserAgent(t *testing.T) {
	mock := newMock()
	mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200,
		"User-agent: examplebot\nDisallow: /\n\nUser-agent: *\nAllow: /\n"))
	tr := &Transport{NoDefaultPace: true, Base: mock}
	req, _ := http.NewRequest("GET", "https://example.com/page", nil)
	req.Header.Set("User-Agent", "ExampleBot")
	if _, err := tr.RoundTrip(req); !errors.Is(err, ErrDisallowed) {
		t.Errorf("err = %v, want refused by the ExampleBot group", err)
	}
	if err := tr.CheckRequest(req); !errors.Is(err, ErrDisallowed) {
		t.Errorf("CheckRequest: %v, want what RoundTrip says", err)
	}
	if err := tr.Check(context.Background(), req.URL); err != nil {
		t.Errorf("Check (no User-Agent, so *): %v, want allowed", err)
	}
}

// TestDefaultUserAgent: a request without User-Agent leaves with one that
// names the crawler, on a copy; one that has a User-Agent keeps it.
func TestDefaultUserAgent(t *testing.T) {
	var mu sync.Mutex
	var got []string
	base := rtFunc(func(req *http.Request) (*http.Response, error) {
		mu.Lock()
		got = append(got, req.URL.Path+" "+req.Header.Get("User-Agent"))
		mu.Unlock()
		return httpmock.NewStringResponse(200, ""), nil
	})
	for _, c := range []struct {
		tr   *Transport
		ctx  context.Context
		hdr  string
		want string
	}{
		{noDefaultPace(NewTransport(base, "ExampleBot")), context.Background(), "", "ExampleBot"},
		{noDefaultPace(NewTransport(base, "ExampleBot/2.1")), context.Background(), "", "ExampleBot/2.1"},
		{&Transport{NoDefaultPace: true, Base: base, Agent: "ExampleBot", UserAgent: "ExampleBot/2.1 (+https://example.com/bot)"}, context.Background(), "", "ExampleBot/2.1 (+https://example.com/bot)"},
		{noDefaultPace(NewTransport(base, "ExampleBot")), context.Background(), "Custom/1.0", "Custom/1.0"},
		{&Transport{NoDefaultPace: true, Base: base}, WithAgent(context.Background(), "OtherBot/3"), "", "OtherBot/3"},
	} {
		got = nil
		req, _ := http.NewRequestWithContext(c.ctx, "GET", "https://example.com/page", nil)
		if c.hdr != "" {
			req.Header.Set("User-Agent", c.hdr)
		}
		before := len(req.Header)
		if _, err := c.tr.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
		if len(req.Header) != before {
			t.Errorf("the caller's request was modified: %v", req.Header)
		}
		want := []string{"/robots.txt " + c.want, "/page " + c.want}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("sent %q, want %q", got, want)
		}
	}

	// Under WithAgent, pages leave as the agent given there, but the fetch
	// of robots.txt, which serves every token, as the Transport's own
	// identity: no robots.txt is fetched as Google-Extended, a token no
	// crawler sends.
	for _, c := range []struct {
		tr          *Transport
		agent, want string
	}{
		{noDefaultPace(NewTransport(base, "ExampleBot")), "OtherBot/3",
			"/robots.txt ExampleBot|/robots.txt ExampleBot|/page OtherBot/3"},
		{&Transport{NoDefaultPace: true, Base: base, Agent: "ExampleBot", UserAgent: "ExampleBot/2.1 (+https://example.com/bot)"}, "OtherBot",
			"/robots.txt ExampleBot/2.1 (+https://example.com/bot)|/robots.txt ExampleBot/2.1 (+https://example.com/bot)|/page OtherBot"},
		{noDefaultPace(NewTransport(base, "ExampleBot")), "Google-Extended",
			"/robots.txt ExampleBot|/robots.txt ExampleBot|/page Google-Extended"},
	} {
		got = nil
		ctx := WithAgent(context.Background(), c.agent)
		if err := c.tr.Check(ctx, mustURL("https://check.example/page")); err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", "https://example.com/page", nil)
		if _, err := c.tr.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, "|") != c.want { // a Check of one site, then a request to another
			t.Errorf("as %q: sent %q, want %q", c.agent, got, c.want)
		}
	}
}

// TestDefaultTransportAssignment: the README's one line works, and so does a
// zero Transport put in its place.
func TestDefaultTransportAssignment(t *testing.T) {
	saved := http.DefaultTransport
	defer func() { http.DefaultTransport = saved }()
	var mu sync.Mutex
	sent := 0
	own := rtFunc(func(req *http.Request) (*http.Response, error) {
		mu.Lock()
		sent++
		mu.Unlock()
		return httpmock.NewStringResponse(200, ""), nil
	})
	http.DefaultTransport = own // as if a program had set its own
	http.DefaultTransport = noDefaultPace(NewTransport(nil, "ExampleBot"))
	if err := get(http.DefaultClient, "http://127.0.0.1:1/page"); err != nil {
		t.Errorf("through NewTransport(nil, …) as http.DefaultTransport: %v", err)
	}
	if sent != 2 {
		t.Errorf("%d requests through the http.DefaultTransport of NewTransport's call, want robots.txt and the page", sent)
	}
	// A zero Transport as http.DefaultTransport sends through net/http's
	// own: nothing listens on port 1, so robots.txt is unreachable.
	http.DefaultTransport = &Transport{NoDefaultPace: true, Agent: "ExampleBot", FetchTimeout: 5 * time.Second}
	done := make(chan error, 1)
	go func() { done <- get(http.DefaultClient, "http://127.0.0.1:1/page") }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrUnreachable) {
			t.Errorf("through a zero Transport as http.DefaultTransport: %v, want unreachable", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a request through http.DefaultTransport did not return")
	}
}

// TestWithAgentPerRequest: one Transport, several identities.
func TestWithAgentPerRequest(t *testing.T) {
	mock := newMock()
	mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200, ownGroup))
	client := &http.Client{Transport: noDefaultPace(NewTransport(mock, "OtherBot"))}
	req, _ := http.NewRequestWithContext(WithAgent(context.Background(), "MyBot/1.0"), "GET", "https://example.com/p", nil)
	if _, err := client.Do(req); !errors.Is(err, ErrDisallowed) {
		t.Errorf("as MyBot: err = %v, want refused", err)
	}
	wantAllowed(t, client, "https://example.com/p")
	req, _ = http.NewRequestWithContext(WithAgent(context.Background(), "(nobody)"), "GET", "https://example.com/p", nil)
	if _, err := client.Do(req); err == nil || errors.Is(err, ErrDisallowed) {
		t.Errorf("as an agent with no token: err = %v, want an error", err)
	}
}

// TestWithAgentStarLeavesAsDecided: a request under WithAgent(ctx, "*") is
// decided by the "*" group; with no User-Agent header it has no identity
// that group governs, so it is not sent (it would leave as ExampleBot/1.0,
// to a path disallowed for ExampleBot). With one, it leaves with it.
func TestWithAgentStarLeavesAsDecided(t *testing.T) {
	var mu sync.Mutex
	var sent []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sent = append(sent, r.URL.Path+" "+r.Header.Get("User-Agent"))
		mu.Unlock()
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, "User-agent: ExampleBot\nDisallow: /private\n\nUser-agent: *\nAllow: /\n")
		}
	}))
	defer srv.Close()
	for _, tr := range []*Transport{
		{Base: srv.Client().Transport, Agent: "ExampleBot", UserAgent: "ExampleBot/1.0", NoDefaultPace: true},
		{Base: srv.Client().Transport, NoDefaultPace: true},
		{Base: srv.Client().Transport, UserAgent: "ExampleBot/1.0", NoDefaultPace: true},
	} {
		mu.Lock()
		sent = nil
		mu.Unlock()
		ctx := WithAgent(context.Background(), "*")
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/private", nil)
		if err := tr.CheckRequest(req); err == nil || errors.Is(err, ErrDisallowed) || !strings.Contains(err.Error(), "User-Agent") {
			t.Errorf("CheckRequest: err = %v, want an error about the missing User-Agent", err)
		}
		resp, err := tr.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
			t.Errorf("sent %s with no User-Agent under WithAgent(\"*\")", req.URL)
		} else if errors.Is(err, ErrDisallowed) || !strings.Contains(err.Error(), `WithAgent(ctx, "*")`) {
			t.Errorf("RoundTrip: err = %v, want an error about the missing User-Agent", err)
		}
		// Check sends nothing: it answers for the "*" group.
		if err := tr.Check(ctx, req.URL); err != nil {
			t.Errorf("Check: %v, want allowed by the * group", err)
		}
		req.Header.Set("User-Agent", "Mozilla/5.0 (compatible; Anonymous/1.0)")
		resp, err = tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("with a User-Agent: %v", err)
		}
		resp.Body.Close()
		mu.Lock()
		for _, s := range sent {
			if strings.HasPrefix(s, "/private ") && s != "/private Mozilla/5.0 (compatible; Anonymous/1.0)" {
				t.Errorf("sent %q under WithAgent(\"*\")", s)
			}
		}
		if n := len(sent); n != 2 {
			t.Errorf("sent %q, want robots.txt and one /private", sent)
		}
		mu.Unlock()
	}
}

// TestDecidedAsItLeaves: whatever the Transport's configuration and the
// request's context, RoundTrip decides a request whose User-Agent it sets,
// or that decides by its User-Agent, as the crawler that User-Agent names
// (the "*" group when it names none of the file's groups); and
// CheckRequest, and Check for a request without a User-Agent, give the
// verdict RoundTrip gives. (A User-Agent the caller sets against the
// Transport's Agent or WithAgent is the caller's: Agent decides.)
func TestDecidedAsItLeaves(t *testing.T) {
	const rules = "User-agent: mybot\nDisallow: /mybot\n\nUser-agent: go-http-client\nDisallow: /go-http-client\n\n" +
		"User-agent: otherbot\nDisallow: /otherbot\n\nUser-agent: *\nDisallow: /star\n"
	groups := []string{"mybot", "go-http-client", "otherbot", "*"}
	var mu sync.Mutex
	sent := map[string]string{} // path → User-Agent, as the server saw it
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, rules)
			return
		}
		mu.Lock()
		sent[r.URL.Path] = r.Header.Get("User-Agent")
		mu.Unlock()
	}))
	defer srv.Close()
	netHTTP := srv.Client().Transport // an *http.Transport: it adds Go-http-client
	wrapped := rtFunc(func(r *http.Request) (*http.Response, error) {
		if _, ok := r.Header["User-Agent"]; !ok {
			r = r.Clone(r.Context())
			r.Header.Set("User-Agent", "") // leave with none at all
		}
		return netHTTP.RoundTrip(r)
	})
	browser := "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"
	configs := map[string]func() *Transport{
		"zero":             func() *Transport { return &Transport{NoDefaultPace: true, Base: netHTTP} },
		"zero, other base": func() *Transport { return &Transport{NoDefaultPace: true, Base: wrapped} },
		"Agent MyBot/1.0":  func() *Transport { return noDefaultPace(NewTransport(netHTTP, "MyBot/1.0")) },
		"UserAgent only": func() *Transport {
			return &Transport{NoDefaultPace: true, Base: netHTTP, UserAgent: "MyBot/2 (+https://example.com/bot)"}
		},
		"UserAgent browser": func() *Transport { return &Transport{NoDefaultPace: true, Base: wrapped, UserAgent: browser} },
		"Agent, UserAgent": func() *Transport {
			return &Transport{NoDefaultPace: true, Base: netHTTP, Agent: "mybot", UserAgent: "MyBot/2 (+https://example.com/bot)"}
		},
	}
	contexts := map[string]context.Context{
		"":                   context.Background(),
		"WithAgent OtherBot": WithAgent(context.Background(), "OtherBot/3"),
	}
	for cname, mk := range configs {
		for xname, ctx := range contexts {
			for _, hdr := range []string{"", "MyBot/1.0", browser, "ExampleBot"} {
				if xname != "" || strings.HasPrefix(cname, "Agent") {
					if hdr != "" && hdr != "MyBot/1.0" {
						continue // the header does not decide
					}
				}
				tr := mk()
				name := fmt.Sprintf("%s, ctx %q, header %q", cname, xname, hdr)
				mu.Lock()
				clear(sent)
				mu.Unlock()
				refused := map[string]bool{}
				for _, g := range groups {
					path := "/" + strings.Trim(g, "*")
					if g == "*" {
						path = "/star"
					}
					req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+path, nil)
					if hdr != "" {
						req.Header.Set("User-Agent", hdr)
					}
					check := tr.CheckRequest(req)
					var checkNoUA error
					if hdr == "" {
						checkNoUA = tr.Check(ctx, req.URL)
					}
					resp, err := tr.RoundTrip(req)
					if err == nil {
						resp.Body.Close()
					} else if !errors.Is(err, ErrDisallowed) || errors.Is(err, ErrUnreachable) {
						t.Fatalf("%s: %s: %v", name, path, err)
					}
					refused[g] = err != nil
					if (check != nil) != (err != nil) || hdr == "" && (checkNoUA != nil) != (err != nil) {
						t.Errorf("%s: %s: RoundTrip %v, CheckRequest %v, Check %v", name, path, err, check, checkNoUA)
					}
				}
				if hdr != "" && (xname != "" || tr.Agent != "") {
					continue // decided by Agent or WithAgent, sent as the caller asked
				}
				// The User-Agent the pages left with names the group obeyed:
				// the one path of that group is refused, the others sent.
				mu.Lock()
				uas := map[string]bool{}
				for _, ua := range sent {
					uas[ua] = true
				}
				mu.Unlock()
				if len(uas) != 1 {
					t.Errorf("%s: pages left as %v, want one User-Agent", name, uas)
					continue
				}
				var ua string
				for ua = range uas {
				}
				want := strings.ToLower(agenttoken.Product(ua))
				if !slices.Contains(groups, want) {
					want = "*"
				}
				for _, g := range groups {
					if refused[g] != (g == want) {
						t.Errorf("%s: left as %q, so obeys %q, but refused %v", name, ua, want, refused)
						break
					}
				}
			}
		}
	}
}

func TestAgentFromUserAgent(t *testing.T) {
	mock := newMock()
	mock.RegisterResponder("GET", exampleRobots, httpmock.NewStringResponder(200,
		"User-agent: ExampleBot\nDisallow: /bot\n\nUser-agent: *\nDisallow: /star\n"))
	client := &http.Client{Transport: &Transport{NoDefaultPace: true, Base: mock}} // the zero Transport, but for Base
	do := func(ua, path string) error {
		req, _ := http.NewRequest("GET", "https://example.com"+path, nil)
		req.Header.Set("User-Agent", ua)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	bot := "Mozilla/5.0 (compatible; ExampleBot/1.0; +https://example.com/bot)"
	browser := "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"
	for _, c := range []struct {
		ua, path string
		allowed  bool
	}{
		{bot, "/bot", false}, {bot, "/star", true},
		{browser, "/bot", true}, {browser, "/star", false},
		{"", "/star", false},
		{bot, "/bot", false},
	} {
		err := do(c.ua, c.path)
		if (err == nil) != c.allowed {
			t.Errorf("%q %s: %v, want allowed=%v", c.ua, c.path, err, c.allowed)
		}
		if de, ok := errors.AsType[*DisallowedError](err); ok {
			if want := map[bool]string{true: "ExampleBot", false: "*"}[c.ua == bot]; de.Agent != want {
				t.Errorf("%q %s: Agent %q, want %q", c.ua, c.path, de.Agent, want)
			}
		}
	}
}

func TestFetchUserAgent(t *testing.T) {
	for _, c := range []struct {
		agent, header, want string
	}{
		{"ExampleBot", "Mozilla/5.0 (compatible; ExampleBot/1.0; +https://example.com/bot)", "Mozilla/5.0 (compatible; ExampleBot/1.0; +https://example.com/bot)"},
		{"ExampleBot", "", "ExampleBot"},
		{"", "ExampleBot/2.0", "ExampleBot/2.0"},
	} {
		mock := newMock()
		var got atomic.Value
		mock.RegisterResponder("GET", exampleRobots, func(req *http.Request) (*http.Response, error) {
			got.Store(req.Header.Get("User-Agent"))
			return httpmock.NewStringResponse(404, ""), nil
		})
		req, _ := http.NewRequest("GET", "https://example.com/", nil)
		if c.header != "" {
			req.Header.Set("User-Agent", c.header)
		}
		resp, err := (&Transport{NoDefaultPace: true, Base: mock, Agent: c.agent}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got.Load() != c.want {
			t.Errorf("agent %q, header %q: robots.txt fetched as %q, want %q", c.agent, c.header, got.Load(), c.want)
		}
	}
}
