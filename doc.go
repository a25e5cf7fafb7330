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
// the client follows; /robots.txt itself is always allowed. The
// repository's doc/ directory tells each rule at length.
//
// What the fetch of robots.txt finds decides for the whole origin (RFC 9309
// §2.3.1): a 2xx, its rules; a 3xx is followed, up to 5 times; a 4xx other
// than 429 allows every URL; a 429, a 5xx or no answer refuses every URL,
// or obeys an earlier good copy. A copy lasts [DefaultTTL] or its max-age,
// and is revalidated (a 304 to no validator is unreachable, never
// permission). An origin is a scheme, an IDNA host and a port ([OriginOf]).
// A crawler obeys the group of its product token, which [Transport.Agent],
// [WithAgent] or each request's User-Agent names.
//
// # Pacing
//
// Every origin is paced, with no settings: one request to it is in flight
// at a time, and the next leaves no sooner than its interval after the
// answer to the one before: the longest of the delay robots.txt states
// (Crawl-delay, Request-rate), [Transport.MinDelay], twice the origin's
// recent response time, and, if it states none, [Transport.DefaultDelay]
// (1 s). A request also needs room in its origin's groups: at most
// [Transport.DomainCap] in flight to one registrable domain, and an
// adaptive cap at a server address origins share. A 429 or 503 pauses the
// origin for its Retry-After, or under a [Backoff]; a RateLimit field
// pauses it or spreads its quota; a Visit-time window holds requests until
// it opens; a 402 is an answer, not pushback. [Transport.NoDefaultPace]
// turns off the default and adaptive delays for a client that is not a
// crawler.
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
