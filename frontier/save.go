package frontier

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"hash/maphash"
	"io"
	"strconv"
	"strings"
	"time"
)

// FormatVersion is the version of the format Save writes and Restore reads.
// Restore refuses a file of another version with [ErrVersion].
const FormatVersion = 1

// magic starts a saved frontier, followed by the format's version in
// decimal and a newline: "robots frontier 1\n".
const magic = "robots frontier "

// Errors of Restore. Each is wrapped with what was found.
var (
	ErrVersion = errors.New("frontier: saved by another version of the format")
	ErrCorrupt = errors.New("frontier: not a saved frontier, damaged, or cut short")
)

// crcTable is CRC-32C, which the file's last 4 bytes hold of the bytes
// after its first line.
var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Save writes what f holds to w, in a format Restore reads back: every URL
// queued and every URL out (handed out by Next and not yet Done), each
// site's URLs in its queue's order with the URL out at its head, the
// retries its head has had (see Answered), and the totals of [Counts] but
// those of waiting (TurnWaits, TurnWaitTime, IdleWaits, IdleTime), which
// are the running process's. Nothing else is saved: a Frontier keeps no set of the URLs it
// has seen beyond those queued or out (a crawler that keeps one saves it
// itself), and no site's turn (the [robots.Transport] and its
// [fleet.Pacer] or [fleet.Store] keep those, and a restored site is asked
// about again as a new one, see the package doc).
//
// Save copies the URLs' references under f's lock, which it holds for
// about 10 ms a million URLs, and writes without it: workers go on while w
// is written, and what is saved is f as it was at the copy. It holds 16
// bytes a URL more for as long as it writes. The file is about 12 bytes a
// URL of 60 bytes (the URLs of a site share their prefix); see
// doc/frontier.md. It returns the first error of w.
//
// Save may be called at any time, from any goroutine, as often as needed
// (for example every minute, to a new file renamed over the last once
// written and synced, so that a kill while writing keeps the one before).
func (f *Frontier) Save(w io.Writer) error {
	f.mu.Lock()
	c := f.counts
	type saved struct {
		urls  []string
		tries uint32
	}
	sites := make([]saved, 0, len(f.sites))
	for _, s := range f.sites {
		n := s.q.n
		if s.out != "" {
			n++
		}
		if n == 0 {
			continue
		}
		urls := make([]string, 0, n)
		if s.out != "" {
			urls = append(urls, s.out)
		}
		for i := range s.q.n {
			urls = append(urls, s.q.at(i))
		}
		sites = append(sites, saved{urls, s.tries})
	}
	f.mu.Unlock()

	bw := bufio.NewWriterSize(w, 64<<10)
	if _, err := bw.WriteString(magic + strconv.Itoa(FormatVersion) + "\n"); err != nil {
		return err
	}
	e := encoder{w: bw, crc: crc32.New(crcTable)}
	for _, n := range []uint64{c.Pushed, c.Finished, c.Refused, c.Unreachable, c.NotYet, c.Requeued, c.Retried, c.GaveUp} {
		e.uint(n)
	}
	var total uint64
	for _, st := range sites {
		urls := st.urls
		e.uint(uint64(len(urls)))
		e.uint(uint64(st.tries))
		prev := ""
		for _, u := range urls {
			p := min(commonPrefix(prev, u), len(u)-minSuffix(len(u)))
			e.uint(uint64(p))
			e.uint(uint64(len(u) - p))
			e.write(u[p:])
			prev = u
		}
		total += uint64(len(urls))
	}
	e.uint(0) // no more sites
	e.uint(total)
	e.flushCRC()
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], e.crc.Sum32())
	if _, err := bw.Write(sum[:]); err != nil {
		return err
	}
	return bw.Flush()
}

// encoder writes varints and bytes to w, and hashes them.
type encoder struct {
	w   *bufio.Writer
	crc hash.Hash32
	buf []byte // written, not yet hashed
}

func (e *encoder) uint(n uint64)  { e.buf = binary.AppendUvarint(e.buf, n); e.spill() }
func (e *encoder) write(s string) { e.buf = append(e.buf, s...); e.spill() }

func (e *encoder) spill() {
	if len(e.buf) >= 32<<10 {
		e.flushCRC()
	}
}

// flushCRC hashes and writes what is buffered. The bufio.Writer keeps its
// first error, which Save returns.
func (e *encoder) flushCRC() {
	e.crc.Write(e.buf)
	e.w.Write(e.buf)
	e.buf = e.buf[:0]
}

// minSuffix is the fewest bytes of a URL of n bytes that are written out,
// not shared with the URL before: 1 in 32. So a saved frontier decodes to
// at most 32 times its bytes, and Restore's memory is bounded by what it
// reads.
func minSuffix(n int) int { return (n + 31) / 32 }

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// Restore adds to f what Save wrote to r: every URL saved goes to the tail
// of its site's queue, in the order saved, the URLs that were out at their
// site's head (they are handed out again, since their answer was not
// known: a crawler killed mid-request fetches those again), and the saved
// totals are added to f's [Counts]. A restored site is new to f: with
// Turns, it is asked about first (see the package doc), so that no URL is
// handed out before its site's turn as the Transport keeps it, nor, if the
// site deferred it (see Answered), before its retry delay has passed since
// the Restore (the time of the answer is not saved). A URL that f already
// holds is skipped, and not counted again in Pushed. Restore is meant for a Frontier just made,
// with its Turns and Probes set; it may be called on one in use.
//
// Restore returns an error wrapping [ErrVersion] if r was saved in another
// format version, or [ErrCorrupt] if r is not a saved frontier, is damaged
// (its checksum, a URL that Push refuses) or cut short; r's read error if
// r fails. It then changes nothing in f. It reads r to its saved end and
// holds what it read until then, as f then holds it: URLs of at most 32
// times the bytes read (a URL's bytes shared with the one before are
// written once), and never more than [MaxURLLen] bytes ahead of them.
func (f *Frontier) Restore(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	line, err := br.ReadSlice('\n')
	if err != nil || !bytes.HasPrefix(line, []byte(magic)) {
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
		return fmt.Errorf("%w: it does not start with %q", ErrCorrupt, magic)
	}
	v := strings.TrimSuffix(string(line[len(magic):]), "\n")
	if n, err := strconv.Atoi(v); err != nil || n != FormatVersion {
		return fmt.Errorf("%w: version %.20q; this package reads version %d", ErrVersion, v, FormatVersion)
	}
	d := decoder{r: br, crc: crc32.New(crcTable)}
	var c Counts
	for _, p := range []*uint64{&c.Pushed, &c.Finished, &c.Refused, &c.Unreachable, &c.NotYet, &c.Requeued, &c.Retried, &c.GaveUp} {
		*p = d.uint()
	}
	type site struct {
		origin string
		urls   []string
		tries  uint32
	}
	var sites []site
	var total uint64
	for d.err == nil {
		n := d.uint()
		if n == 0 || d.err != nil {
			break
		}
		var s site
		if tries := d.uint(); tries > 1<<31 {
			d.fail(fmt.Errorf("%w: %d retries", ErrCorrupt, tries))
		} else {
			s.tries = uint32(tries)
		}
		prev := ""
		for i := uint64(0); i < n && d.err == nil; i++ {
			p, k := d.uint(), d.uint()
			if d.err != nil {
				break
			}
			if p > uint64(len(prev)) || k > MaxURLLen || p+k > MaxURLLen || k < uint64(minSuffix(int(p+k))) {
				d.fail(fmt.Errorf("%w: URL %d: lengths out of range", ErrCorrupt, total+i+1))
				break
			}
			u := d.string(prev[:p], int(k))
			if d.err != nil {
				break
			}
			_, origin, err := parse(u)
			if err != nil {
				d.fail(fmt.Errorf("%w: URL %d: %v", ErrCorrupt, total+i+1, err))
				break
			}
			if s.origin == "" {
				s.origin = origin
			}
			s.urls = append(s.urls, u)
			prev = u
		}
		total += uint64(len(s.urls))
		if d.err == nil {
			sites = append(sites, s)
		}
	}
	if d.err == nil {
		if n := d.uint(); d.err == nil && n != total {
			d.fail(fmt.Errorf("%w: %d URLs read, %d saved", ErrCorrupt, total, n))
		}
	}
	if d.err == nil {
		d.flushCRC()
		var sum [4]byte
		if _, err := io.ReadFull(br, sum[:]); err != nil {
			d.fail(err)
		} else if binary.BigEndian.Uint32(sum[:]) != d.crc.Sum32() {
			d.fail(fmt.Errorf("%w: checksum mismatch", ErrCorrupt))
		}
	}
	if d.err != nil {
		if errors.Is(d.err, io.EOF) || errors.Is(d.err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w: cut short after %d URLs", ErrCorrupt, total)
		}
		return d.err
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	f.init()
	var skipped uint64
	now := time.Now()
	for _, s := range sites {
		_, held := f.sites[s.origin]
		for i, u := range s.urls {
			if !f.add(u, s.origin) {
				skipped++
				continue
			}
			// The saved retries are its head's; a site with a URL out
			// keeps that URL's.
			if fs := f.sites[s.origin]; i == 0 && fs.q.n == 1 && fs.out == "" {
				fs.tries = s.tries
				if !held && s.tries > 0 {
					f.holdRetry(fs, now)
				}
			}
		}
	}
	f.counts.Pushed += c.Pushed - min(skipped, c.Pushed) // a URL held already is counted once
	f.counts.Finished += c.Finished
	f.counts.Refused += c.Refused
	f.counts.Unreachable += c.Unreachable
	f.counts.NotYet += c.NotYet
	f.counts.Requeued += c.Requeued
	f.counts.Retried += c.Retried
	f.counts.GaveUp += c.GaveUp
	return nil
}

// decoder reads varints and bytes from r, and hashes them. Its first error
// sticks.
type decoder struct {
	r   *bufio.Reader
	crc hash.Hash32
	buf []byte // read, not yet hashed
	err error
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *decoder) uint() uint64 {
	if d.err != nil {
		return 0
	}
	n, err := binary.ReadUvarint(byteReader{d})
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		} else if !errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		d.fail(err)
		return 0
	}
	return n
}

// string returns prefix followed by the next k bytes.
func (d *decoder) string(prefix string, k int) string {
	var b strings.Builder
	b.Grow(len(prefix) + k)
	b.WriteString(prefix)
	for k > 0 && d.err == nil {
		p, err := d.r.Peek(min(k, d.r.Size()))
		if len(p) == 0 {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			d.fail(err)
			break
		}
		b.Write(p)
		d.hash(p)
		d.r.Discard(len(p))
		k -= len(p)
	}
	return b.String()
}

func (d *decoder) hash(p []byte) {
	d.buf = append(d.buf, p...)
	if len(d.buf) >= 32<<10 {
		d.flushCRC()
	}
}

func (d *decoder) flushCRC() {
	d.crc.Write(d.buf)
	d.buf = d.buf[:0]
}

// byteReader reads bytes for binary.ReadUvarint, hashing them.
type byteReader struct{ d *decoder }

func (b byteReader) ReadByte() (byte, error) {
	c, err := b.d.r.ReadByte()
	if err == nil {
		b.d.hash([]byte{c})
	}
	return c, err
}

// add queues u, of origin, as Push does, unless it is held already. f.mu
// must be held, and f.init called.
func (f *Frontier) add(u, origin string) bool {
	if !f.in.add(maphash.String(f.seed, u)) {
		return false
	}
	f.record(recPush, -1, u, false)
	f.queued++
	s := f.sites[origin]
	if s == nil {
		s = &site{origin: origin}
		f.sites[origin] = s
		f.sitesPeak = max(f.sitesPeak, len(f.sites))
		s.q.push(u)
		if f.Turns == nil {
			f.makeReady(s)
			return true
		}
		s.state, s.seq = fresh, f.seq
		f.seq++
		heap.Push(&f.fresh, s)
		f.probe()
		return true
	}
	s.q.push(u)
	switch s.state {
	case ready:
		heap.Fix(&f.ready, s.i) // a longer chain
	case fresh:
		heap.Fix(&f.fresh, s.i)
	}
	return true
}

// holdRetry holds s, a site just restored whose head was retried, for the
// head's retry delay from now: the time of the answer that deferred it is
// not saved, and now is no sooner. f.mu must be held.
func (f *Frontier) holdRetry(s *site, now time.Time) {
	at := now.Add(f.retryDelay(s.tries))
	switch s.state {
	case ready: // no Turns: it was made ready at once
		heap.Remove(&f.ready, s.i)
		f.schedule(s, at, now)
	default: // fresh or being asked about: ask holds it until due
		s.due = at
	}
}
