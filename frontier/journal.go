package frontier

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"time"
)

// JournalVersion is the version of the journal format that Record writes
// and Replay reads. Replay refuses a journal of another version with
// [ErrVersion].
const JournalVersion = 1

// journalMagic starts the payload of a journal's begin record.
const journalMagic = "robots frontier journal"

// MaxCrawlLen is the longest crawl name, in bytes, that Record accepts.
const MaxCrawlLen = 1024

// Errors of a journal. Each is wrapped with what was found.
var (
	// ErrJournal wraps the error of a journal's writer. Once a write
	// failed, the Frontier writes no more: Next and Push return the
	// error, so that no URL is sent that a resumed crawl would not know
	// of, and Done, Answered and Requeue, which still do their work,
	// return it too.
	ErrJournal = errors.New("frontier: writing the journal")
	// ErrOtherCrawl is returned by Replay for the journal of a crawl of
	// another name.
	ErrOtherCrawl = errors.New("frontier: the journal of another crawl")
)

// The kinds of a journal's records.
const (
	recBegin   = 'B' // a run begins: magic, version, crawl name
	recPush    = 'P' // a URL queued
	recOut     = 'O' // a URL handed out by Next
	recDone    = 'D' // a URL forgotten: a flag (how), the URL
	recRequeue = 'R' // a URL out back at its site's head: a flag (not yet or requeued), the URL
	recRetry   = 'T' // a URL out back at its site's head, deferred: its tries, the URL
	recNote    = 'N' // the caller's note (see Note)
)

// The flags of a done record.
const (
	doneSent        = 0
	doneRefused     = 1
	doneUnreachable = 2
	doneGaveUp      = 3
	doneNotSent     = 4 // robots.ErrNotYet given to Done, or a failure
)

// The flags of a requeue record.
const (
	requeueAsked  = 0 // Requeue, or a canceled context
	requeueNotYet = 1
)

// maxPayload bounds a record's payload: a flag or a varint, and a URL.
const maxPayload = MaxURLLen + 16

// journalFlush is how many bytes a journal buffers before it writes them
// whatever the call.
const journalFlush = 32 << 10

// journal is what a Frontier writes its changes to. Its fields are guarded
// by Frontier.mu.
type journal struct {
	w    io.Writer
	file *os.File // if opened by OpenJournal: closed by CloseJournal
	buf  []byte
	err  error // the first error of w, wrapped with ErrJournal
}

// rec appends a record of kind with payload flag (if flag >= 0) and s.
func (j *journal) rec(kind byte, flag int64, s string) {
	if j == nil || j.err != nil {
		return
	}
	start := len(j.buf)
	n := len(s)
	if flag >= 0 {
		n += uvarintLen(uint64(flag))
	}
	j.buf = append(j.buf, kind)
	j.buf = binary.AppendUvarint(j.buf, uint64(n))
	if flag >= 0 {
		j.buf = binary.AppendUvarint(j.buf, uint64(flag))
	}
	j.buf = append(j.buf, s...)
	j.buf = binary.BigEndian.AppendUint32(j.buf, crc32.Checksum(j.buf[start:], crcTable))
	if len(j.buf) >= journalFlush {
		j.flush()
	}
}

// flush writes what is buffered, and returns the journal's error.
func (j *journal) flush() error {
	if j == nil {
		return nil
	}
	if j.err == nil && len(j.buf) > 0 {
		n, err := j.w.Write(j.buf)
		if err == nil && n < len(j.buf) {
			err = io.ErrShortWrite
		}
		if err != nil {
			j.err = fmt.Errorf("%w: %w", ErrJournal, err)
		}
	}
	j.buf = j.buf[:0]
	if cap(j.buf) > 4*journalFlush {
		j.buf = nil
	}
	return j.err
}

func (j *journal) failed() error {
	if j == nil {
		return nil
	}
	return j.err
}

func uvarintLen(n uint64) int {
	k := 1
	for n >= 0x80 {
		n >>= 7
		k++
	}
	return k
}

// Record makes f write its changes to w from now on, as they happen: each
// URL pushed, handed out, done, requeued or retried, one record each, so
// that [Frontier.Replay] of what w got rebuilds f after any stop, a kill
// included. It first writes a record that names the crawl (any string of
// up to [MaxCrawlLen] bytes, such as the crawler's name and its start URLs:
// Replay refuses the journal of another) and the URLs f holds now, queued
// or out, so that what w gets is whole by itself: recording to a new file
// is how a journal is compacted (see below).
//
// The records of Push and of Next are buffered (up to 32 KB); Done,
// Answered and Requeue write them to w before they return, with their
// own, in one Write. So a crawler killed at any point loses no Done that
// returned, nor a Push before it: resumed, it sends again only the URLs
// that were out (handed out and not given back). A kill before any Done
// may lose the first pushes: Replay then finds no URL pushed
// (Replayed.Runs > 0, Pushed and Done 0), and the crawler pushes its start
// URLs again; a URL out then is sent again, as any out at a kill is. A kill loses nothing a
// file was written, as the operating system has it; a crash of the machine
// loses what was not synced (call Sync on the file as often as wanted).
// Writes happen under f's lock, in the order of the changes: a slow w
// slows every call of f.
//
// Once a Write fails, f writes nothing more, and Next and Push return an
// error wrapping [ErrJournal] and the writer's error; Done, Answered and
// Requeue do their work and return it too. A record is about 7 bytes
// beyond its URL; a URL fetched once costs three (push, out, done):
// see doc/frontier.md for the bytes a URL and the time a call.
//
// The journal grows with every URL ever pushed, which is what lets a
// crawler rebuild its set of the URLs it has seen (see Replay). To
// compact it, Record to a new file and rename it over the old once
// written (the new one has only the URLs held, not those done: a crawler
// that needs those keeps its set of seen URLs itself). Record(nil, "")
// stops recording, after writing what is buffered (and closes the file of
// OpenJournal, as CloseJournal does).
//
// Record returns the error of writing the first records, and then records
// nothing; or an error if crawl is too long.
func (f *Frontier) Record(w io.Writer, crawl string) error {
	if len(crawl) > MaxCrawlLen {
		return fmt.Errorf("frontier: crawl name of %d bytes, more than MaxCrawlLen", len(crawl))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.init()
	old := f.journal
	old.flush()
	f.journal = nil
	if old != nil && old.file != nil { // OpenJournal's: closed now
		old.file.Sync()
		old.file.Close()
	}
	if w == nil {
		return old.failed()
	}
	j := &journal{w: w}
	if err := j.begin(f, crawl); err != nil {
		return err
	}
	f.journal = j
	return nil
}

// begin writes the begin record and the URLs f holds. f.mu must be held.
func (j *journal) begin(f *Frontier, crawl string) error {
	payload := binary.AppendUvarint([]byte(journalMagic), JournalVersion)
	payload = append(payload, crawl...)
	j.rec(recBegin, -1, string(payload))
	for _, s := range f.sites {
		// The URL out, or else the head, has the site's tries.
		head := s.out
		if head == "" && s.q.n > 0 {
			head = s.q.front()
		}
		if head == "" {
			continue
		}
		j.rec(recPush, -1, head)
		if s.tries > 0 {
			j.rec(recRetry, int64(s.tries), head)
		}
		if s.out != "" {
			j.rec(recOut, -1, s.out)
		}
		for i := range s.q.n {
			if u := s.q.at(i); u != head {
				j.rec(recPush, -1, u)
			}
		}
	}
	return j.flush()
}

// record writes a record to f's journal, if any, and flushes it if flush.
// f.mu must be held.
func (f *Frontier) record(kind byte, flag int64, u string, flush bool) error {
	if f.journal == nil {
		return nil
	}
	f.journal.rec(kind, flag, u)
	if flush {
		return f.journal.flush()
	}
	return f.journal.err
}

// Replayed is what Replay found in a journal.
type Replayed struct {
	Runs   int    // the runs that wrote it (its begin records)
	Pushed int    // URLs held at its end, queued again by Replay (skipping those f held)
	Out    int    // of Pushed, those out at its end: handed out and not given back, maybe sent
	Done   uint64 // URLs done in the runs before
	// End is the size of its whole records: where the next run appends.
	// Cut is the bytes after End, of a record cut short by a stop while
	// it was written (or damaged at the very end): they are dropped.
	End, Cut int64
}

// Replay reads a journal that Record wrote to r, of the crawl named crawl,
// and adds to f what it held at its end: every URL queued or out, in its
// site's queue order, the URLs that were out at their site's head (their
// answer was not recorded: they are handed out again), each with the
// retries it had (see Answered), and the totals of [Counts] but those of
// waiting. Each URL it queues is new to f as a pushed one is: a site is
// asked about first (with Turns), and a URL retried waits its retry delay
// from now. A URL f holds already is skipped. It calls seen, if not nil,
// with each URL the journal pushed (done or not, once per push), before it
// returns: a crawler rebuilds its set of the URLs it has seen with it. It
// calls note, if not nil, with each note (see Note), in the order written.
//
// Replay reads r to its end, in bounded memory: a record is at most
// [MaxURLLen] and a few bytes, and what it holds is the URLs held at the
// point read (as f held them then), however long the journal. It changes
// nothing in f if it returns an error: one wrapping [ErrVersion] for a
// journal of another format version, [ErrOtherCrawl] for one of another
// crawl, [ErrCorrupt] for one damaged (a record's CRC-32C, a record out of
// place, a URL that Push refuses), with the byte offset of the bad record;
// or r's error. A last record cut short is not an error: it is the one a
// stop interrupted, and Replayed.Cut says how many bytes it had. Seen may
// have been called before an error: drop what it got.
//
// Replay is meant for a Frontier just made, before Record.
func (f *Frontier) Replay(r io.Reader, crawl string, seen, note func(string)) (Replayed, error) {
	type entry struct {
		origin string
		seq    uint64
		tries  uint32
		out    bool
	}
	var (
		res    Replayed
		c      Counts
		live   = make(map[string]*entry)
		peak   int
		seq    uint64
		off    int64
		br     = bufio.NewReaderSize(r, 64<<10)
		buf    []byte
		header [1 + binary.MaxVarintLen64]byte
	)
	corrupt := func(at int64, format string, args ...any) (Replayed, error) {
		return Replayed{}, fmt.Errorf("%w: the record at byte %d: %s", ErrCorrupt, at, fmt.Sprintf(format, args...))
	}
	for {
		kind, err := br.ReadByte()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Replayed{}, err
		}
		h := header[:0]
		h = append(h, kind)
		n, k, overflow, err := readUvarint(br, &h)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				if off == 0 && kind != recBegin {
					return Replayed{}, fmt.Errorf("%w: not a frontier journal", ErrCorrupt)
				}
				res.Cut = 1 + int64(k)
				break
			}
			return Replayed{}, err
		}
		if overflow {
			return corrupt(off, "a length out of range")
		}
		if kind == recBegin && off == 0 && n > uint64(len(journalMagic)+binary.MaxVarintLen64+MaxCrawlLen) ||
			n > maxPayload+uint64(len(journalMagic)) {
			if off == 0 {
				return Replayed{}, fmt.Errorf("%w: not a frontier journal", ErrCorrupt)
			}
			return corrupt(off, "a length out of range")
		}
		size := int64(len(h)) + int64(n) + 4
		buf = slices.Grow(buf[:0], int(n)+4)[:n+4]
		if k, err := io.ReadFull(br, buf); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				if off == 0 && !validBegin(kind, buf[:k]) {
					return Replayed{}, fmt.Errorf("%w: not a frontier journal", ErrCorrupt)
				}
				res.Cut = int64(len(h)) + int64(k)
				break
			}
			return Replayed{}, err
		}
		payload := buf[:n]
		if off == 0 || kind == recBegin {
			// The begin record's magic and version are checked before its
			// checksum: a newer version may frame its records otherwise.
			if kind != recBegin || len(payload) < len(journalMagic) || string(payload[:len(journalMagic)]) != journalMagic {
				if off == 0 {
					return Replayed{}, fmt.Errorf("%w: not a frontier journal", ErrCorrupt)
				}
				return corrupt(off, "a begin record without its magic")
			}
			v, k := binary.Uvarint(payload[len(journalMagic):])
			if k <= 0 || v != JournalVersion {
				return Replayed{}, fmt.Errorf("%w: journal version %d at byte %d; this package reads version %d", ErrVersion, v, off, JournalVersion)
			}
		}
		crc := crc32.Checksum(h, crcTable)
		crc = crc32.Update(crc, crcTable, payload)
		if crc != binary.BigEndian.Uint32(buf[n:]) {
			if _, err := br.Peek(1); errors.Is(err, io.EOF) {
				res.Cut = size // the last record, damaged by a stop while written
				break
			}
			return corrupt(off, "checksum mismatch")
		}
		var flag uint64
		u := payload
		switch kind {
		case recDone, recRequeue, recRetry:
			v, k := binary.Uvarint(payload)
			if k <= 0 {
				return corrupt(off, "a bad flag")
			}
			flag, u = v, payload[k:]
		}
		switch kind {
		case recBegin:
			v, k := binary.Uvarint(payload[len(journalMagic):])
			_ = v
			if name := string(payload[len(journalMagic)+k:]); name != crawl {
				return Replayed{}, fmt.Errorf("%w: %.80q, not %.80q", ErrOtherCrawl, name, crawl)
			}
			res.Runs++
			for _, e := range live {
				e.out = false // given back by the stop
			}
		case recPush:
			if live[string(u)] != nil {
				break // pushed again by a run's first records
			}
			_, origin, err := parse(string(u))
			if err != nil {
				return corrupt(off, "%v", err)
			}
			live[string(u)] = &entry{origin: origin, seq: seq}
			peak = max(peak, len(live))
			seq++
			c.Pushed++
			if seen != nil {
				seen(string(u))
			}
		case recNote:
			if note != nil {
				note(string(u))
			}
		case recOut, recDone, recRequeue, recRetry:
			e := live[string(u)]
			if e == nil {
				return corrupt(off, "a URL not pushed")
			}
			switch kind {
			case recOut:
				if e.out {
					return corrupt(off, "a URL out twice")
				}
				e.out = true
			case recDone:
				delete(live, string(u))
				live, peak = shrink(live, peak)
				c.Finished++
				switch flag {
				case doneRefused:
					c.Refused++
				case doneUnreachable:
					c.Unreachable++
				case doneGaveUp:
					c.GaveUp++
				}
			case recRequeue:
				e.out = false
				if flag == requeueNotYet {
					c.NotYet++
				} else {
					c.Requeued++
				}
			case recRetry:
				if flag > 1<<31 {
					return corrupt(off, "%d retries", flag)
				}
				if e.out {
					c.Retried++
				}
				e.out, e.tries = false, uint32(flag)
			}
		default:
			return corrupt(off, "an unknown kind %q", kind)
		}
		if res.Runs == 0 {
			return Replayed{}, fmt.Errorf("%w: not a frontier journal", ErrCorrupt)
		}
		off += size
	}
	if res.Runs == 0 && res.Cut == 0 && off == 0 {
		return res, nil // empty: a journal never written
	}
	res.End = off
	res.Done = c.Finished

	type held struct {
		u string
		e *entry
	}
	urls := make([]held, 0, len(live))
	for u, e := range live {
		urls = append(urls, held{u, e})
	}
	clear(live)
	slices.SortFunc(urls, func(a, b held) int { return cmp.Compare(a.e.seq, b.e.seq) })

	f.mu.Lock()
	defer f.mu.Unlock()
	f.init()
	now := time.Now()
	var skipped uint64
	for _, h := range urls {
		origin := h.e.origin
		_, had := f.sites[origin]
		if !f.add(h.u, origin) {
			skipped++
			continue
		}
		res.Pushed++
		if h.e.out {
			res.Out++
		}
		if fs := f.sites[origin]; h.e.tries > 0 && fs.q.n == 1 && fs.out == "" {
			fs.tries = h.e.tries
			f.record(recRetry, int64(fs.tries), h.u, false)
			if !had {
				f.holdRetry(fs, now)
			}
		}
	}
	f.counts.Pushed += c.Pushed - min(skipped, c.Pushed)
	f.counts.Finished += c.Finished
	f.counts.Refused += c.Refused
	f.counts.Unreachable += c.Unreachable
	f.counts.NotYet += c.NotYet
	f.counts.Requeued += c.Requeued
	f.counts.Retried += c.Retried
	f.counts.GaveUp += c.GaveUp
	return res, nil
}

// readUvarint reads a varint from br, and appends its bytes to raw. overflow is true if it is longer
// than 64 bits; err is br's error (io.EOF within it is io.ErrUnexpectedEOF).
// k is how many bytes it read.
func readUvarint(br *bufio.Reader, raw *[]byte) (n uint64, k int, overflow bool, err error) {
	var shift uint
	for i := range binary.MaxVarintLen64 {
		b, err := br.ReadByte()
		if err == nil {
			*raw = append(*raw, b)
		}
		if err != nil {
			if i > 0 && errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return 0, i, false, err
		}
		if b < 0x80 {
			if i == binary.MaxVarintLen64-1 && b > 1 {
				return 0, i + 1, true, nil
			}
			return n | uint64(b)<<shift, i + 1, false, nil
		}
		n |= uint64(b&0x7f) << shift
		shift += 7
	}
	return 0, binary.MaxVarintLen64, true, nil
}

// validBegin reports whether p, the start of a first record of kind, may
// be a begin record cut short.
func validBegin(kind byte, p []byte) bool {
	if kind != recBegin {
		return false
	}
	m := min(len(p), len(journalMagic))
	return string(p[:m]) == journalMagic[:m]
}

// Note writes note, a string of up to [MaxURLLen] bytes, to f's journal,
// in order with its changes: what a crawler keeps of its own beside the
// URLs (a start URL reached by a redirect, a limit reached), which Replay
// gives back. Like a Push, it is written to the journal's writer with the
// next Done, Answered or Requeue. Note does nothing if f has no journal;
// it returns the journal's error, if its writer failed.
func (f *Frontier) Note(note string) error {
	if len(note) > MaxURLLen {
		return fmt.Errorf("frontier: a note of %d bytes, more than MaxURLLen", len(note))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.record(recNote, -1, note, false)
}

// JournalCrawl returns the name of the crawl whose journal r is (see
// Record), read from its first record, or an error wrapping [ErrVersion]
// or [ErrCorrupt] (r is not a journal, or is cut within its first record),
// or r's error. It reads at most the first record.
func JournalCrawl(r io.Reader) (string, error) {
	br := bufio.NewReaderSize(r, 2<<10)
	kind, err := br.ReadByte()
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	var raw []byte
	n, _, overflow, err := readUvarint(br, &raw)
	if kind != recBegin || overflow || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		n > uint64(len(journalMagic)+binary.MaxVarintLen64+MaxCrawlLen) {
		return "", fmt.Errorf("%w: not a frontier journal", ErrCorrupt)
	}
	if err != nil {
		return "", err
	}
	payload := make([]byte, n+4)
	if _, err := io.ReadFull(br, payload); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return "", fmt.Errorf("%w: not a frontier journal, or cut short", ErrCorrupt)
		}
		return "", err
	}
	payload, sum := payload[:n], payload[n:]
	if len(payload) < len(journalMagic) || string(payload[:len(journalMagic)]) != journalMagic {
		return "", fmt.Errorf("%w: not a frontier journal", ErrCorrupt)
	}
	v, k := binary.Uvarint(payload[len(journalMagic):])
	if k <= 0 || v != JournalVersion {
		return "", fmt.Errorf("%w: journal version %d; this package reads version %d", ErrVersion, v, JournalVersion)
	}
	crc := crc32.Update(crc32.Checksum(append([]byte{kind}, raw...), crcTable), crcTable, payload)
	if crc != binary.BigEndian.Uint32(sum) {
		return "", fmt.Errorf("%w: the record at byte 0: checksum mismatch", ErrCorrupt)
	}
	return string(payload[len(journalMagic)+k:]), nil
}

// OpenJournal is Replay and Record for a journal kept in the file at path,
// which it creates if it does not exist: it replays what the file holds
// (see Replay; nothing if it is new or empty), drops a last record cut
// short, and appends f's changes to it from then on, beginning with a
// record of the run and the URLs f holds. The file keeps the records of
// every run, and so every URL the crawl ever pushed, for seen. Close it
// with CloseJournal. A file that Replay refuses is left as it was, and
// OpenJournal returns Replay's error with the file's path.
//
// One process at a time may use a journal's file: the caller keeps others
// out (a crawl that keeps its state in a boltstore file does, as that file
// is locked).
func (f *Frontier) OpenJournal(path, crawl string, seen, note func(string)) (Replayed, error) {
	file, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return Replayed{}, err
	}
	res, err := f.Replay(file, crawl, seen, note)
	if err != nil {
		file.Close()
		return Replayed{}, fmt.Errorf("%s: %w", path, err)
	}
	if res.Cut > 0 {
		if err := file.Truncate(res.End); err != nil {
			file.Close()
			return Replayed{}, err
		}
	}
	if _, err := file.Seek(res.End, io.SeekStart); err != nil {
		file.Close()
		return Replayed{}, err
	}
	if err := f.Record(file, crawl); err != nil {
		file.Close()
		return Replayed{}, err
	}
	f.mu.Lock()
	f.journal.file = file
	f.mu.Unlock()
	return res, nil
}

// CloseJournal stops recording, and, if OpenJournal opened the journal's
// file, writes what is buffered, syncs it to the disk and closes it. It
// returns the journal's first error. It does nothing if f has no journal.
func (f *Frontier) CloseJournal() error {
	f.mu.Lock()
	j := f.journal
	f.journal = nil
	err := j.flush()
	f.mu.Unlock()
	if j == nil || j.file == nil {
		return err
	}
	serr := j.file.Sync()
	cerr := j.file.Close()
	return cmp.Or(err, serr, cerr)
}
