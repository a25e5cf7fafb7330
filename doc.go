// Package robots makes an [http.Client] obey robots.txt (RFC 9309).
//
// A [Transport] wraps another [http.RoundTripper]. Before it sends a request,
// it fetches the robots.txt of the request's origin (once, then from its
// cache) and either forwards the request or refuses it with a
// [*DisallowedError], which matches [ErrDisallowed]:
//
//	client := &http.Client{Transport: robots.NewTransport(nil, "ExampleBot")}
//	resp, err := client.Get("https://example.com/private/page")
//	if errors.Is(err, robots.ErrDisallowed) {
//		// robots.txt of https://example.com disallows the page for ExampleBot
//	}
//
// Every request is checked, whatever its method, and so is every redirect
// the client follows. A request for /robots.txt itself is always allowed.
// The repository's doc/ directory tells each rule at length.
//
// # Access results
//
// What the fetch of robots.txt finds decides for the whole origin (RFC 9309
// §2.3.1): a 2xx, the rules in its body (the first 500 KiB); a 3xx is
// followed up to 5 times, across hosts; a 4xx other than 429 allows every
// URL; a 429, a 5xx, a network error or an unreadable body refuses every
// URL, obeying an earlier good copy instead if there is one (and allowing
// all after 30 days without one). A copy is used for [DefaultTTL] or its
// Cache-Control max-age if shorter, and refreshed conditionally (ETag,
// Last-Modified): a 304 renews it, and a 304 to a fetch that sent no
// validator is unreachable, never permission.
//
// # Origins and product tokens
//
// An origin is a scheme, an IDNA ASCII host and a port ([OriginOf]); a
// request's origin is the authority it is sent to, its Host when set. A
// crawler obeys the group of its product token, matched case-insensitively
// (RFC 9309 §2.2.1): [Transport.Agent] or [WithAgent] names it, as a token
// or a User-Agent header ("Mozilla/5.0 (compatible; ExampleBot/1.0)"); when
// Agent is empty, each request's User-Agent does. An agent that names no
// token makes every request fail. One fetch serves every token.
//
// # Pacing
//
// Every origin is paced, with no settings: one request to it is in flight
// at a time, and the next leaves no sooner than its interval after the
// answer to the one before. The interval is the longest of the delay the
// group states (Crawl-delay, or Request-rate n/T read as T/n),
// [Transport.MinDelay], twice the origin's recent response time, and, for
// an origin that states no delay, [Transport.DefaultDelay] (1 s). A 429 or
// 503 pauses the origin for its Retry-After, or else under a [Backoff]; a
// RateLimit field (draft-ietf-httpapi-ratelimit-headers-11) pauses it when
// its quota is spent and spreads the rest when it runs low; a Visit-time
// window holds requests until it opens. A 402 is an answer, not pushback.
// [Transport.NoDefaultPace] turns off the default and adaptive delays for a
// client that is not a crawler.
//
// A server is not an origin: a request also needs room in its origin's
// groups, at most [Transport.DomainCap] (4) requests in flight to the
// origins of one registrable domain, and at most an adaptive cap at a server
// address two or more origins share.
//
// A request waits for its turn until its context is done. Under
// [Transport.MaxWait] or [WithMaxWait], one whose turn is further away is
// not sent: RoundTrip returns a [*TurnError], which matches [ErrNotYet] and
// says when to come back and why, so that a worker pool can requeue it
// (package frontier does). [Transport.NextTurn] tells the next turn without
// taking it. A [fleet.Pacer] shares turns, pauses and back-offs between
// Transports (the processes of a fleet), a [fleet.Store] the fetched files;
// [Transport.Flush] delivers what they are owed before a process exits.
//
// # What a response says
//
// The Transport decides by robots.txt alone and returns every answer as it
// came. Package pageterms reads what a response says of its own use and
// terms ([pageterms.RobotsTagOf], [pageterms.TermsOf]); [Transport.MaxPrice]
// offers a price, and [Transport.Signer] signs every request it sends (Web
// Bot Auth). Content-Usage and Content-Signal lines of robots.txt (package
// usage) never change what may be fetched: [UsageOf] and
// [Transport.CheckUsage] report them, and [Transport.Uses] refuses the
// requests marked "n" for a use the crawler makes.
package robots
