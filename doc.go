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
// What the fetch of robots.txt finds decides for the whole origin (RFC 9309
// §2.3.1):
//
//	2xx                      the rules in the body (its first 500 KiB) decide
//	3xx                      followed, across hosts, up to 5 times; the rules found
//	                         govern the origin that was asked; a 6th redirect: as 4xx
//	4xx except 429           unavailable: every URL is allowed
//	429, 5xx, other status,  unreachable: every URL is disallowed; retried with
//	network error, truncated back-off; an earlier good copy is obeyed instead;
//	or unreadable body       after 30 days without one, every URL is allowed
//
// An origin is a scheme, host and port: https://example.com and
// https://example.com:443 are one origin; http://example.com and
// https://shop.example.com are others. Internationalised host names are the
// same origin as their IDNA ASCII form. A request's origin is the authority
// it is sent to: its URL's scheme with its Host ([http.Request.Host]) when
// that is set, and the URL's port when the Host names none; else its URL's
// host and port. So a request to http://192.0.2.1:8080/page with Host
// shop.example is decided by the robots.txt of http://shop.example:8080,
// fetched from 192.0.2.1:8080 with the same Host, as a crawler that resolves
// names itself addresses a site. A fetched robots.txt is used for 24 hours
// ([DefaultTTL]), or for less if its Cache-Control max-age says so. The URL
// /robots.txt itself is always allowed.
//
// Every request is checked, whatever its method, and so is every redirect
// the [http.Client] follows, since the client calls RoundTrip once per hop.
//
// By default, a Transport also paces the requests to each origin by the
// crawl-delay of the group it obeys; see [Transport.IgnoreCrawlDelay].
package robots
