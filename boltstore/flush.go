package boltstore

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// The paces are kept in two buckets: "paces", every pace as it was at the
// last checkpoint, and "journal", one value for each flush since, that
// holds the paces it wrote (see encodeJournal), in order. A flush appends
// to the journal: it costs the bytes of what changed, not the pages of the
// snapshot where those paces are (a page of 4 KiB for each, as origins are
// spread over the pages). Once the journal holds as many bytes as the
// snapshot (and at least minCheckpoint), the next flush is a checkpoint: it
// writes every pace in memory as the new snapshot, and empties the journal;
// so the paces cost at most about twice their bytes in the file. Close ends
// with a checkpoint; Open reads the snapshot, replays the journal, and
// writes a checkpoint if the journal held anything or some paces were
// idle.

// minCheckpoint is the least size of the journal that makes a checkpoint.
const minCheckpoint = 1 << 20

// rec is the pace of an origin as a checkpoint writes it.
type rec struct {
	origin string
	v      []byte
}

// The journal: each value holds paces, each as the length of its origin
// (uvarint), its origin, the length of its pace (0 if it is deleted) and its
// pace (see appendPace).

// appendChanges appends to buf the paces changed since they were last
// written, as a value of the journal, and marks them written.
func (s *Store) appendChanges(buf []byte) []byte {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for o := range sh.dirty {
			buf = binary.AppendUvarint(buf, uint64(len(o)))
			buf = append(buf, o...)
			if p := sh.m[o]; p != nil {
				var tmp [paceMaxLen]byte
				v := appendPace(tmp[:0], p)
				buf = binary.AppendUvarint(buf, uint64(len(v)))
				buf = append(buf, v...)
			} else {
				buf = append(buf, 0)
			}
		}
		clear(sh.dirty)
		sh.mu.Unlock()
	}
	return buf
}

// allPaces returns every pace, sorted by origin, encoded in buf (which it
// returns, grown), and marks them written.
func (s *Store) allPaces(buf []byte) ([]rec, []byte) {
	var recs []rec
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for o, p := range sh.m {
			n := len(buf)
			buf = appendPace(buf, p)
			recs = append(recs, rec{origin: o, v: buf[n:len(buf):len(buf)]})
		}
		clear(sh.dirty)
		sh.mu.Unlock()
	}
	slices.SortFunc(recs, func(a, b rec) int { return cmp.Compare(a.origin, b.origin) })
	return recs, buf
}

// redirty marks the paces of origins, whose write failed, to be written
// again.
func (s *Store) redirty(origins func(yield func(string) bool)) {
	for o := range origins {
		sh := s.shard(o)
		sh.mu.Lock()
		sh.dirty[o] = struct{}{}
		sh.mu.Unlock()
	}
}

// decodeJournal calls fn with each pace of the journal value v, or nil for
// one deleted.
func decodeJournal(v []byte, fn func(origin string, pace []byte)) error {
	for len(v) > 0 {
		var f [2][]byte
		for i := range f {
			n, k := binary.Uvarint(v)
			if k <= 0 || n > uint64(len(v)-k) {
				return errors.New("journal cut short or altered")
			}
			f[i], v = v[k:k+int(n)], v[k+int(n):]
		}
		fn(string(f[0]), f[1])
	}
	return nil
}

// writeSnapshot makes recs, sorted, the paces of tx, and empties the
// journal. It returns the bytes of the paces.
func writeSnapshot(tx *bolt.Tx, recs []rec) (int64, error) {
	for _, name := range [][]byte{bucketPaces, bucketJournal} {
		if err := tx.DeleteBucket(name); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
			return 0, err
		}
		if _, err := tx.CreateBucket(name); err != nil {
			return 0, err
		}
	}
	b := tx.Bucket(bucketPaces)
	b.FillPercent = 0.9 // keys come in order: pages are not split again
	var size int64
	for _, r := range recs {
		if r.v == nil {
			continue
		}
		if err := b.Put([]byte(r.origin), r.v); err != nil {
			return 0, err
		}
		size += int64(len(r.origin) + len(r.v))
	}
	return size, nil
}

// readPaces puts the paces of tx in memory, at now: the snapshot, then the
// journal replayed. It drops those it cannot read and those that can no
// longer hold a turn back,
// fills the copy of the pauses that WatchedPause reads, and writes a
// checkpoint if the journal held anything or a pace was dropped.
func (s *Store) readPaces(tx *bolt.Tx, now int64) error {
	dropped := 0
	set := func(origin string, v []byte) {
		sh := s.shard(origin)
		if v == nil {
			delete(sh.m, origin)
			return
		}
		p, err := decodePace(v)
		if err != nil {
			s.log(slog.LevelWarn, "boltstore: dropping an unreadable pace", "path", s.path, "origin", origin, "err", err)
			delete(sh.m, origin)
			dropped++
			return
		}
		sh.m[origin] = p
	}
	var size int64
	err := tx.Bucket(bucketPaces).ForEach(func(k, v []byte) error {
		set(string(k), v)
		size += int64(len(k) + len(v))
		return nil
	})
	if err != nil {
		return err
	}
	journal := 0
	err = tx.Bucket(bucketJournal).ForEach(func(_, v []byte) error {
		journal++
		if err := decodeJournal(v, func(o string, p []byte) {
			if len(p) == 0 {
				p = nil
			}
			set(o, p)
		}); err != nil {
			s.log(slog.LevelWarn, "boltstore: dropping the rest of an unreadable journal value", "path", s.path, "err", err)
			dropped++
		}
		return nil
	})
	if err != nil {
		return err
	}
	pauses := make(map[string]pauseCopy)
	for i := range s.shards {
		sh := &s.shards[i]
		for o, p := range sh.m {
			if idle(p, now) {
				delete(sh.m, o)
				dropped++
				continue
			}
			// A turn held by the process that wrote the file still holds
			// the origin until it runs out: its request may still be
			// answered, and the hold's end is the latest turn's time.
			if c := (pauseCopy{until: int64(p.PausedUntil), heed: int64(p.HeedUntil), why: p.PauseWhy}); max(c.until, c.heed) > now {
				pauses[o] = c
			}
		}
	}
	s.pauses.Store(&pauses)
	s.snapshotBytes, s.journalBytes = size, 0
	if journal == 0 && dropped == 0 {
		return nil
	}
	recs, _ := s.allPaces(nil)
	s.snapshotBytes, err = writeSnapshot(tx, recs)
	return err
}

// flush writes the paces that changed since the last write, and the
// heartbeat, in one transaction; if final, it writes a checkpoint and
// notes that the file holds everything (see Close). It writes nothing if
// nothing changed, unless final.
func (s *Store) flush(final bool) error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	return s.flushLocked(final)
}

// flushFor writes the paces unless the change numbered g has been written.
func (s *Store) flushFor(g uint64) error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	if s.flushed >= g {
		return nil
	}
	return s.flushLocked(false)
}

// flushWithin is flushFor, bounded by ctx.
func (s *Store) flushWithin(ctx context.Context, g uint64) error {
	_, err := bounded(ctx, func() (struct{}, error) { return struct{}{}, s.flushFor(g) })
	return err
}

// flushLocked is flush; the caller holds s.flushMu.
//
// The heartbeat is the Store's time before the paces are read: every turn
// taken before it is in the file once the write is done. It renews the
// lease until which Reserve takes turns without writing first.
func (s *Store) flushLocked(final bool) error {
	g := s.gen.Load()
	if g == s.flushed && !final {
		return nil
	}
	hb := s.now()
	checkpoint := final && (g != s.flushed || s.journalBytes > 0) ||
		s.journalBytes >= max(s.snapshotBytes, minCheckpoint)
	var recs []rec
	var jv []byte
	if checkpoint {
		recs, s.buf = s.allPaces(s.buf[:0])
	} else {
		s.buf = s.appendChanges(s.buf[:0])
		jv = s.buf
	}
	var size int64
	err := s.write(func(tx *bolt.Tx) error {
		if checkpoint {
			var err error
			if size, err = writeSnapshot(tx, recs); err != nil {
				return err
			}
		} else if len(jv) > 0 {
			j := tx.Bucket(bucketJournal)
			seq, err := j.NextSequence()
			if err != nil {
				return err
			}
			if err := j.Put(binary.BigEndian.AppendUint64(nil, seq), jv); err != nil {
				return err
			}
		}
		m := tx.Bucket(bucketMeta)
		if err := m.Put(keyHeartbeat, b64(hb)); err != nil {
			return err
		}
		if final {
			return m.Put(keyClean, []byte{1})
		}
		return nil
	})
	if err != nil {
		s.redirty(func(yield func(string) bool) {
			for _, r := range recs {
				if !yield(r.origin) {
					return
				}
			}
			decodeJournal(jv, func(o string, _ []byte) { yield(o) })
		})
		s.failed(err)
		return err
	}
	if checkpoint {
		s.snapshotBytes, s.journalBytes = size, 0
	} else {
		s.journalBytes += int64(len(jv))
	}
	s.flushed = g
	s.lease.Store(hb + int64(s.cfg.lease))
	s.retryAt.Store(0)
	return nil
}

// failed notes a write that failed: the writes in the background and those
// of Reserve wait a second before they try again, and it is logged, once a
// minute at most.
func (s *Store) failed(err error) {
	now := s.now()
	s.retryAt.Store(now + int64(time.Second))
	if last := s.logged.Load(); last != 0 && now-last < int64(time.Minute) || !s.logged.CompareAndSwap(last, now) {
		return
	}
	s.log(slog.LevelWarn, "boltstore: write failed; the paces hold in memory and are written when the file takes writes again",
		"path", s.path, "err", err)
}

// run writes the paces every flush interval while they change, and compacts
// the file every compact interval, until Close.
func (s *Store) run() {
	defer close(s.done)
	tick := time.NewTicker(s.cfg.flushInterval)
	defer tick.Stop()
	next := time.Now().Add(s.cfg.compactInterval)
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		if s.now() >= s.retryAt.Load() {
			s.flush(false)
		}
		if time.Now().After(next) {
			s.compact()
			next = time.Now().Add(s.cfg.compactInterval)
		}
	}
}

// compact forgets the paces that can no longer hold a turn back (deleted
// from the file by the flush it runs), and deletes the entries expired for
// longer than their retention.
func (s *Store) compact() {
	now := s.now()
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for o, p := range sh.m {
			if idle(p, now) {
				delete(sh.m, o)
				s.changed(sh, o)
			}
		}
		sh.mu.Unlock()
	}
	s.prunePauses()
	if s.flush(false) != nil {
		return
	}
	if err := s.dropExpired(); err != nil {
		s.failed(err)
	}
}
