// Package boltstore keeps what a crawler knows of each origin in a file, so
// that it survives a restart: the cached robots.txt entries and the pace of
// each origin (its turns, pauses and back-offs), on bbolt
// (go.etcd.io/bbolt), for the crawler of one machine. For a fleet of
// processes that share one pace, use redisstore.
//
// A [Store] is a [fleet.Store], a [fleet.Locker] and a [fleet.Pacer]:
//
//	st, err := boltstore.Open(filepath.Join(dir, "robots.db"))
//	if err != nil {
//		return err // another process has it (ErrLocked), or it is not whole (ErrCorrupt)
//	}
//	defer st.Close()
//	t := robots.NewTransport(nil, "ExampleBot")
//	t.Store, t.Pacer = st, st
//
// # What survives
//
// Across a clean exit (Close) and a crash alike:
//
//   - each robots.txt entry, with its expiry, its access result, its
//     failures and the time its origin became unreachable: Put writes it,
//     synced to the disk, before it returns. An entry is kept for
//     WithRetain (30 days) after it expires, so that the last good copy is
//     obeyed while its origin is unreachable, and the entries are bounded
//     by WithMaxEntries and WithMaxBytes;
//   - each origin's pace: after a restart no origin is sent a request
//     sooner than its interval after the last one sent to it before;
//   - pauses (Retry-After) and back-offs, with their ends and levels.
//
// # Cost
//
// The paces live in memory, as redisstore keeps them in Redis, with the
// same rules (see Store.Reserve). A request to a cached origin with no
// interval to keep costs the Store a lookup in a map in memory
// (WatchedPause): no Reserve, no I/O. A paced request costs a Reserve and a
// Release in memory, and its share of a write: a flusher appends the paces
// that changed to a journal in the file, every 100 ms while they change, in
// one transaction with a heartbeat, about 50 bytes a pace; once the journal
// is as large as the last snapshot of the paces, a checkpoint writes a new
// one. Put and Get are a transaction each (Put syncs to the disk); Pause
// and PushBack write before they return; pauses are rare.
//
// # Recovery after a crash
//
// A crash loses the turns taken since the last write. The rule that keeps
// recovery polite: every write holds a heartbeat, the Store's time when it
// read the paces; and no turn is taken more than a lease (1 s) after the
// heartbeat in the file, since the first Reserve after a lease without a
// write writes the file itself before it returns. So every turn a crash
// lost was taken before the heartbeat plus the lease. After an unclean exit
// (the file was not closed, or its last write failed), Open takes every
// origin, known to the file or not, to have had a turn at that time, with
// the interval it kept: the first request to an origin with an interval
// waits until the interval after it, and one with none goes at once. A turn
// that held its origin (a request in flight when the process died) and was
// written keeps it until the end of its hold (Transport.TurnTimeout after
// it, a minute by default), as a Pacer shared by a fleet does when a holder
// dies, and the next turn is an interval after that. A turn taken in the
// last 100 ms before the crash was not written: its request counts as
// answered at the heartbeat plus the lease, most often about a second
// after the crash; a site slower than that to answer a request whose
// crawler died may see the next one before its answer. A file written by a
// Store that cannot write (a disk full, a file system turned read-only)
// falls behind: see below.
//
// The Store's clock is the wall clock at Open, moved on by the monotonic
// clock: setting the clock while a Store is open moves no turn. If the
// wall clock at Open is earlier than the heartbeat in the file (the clock
// was set back), the Store's clock starts at the heartbeat.
//
// # The file
//
// One process at a time: bbolt locks the file, and Open fails within a
// second with an error that matches ErrLocked if another process (or
// another Store) has it. A file that is empty, cut short, of random bytes,
// a bbolt file of another program, or otherwise unreadable makes Open fail
// with an error that matches ErrCorrupt and names the file; delete the file
// to start afresh (the crawl then fetches each robots.txt again, and paces
// each origin from its first request). A page that bbolt cannot read later
// makes the method that reads it fail with such an error instead of a panic.
//
// The file does not grow without bound: entries expired for longer than
// their retention are deleted when a Put runs and every minute, paces that
// can no longer hold a request back (their latest turn a minute or its
// interval past, their pause ended, their back-off forgiven) are deleted
// every minute and skipped by Open, and bbolt reuses the pages they free.
//
// If a write fails (a disk full, a file system remounted read-only), Put,
// Pause and PushBack return the error, which a Transport logs before it
// goes on in memory, as with a failing Redis; Reserve and Release go on in
// memory, and the writes in the background are tried again every second
// and logged (WithLogger), until the file takes them. A crash meanwhile
// recovers from the last write that succeeded.
package boltstore
