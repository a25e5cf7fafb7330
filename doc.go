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
//
// # Access results
//
// What the fetch of robots.txt finds decides for the whole origin (RFC 9309
// §2.3.1):
//
//	2xx                   the rules in the body (its first 500 KiB) decide
//	3xx                   followed, across hosts, up to 5 times; the rules
//	                      found govern the origin asked; a 6th: as 4xx
//	4xx except 429        unavailable: every URL is allowed
//	429, 5xx, any other   unreachable: every URL is disallowed; an earlier
//	status, network       good copy is obeyed instead; after 30 days
//	error, unreadable     without one, every URL is allowed
//	body
//
// A fetched robots.txt is used for 24 hours ([DefaultTTL]), or for its
// Cache-Control max-age if that is shorter, but at least a minute. An
// unreachable one is fetched again after a minute, then after twice as long
// at each failure, up to an hour (or as long as a Retry-After header asks,
// up to the TTL).
//
// # Origins
//
// An origin is a scheme, host and port: https://example.com and
// https://example.com:443 are one origin; http://example.com and
// https://shop.example.com are others. A host name is the same origin as its
// IDNA ASCII form. A request's origin is the authority it is sent to: its
// Host ([http.Request.Host]) when that is set, else its URL's host. So a
// request to http://192.0.2.1:8080/page with Host shop.example is decided by
// the robots.txt of http://shop.example:8080, fetched from 192.0.2.1:8080
// with that Host.
//
// # Product tokens
//
// A crawler obeys the robots.txt group of its product token, such as
// ExampleBot, matched case-insensitively (RFC 9309 §2.2.1). [Transport.Agent]
// and [WithAgent] take a token or a User-Agent header that names one; when
// Agent is empty, each request's token is read from its User-Agent header.
// The token of a header is:
//
//   - the first name after "compatible" in a parenthesised comment, as in
//     "Mozilla/5.0 (compatible; ExampleBot/1.0; +https://example.com/bot)";
//   - else the first product outside comments, as in "ExampleBot/1.0";
//   - cut to its leading letters, digits, '-' and '_'; browsers' product
//     names (Mozilla, AppleWebKit, Chrome, Safari, Gecko, …) do not count.
//
// A header that names no token obeys the "*" group. A request without a
// User-Agent is decided as it leaves: as the token of [Transport.UserAgent];
// else, when Base is an [*http.Transport], as Go-http-client; else by the
// "*" group. An Agent that names no token, such as "/1.0" or "My Crawler",
// is an error, however the Transport was made: every request fails, and
// nothing is sent. So is an empty agent given to [NewTransport] or
// [WithAgent].
// One fetch of robots.txt serves every token: the file is cached, not the
// verdicts.
//
// # Pacing
//
// Every origin is paced, with no settings: one request to it is in flight
// at a time, and the next leaves no sooner than its interval after the
// answer to the one before (its response headers, or its error), so that
// the site sees them an interval apart however long each took; origins
// slow each other down only through their groups (below). The interval is the longest of the delay the
// group the crawler obeys states (Crawl-delay, or Request-rate n/T read as
// T/n; up to a day, [Transport.MaxCrawlDelay]), [Transport.MinDelay], and
// an adaptive delay of twice the origin's recent response time; and, for
// an origin that states no delay, [Transport.DefaultDelay], 1 s unless set.
// A site that states a delay, even a short one, is paced by it instead of
// the default. A request whose answer does not come holds its origin for
// [Transport.TurnTimeout] at most. A fetch of robots.txt is a request like
// any other: it waits for its turn, spaced by the longest interval known
// for the origin, and the request after it is spaced from its answer.
//
// This default changes what a Transport did before it, when an origin that
// stated no Crawl-delay was not paced at all. A client that is not a
// crawler (an API client, or tests on the real clock) gets that back with
// [Transport.NoDefaultPace], which turns off the default and the adaptive
// delay and keeps robots.txt, stated delays, pauses and the back-off. Tests
// under testing/synctest pay no wall time for the pace.
//
// A server is not an origin: many origins may share one registrable domain
// (a.example.co.uk, b.example.co.uk) or one server address (a shared host,
// a CDN). A request also needs room in its origin's groups: at most
// [Transport.DomainCap] (4) requests in flight together to the origins of a
// registrable domain, and, at an address two or more origins share (learned
// from the connection), at most the address's cap, which starts at 4, grows
// while the address answers quickly and halves when it pushes back or slows
// down, up to [Transport.AddressCap] (64). NoDomainCap and NoAddressCap turn
// them off; GroupOf and UncappedPrefixes adjust them.
//
// A 429 or 503 response pauses its origin: nothing is sent to it meanwhile,
// robots.txt included. With a Retry-After header, for as long as it asks (up
// to a day, [Transport.MaxRetryAfter]); else with a RateLimit field, as it
// asks (below); else under a [Backoff]: a minute at the first
// incident, doubling at each new one up to a day, forgiven an hour after the
// last pause ended, and one request at a time until then. Answers to the
// requests of one burst are one incident. A RateLimit response field
// (draft-ietf-httpapi-ratelimit-headers-11) is read on any answer: r=0
// pauses the origin for t seconds, and a low quota r=n spaces the next
// request t/n after the answer. A cap that shortens what a site asked for
// is logged.
//
// A request waits for its turn until its context is done. Under
// [Transport.MaxWait] or [WithMaxWait], a request whose turn is further away
// is not sent: RoundTrip returns at once a [*TurnError], which matches
// [ErrNotYet] and says when to come back and why (its Reason), and the
// request takes no turn. So a worker pool can requeue it and serve the
// origins that are ready (package frontier does this).
// [Transport.NextTurn] says when an origin's next turn is, without taking it.
//
// A [fleet.Pacer] shares the turns, pauses and back-offs of each origin between
// Transports, for example across the processes of a fleet, so that the site
// sees one request at a time from all of them; a [fleet.Store] shares the fetched
// files.
//
// # Usage preferences
//
// A robots.txt may say how what is crawled may be used: Content-Usage lines
// (draft-ietf-aipref-attach) and Content-Signal lines, read by package
// usage. They never change what may be fetched. [UsageOf] returns the
// preference for a response, [Transport.CheckUsage] for a URL; set
// [Transport.Uses] to refuse, before they are sent, the requests whose URL
// is marked "n" for a use the crawler makes (a search engine names "search"
// alone, which overrides train-ai and ai-use, draft-ietf-aipref-vocab-08
// §4.3). [Transport.UseTokens] also reads the groups of a policy token as
// what a site says of a use (draft-kelley-aipref-training-preference-signal).
package robots
