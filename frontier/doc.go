// Package frontier holds the URLs of a polite crawl and hands out only
// those that may be sent now.
//
// A [Frontier] keeps one queue per site, first in first out, and hands out
// only a queue's head, only while no other URL of its site is out, and only
// once the site's turn has come. Give it the [robots.Transport] that the
// requests go through as its Turns, and set the Transport's MaxWait:
//
//	tr := &robots.Transport{Agent: "ExampleBot", MaxWait: 50 * time.Millisecond}
//	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
//		return http.ErrUseLastResponse // a redirect's Location is pushed like a link
//	}}
//	f := &frontier.Frontier{Turns: tr}
//	f.Push("https://example.com/")
//	// in each of any number of workers:
//	for {
//		u, err := f.Next(ctx) // waits for a URL that may be sent now
//		if err != nil {
//			break // frontier.ErrEmpty: nothing queued or out; or ctx's error
//		}
//		resp, err := client.Get(u)
//		// ... read resp, Push the links found ...
//		f.Answered(u, resp, err) // a 429 or 503 is retried after the site's pause; else as Done
//	}
//
// # Next blocks
//
// Next waits for a URL, as [sync.Mutex.Lock] and rate.Limiter's Wait do,
// rather than the frontier sending URLs on a channel. A channel needs a
// goroutine of the frontier's own to feed it, which must be started and
// stopped; a URL sent on it is handed out before a worker is free to take
// it, so a site's turn could pass while its URL sits in the channel, and a
// URL a worker stops waiting for would be lost in it. Next hands a URL out
// only to a caller that takes it, stops waiting when its context is done,
// and the Frontier keeps no goroutine running: a crawl under
// [testing/synctest] runs in fake time.
//
// # Sites and turns
//
// A site is an origin as a [robots.Transport] computes it (see [Origin]):
// scheme, host and port, in lower case, without the default port. Only one
// URL of a site is out at a time, paced or not: the head of its queue,
// until its Done. Done asks Turns when the site's next turn is (for the new
// head, or for the URL Done if its queue is empty), once, and the site is
// offered then; a [*robots.Transport] answers with the answer just had
// plus the site's crawl-delay, or the end of a Retry-After pause. A URL
// refused with [robots.ErrNotYet] goes back to the head of its queue, and
// its site is offered at the [robots.TurnError]'s RetryAt, or, refused while
// its robots.txt is fetched again (it expired), asked about as a new site
// (below), so that it is not offered at each short RetryAt of the fetch
// until it ends. So a site is offered
// again when its request is answered and its turn has come, never in a
// loop: each offer follows an answer or a refusal with a later time.
//
// A new site is asked about first: the Frontier asks Turns for its first
// turn on a goroutine of its own (up to Probes sites at once, those with
// the most URLs first), which for a [*robots.Transport] fetches the site's
// robots.txt and answers once it is in: its answer plus the site's
// crawl-delay. No worker waits for a robots.txt, none is sent a URL that
// would be refused for now while robots.txt is fetched, and the site's
// chain is known before its first page; the goroutine ends with the
// answer, within a minute. Without Turns, a new site is offered at once,
// a site again as soon as its request is Done, and the Transport's
// refusals for now pace it.
//
// # The longest chains first
//
// A crawl cannot end before the longest chain of one site's turns: its
// crawl-delay times the URLs it has queued. New sites are asked about
// first, most URLs first (their interval is not known before robots.txt).
// Among the sites that may be sent a request, Next hands out first those
// whose interval is still unknown (Turns failed for them, or there is no
// Turns; most URLs first), then those with the longest chain, the interval
// being what Turns gave after the site's robots.txt or latest answer. Ties
// go to the site that has been ready longest.
//
// # Refusals
//
// A URL that robots.txt refuses, by a rule or because robots.txt is
// unreachable, is counted (see [Counts]) and forgotten at its Done, not
// retried; the worker, which has the error, reports it. A crawler that
// wants it later calls Requeue instead of Done, for an unreachable
// robots.txt at [robots.DisallowedError.RetryAt]. Redirects and links stay
// the caller's: the Frontier follows nothing, and a Location is pushed
// like a link.
//
// # What an operator sees
//
// Under a Frontier with Turns, the waiting for the sites' turns is done by
// the Frontier, not by the Transport: a URL is handed out at its site's
// turn, so the Transport's Stats show next to no turn waits. [Counts]
// shows that waiting instead: Held, the sites with URLs queued that wait
// for their turn now, and Ready, those whose turn has come and that wait
// for a worker; TurnWaits and TurnWaitTime, the turns sites with
// URLs waited for and for how long (the pacing a crawl gets: crawl-delays,
// pauses, back-offs, retry delays, robots.txt fetches); IdleWaits and
// IdleTime, the calls of Next that found nothing to send yet and how long
// they waited (workers idle: more workers than sites ready). Report them
// beside the Transport's Stats (for example as gauges and counters read at
// each collection, as package otelrobots reads Stats). A crawl slowed by
// politeness shows as TurnWaitTime growing with IdleTime; one short of
// workers, as Ready sites and no idle time.
//
// # Retrying what the site deferred
//
// A page answered 429 (Too Many Requests) or 503 (Service Unavailable) is
// a response, and Done forgets it like any other. Answered, given the
// response, queues it again instead, at the head of its site's queue, to
// be handed out once the pause the answer set is over (the Transport
// keeps it, and tells it as the site's next turn: Retry-After, RateLimit,
// or its back-off) and no sooner than RetryDelay (1 s), doubling at each
// retry; after MaxRetries (3) retries it gives the URL up and counts it in
// Counts.GaveUp. A network failure that may pass (a timeout, a connection
// refused or reset) is retried the same way. A 404 or any other status, a
// refusal by robots.txt, and an error that will not pass are never
// retried. The site's other URLs wait behind the one retried: the site
// asked for a pause.
//
// # Bad input
//
// Push refuses, with an error and without queueing it, a URL that does not
// parse, is not http or https ([ErrScheme]), has no host ([ErrNoHost]), or
// is longer than [MaxURLLen] ([ErrTooLong]). Done and Requeue of a URL
// that is not out return [ErrNotOut]. Next returns ctx.Err() once ctx is
// done, at once if it is done already, and [ErrEmpty] when nothing is
// queued or out. None panics; a Next that gives up leaves nothing behind.
//
// # Duplicates: only while a URL is held
//
// Push refuses with [ErrDuplicate] a URL that is queued or out. A URL Done
// is FORGOTTEN: pushed again, it is queued again and fetched again. A
// crawler must keep its own set of the URLs it has seen, as a Frontier
// does not grow with the crawl. URLs are compared as given: the caller
// strips fragments and normalises. Duplicates are told by a 64-bit hash
// with a seed of the Frontier's own: two different URLs are taken for one
// with a chance of about n in 2⁶⁴ a Push, n URLs being held (5 in 10¹⁴ at
// a million).
//
// # Memory
//
// A Frontier holds, beyond the bytes of the URLs themselves, about 36 bytes
// a queued URL (at most 64: a slot of its site's queue, 16 to 32 bytes, and
// a slot of the hash set, 11 to 21) and 275 bytes a site (at most 320), and
// gives them back as URLs are Done, at every fill level: a site's queue
// shrinks once less than half full, the hash set once less than three
// eighths full, each to a size that leaves room before the next resize, so
// that a crawler that pushes and takes around one size pays no resize each
// time; a site is forgotten once it has nothing queued or out and its turn
// has come, and the map and heaps of sites shrink once less than half
// full. Measured over 1,000,000 URLs of 60 bytes on 10,000 sites: 36
// bytes a queued URL and 273 a site full; at half Done 48 bytes a queued
// URL beyond 320 a site (55 with the sites' bytes counted to the URLs), at
// 80% Done 38 (54) (ROBOTS_LONG_TESTS=1 go test -run TestMemory -v
// ./frontier/). A Push costs a url.Parse and a lookup, a Next and its Done
// no allocation without Turns, and a url.Parse with (go test -run '^$'
// -bench 'Push|NextDone' -benchmem ./frontier/;
// see doc/frontier.md).
//
// # Saving and restoring
//
// Save writes a snapshot of the URLs queued and out, and the totals of
// Counts, in a versioned format of about 9 bytes a URL, writing without
// the Frontier's lock; it is not a journal's compaction, as it drops the
// URLs done, which a crawler resuming from a journal needs for its set of
// seen URLs (Record to a new file compacts a journal: the URLs held, in
// the journal's format). A snapshot is lost work at a kill since the last
// Save; the journal is not. Restore adds what Save wrote to a new
// Frontier, the URLs that were out at their site's head: every URL saved
// is handed out once more, those out at the save again. Nothing else is kept: a crawler keeps its own set of the URLs
// it has seen, and the Transport (with a store that outlives the process,
// such as package boltstore) the sites' turns. A damaged, cut or foreign
// file is an error ([ErrCorrupt], [ErrVersion]) that leaves the Frontier
// as it was. Saving takes half the time of pushing the same URLs and
// writes 9 bytes a URL of 60; restoring costs a Push a URL (see
// doc/frontier.md).
//
// # Journal: resuming after a kill
//
// Record makes a Frontier write each change as it happens, a record each
// (a URL pushed, handed out, done, requeued or deferred), to a file or any
// [io.Writer]; Replay reads it back into a new Frontier after any stop, a
// SIGKILL included; OpenJournal and CloseJournal do both for a file,
// appending run after run. Done, Answered and Requeue write before they
// return (one Write each, with the records buffered since), so a kill
// loses no URL that a returned Done finished: a resumed crawl sends again
// only the URLs that were out at the kill, one a site at most. Replay
// also calls back with every URL the journal ever pushed, so that a
// crawler rebuilds its set of seen URLs, and with the crawler's notes
// (Note); Answered's retries survive too (Tries). Each record has a
// CRC-32C; a journal cut mid-record by a kill drops that record, one
// damaged elsewhere, of another crawl (Record names it), or of another
// version is an error that changes nothing; Replay's memory is what the
// journal holds at its end, however long it is. A writer that fails stops
// the crawl: Next returns an error wrapping [ErrJournal]. It costs a
// write system call per Done and about 200 bytes a URL of 60 on disk
// (see doc/frontier.md).
//
// # A fleet
//
// Each process of a fleet keeps a Frontier of its own, for the sites it
// owns: split the crawl by origin, for example process hash(Origin(u)) mod
// n, push to a Frontier only the URLs of its process's sites, and send the
// other links to their owners (by whatever queue the fleet shares). A
// site's queue then lives in one process, so it has one URL out at a time
// across the fleet, and no process is refused for another's turn. Give the
// processes' Transports a shared Pacer (see package redisstore) all the
// same: it keeps the sites' turns whatever a Frontier does.
//
// A Frontier is safe for concurrent use by multiple goroutines. It starts
// no goroutine but the probes of new sites, each of which ends with Turns'
// answer.
package frontier
