// Package pageterms reads what a site says of each page in its answer: the
// Robots-Tag and X-Robots-Tag rules for the crawler (draft-illyes-repext-03),
// a pay-per-crawl price, charge or error, a License challenge (RSL 1.0), an
// x402 payment requirement, and the targets of Link rel="license".
//
// [RobotsTagOf] returns the Robots-Tag rules for the crawler that sent the
// request; [TermsOf] the terms of payment and licenses. Both read only the
// response's header, in one call: they neither read nor close the body, work
// on a response from any client, whether or not a robots.Transport sent it,
// and cost nothing to a caller who does not call them. Every field is read
// within a bound; what is malformed is left out, never guessed at
// (RobotsTag.Malformed counts it; Terms.PriceInvalid keeps a malformed price).
//
// What to do with a page (index it, quote it, follow its links, pay, license
// it, give up) is the caller's decision. Nothing here changes what a
// robots.Transport sends: it decides by robots.txt alone, returns every
// answer as it came, and treats a 402 as an answer, not pushback. Its
// MaxPrice field, the one price it offers, is read by [ParsePrice].
//
// Everything here is safe for concurrent use: the functions keep no state.
package pageterms
