package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/f9014239/robots/fleet"
	"github.com/f9014239/robots/internal/pacing"
)

// An entry is kept as: a version byte (entryVersion), Expires as 8 bytes
// (big-endian Unix ns; 0 for the zero time), so that it can be read alone
// (see expiresOf), the Access byte, FetchedAt and UnreachableSince (varint
// Unix ns, 0 for the zero time), Failures (uvarint), the length of Error
// (uvarint) and Error, and the Body to the end. Version 2, written for an
// entry with validators, has the length of ETag (uvarint) and ETag, and the
// length of LastModified and LastModified, between Error and the Body; an
// entry without them is written as version 1, which earlier versions read.
const (
	entryVersion   = 1
	entryVersionV2 = 2
)

// entryHeader is the length of the part of an entry read by expiresOf.
const entryHeader = 1 + 8

// unixNano returns t in Unix ns, or 0 for the zero time.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromUnixNano is the inverse of unixNano.
func fromUnixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// encodeEntry returns the bytes that keep e.
func encodeEntry(e *fleet.Entry) []byte {
	validators := e.ETag != "" || e.LastModified != ""
	b := make([]byte, 0, entryHeader+1+5*binary.MaxVarintLen64+len(e.Error)+len(e.ETag)+len(e.LastModified)+len(e.Body))
	if validators {
		b = append(b, entryVersionV2)
	} else {
		b = append(b, entryVersion)
	}
	b = binary.BigEndian.AppendUint64(b, uint64(unixNano(e.Expires)))
	b = append(b, byte(e.Access))
	b = binary.AppendVarint(b, unixNano(e.FetchedAt))
	b = binary.AppendVarint(b, unixNano(e.UnreachableSince))
	b = binary.AppendUvarint(b, uint64(max(e.Failures, 0)))
	b = binary.AppendUvarint(b, uint64(len(e.Error)))
	b = append(b, e.Error...)
	if validators {
		b = binary.AppendUvarint(b, uint64(len(e.ETag)))
		b = append(b, e.ETag...)
		b = binary.AppendUvarint(b, uint64(len(e.LastModified)))
		b = append(b, e.LastModified...)
	}
	return append(b, e.Body...)
}

// expiresOf returns the Expires of the entry v, in Unix ns.
func expiresOf(v []byte) (int64, bool) {
	if len(v) < entryHeader || (v[0] != entryVersion && v[0] != entryVersionV2) {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(v[1:])), true
}

var errShort = errors.New("cut short")

// decodeEntry returns the entry that v keeps, copied out of v, or an error
// that matches ErrUnreadable.
func decodeEntry(v []byte) (*fleet.Entry, error) {
	exp, ok := expiresOf(v)
	if !ok {
		return nil, fmt.Errorf("%w: format %d", ErrUnreadable, firstByte(v))
	}
	r := reader{b: v[entryHeader:]}
	e := &fleet.Entry{Expires: fromUnixNano(exp)}
	access := r.byte()
	e.FetchedAt = fromUnixNano(r.varint())
	e.UnreachableSince = fromUnixNano(r.varint())
	failures := r.uvarint()
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) || failures > 1<<31 ||
		fleet.Access(access) > fleet.AccessUnavailable {
		return nil, fmt.Errorf("%w: %v", ErrUnreadable, errShort)
	}
	e.Access, e.Failures = fleet.Access(access), int(failures)
	e.Error = string(r.b[:n])
	r.b = r.b[n:]
	if v[0] == entryVersionV2 {
		e.ETag = r.str()
		e.LastModified = r.str()
		if r.err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnreadable, errShort)
		}
	}
	if body := r.b; len(body) > 0 || e.Access == fleet.AccessSuccess {
		e.Body = append([]byte{}, body...)
	}
	return e, nil
}

func firstByte(v []byte) int {
	if len(v) == 0 {
		return -1
	}
	return int(v[0])
}

// reader reads the varints of a value; its first failure sticks in err.
type reader struct {
	b   []byte
	err error
}

func (r *reader) byte() byte {
	if len(r.b) == 0 {
		r.err = errShort
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errShort
		return 0
	}
	r.b = r.b[n:]
	return v
}

// str reads a length (uvarint) and that many bytes, as a string.
func (r *reader) str() string {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) {
		r.err = errShort
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errShort
		return 0
	}
	r.b = r.b[n:]
	return v
}

// A pace is kept as a version byte (paceVersion) and the fields of its
// pacing.State, each a varint (a reason as its index in reasons), in the
// order of appendPace. Version 1, written by earlier versions, is read too.
const paceVersion = 2

// paceMaxLen bounds the length of an encoded pace.
const paceMaxLen = 1 + 16*binary.MaxVarintLen64

// reasons are the reasons a pace keeps, by their index in the file; 0 is none.
var reasons = [...]string{"", pacing.ReasonCrawlDelay, pacing.ReasonRequestRate, pacing.ReasonDefaultPace,
	pacing.ReasonSlowAnswers, pacing.ReasonInFlight, pacing.ReasonRetryAfter, pacing.ReasonRateLimit,
	pacing.ReasonBackoff, pacing.ReasonRobotsTxt, pacing.ReasonPacer}

func reasonIndex(why string) int64 {
	for i, r := range reasons {
		if r == why {
			return int64(i)
		}
	}
	return 0
}

func reasonAt(i int64) string {
	if i < 0 || i >= int64(len(reasons)) {
		return ""
	}
	return reasons[i]
}

// encodePace returns the bytes that keep p.
func encodePace(p *pace) []byte { return appendPace(make([]byte, 0, paceMaxLen), p) }

// appendPace appends the bytes that keep p to b.
func appendPace(b []byte, p *pace) []byte {
	b = append(b, paceVersion)
	for _, v := range [...]int64{int64(p.Last), int64(p.LastEvery), reasonIndex(p.LastWhy), int64(p.LastSeq),
		int64(p.Seq), int64(p.HeldID), int64(p.HeldSeq), int64(p.HeldAt), int64(p.HeldUntil),
		int64(p.PausedUntil), reasonIndex(p.PauseWhy), int64(p.HeedUntil), int64(p.BoLevel),
		int64(p.BoStart), int64(p.BoEnd), int64(p.Est)} {
		b = binary.AppendVarint(b, v)
	}
	return b
}

// decodePace returns the pace that v keeps.
func decodePace(v []byte) (*pace, error) {
	if len(v) > 0 && v[0] == 1 {
		return decodePaceV1(v[1:])
	}
	if len(v) == 0 || v[0] != paceVersion {
		return nil, fmt.Errorf("pace of format %d", firstByte(v))
	}
	r := reader{b: v[1:]}
	var f [16]int64
	for i := range f {
		f[i] = r.varint()
	}
	p := &pace{
		Last: time.Duration(f[0]), LastEvery: time.Duration(f[1]), LastWhy: reasonAt(f[2]), LastSeq: uint64(f[3]),
		Seq: uint64(f[4]), HeldID: uint64(f[5]), HeldSeq: uint64(f[6]), HeldAt: time.Duration(f[7]),
		HeldUntil: time.Duration(f[8]), PausedUntil: time.Duration(f[9]), PauseWhy: reasonAt(f[10]),
		HeedUntil: time.Duration(f[11]), BoLevel: int(f[12]), BoStart: time.Duration(f[13]),
		BoEnd: time.Duration(f[14]), Est: time.Duration(f[15]),
	}
	if r.err != nil || len(r.b) != 0 || p.LastEvery < 0 || p.BoLevel < 0 || p.BoLevel > 64 || p.Est < 0 ||
		p.LastSeq > p.Seq || p.HeldSeq > p.Seq || (p.HeldID != 0) != (p.HeldSeq != 0) {
		return nil, errors.New("pace cut short or altered")
	}
	return p, nil
}

// decodePaceV1 reads a pace of version 1: the latest turn, its interval and
// until when it was kept; the held turn's ID, time and end; the pause's end;
// the back-off's level, start, end, and until when it was kept (a second
// past its forgiveness).
func decodePaceV1(v []byte) (*pace, error) {
	r := reader{b: v}
	var f [11]int64
	for i := range f {
		f[i] = r.varint()
	}
	if r.err != nil || len(r.b) != 0 || f[1] < 0 || f[7] < 0 || f[7] > 64 {
		return nil, errors.New("pace cut short or altered")
	}
	p := &pace{PausedUntil: time.Duration(f[6]), BoLevel: int(f[7]), BoStart: time.Duration(f[8]), BoEnd: time.Duration(f[9])}
	if p.PausedUntil > 0 {
		p.PauseWhy = pacing.ReasonRetryAfter
	}
	if p.BoLevel > 0 {
		p.HeedUntil = time.Duration(f[10] - int64(time.Second))
	}
	p.HeedUntil = max(p.HeedUntil, p.PausedUntil)
	if f[2] > 0 {
		p.Seq++
		p.Last, p.LastEvery, p.LastSeq = time.Duration(f[0]), time.Duration(f[1]), p.Seq
		if f[3] != 0 {
			// Version 1 kept the end of the hold as the latest turn.
			p.HeldID, p.HeldSeq, p.HeldAt, p.HeldUntil = uint64(f[3]), p.Seq, time.Duration(f[4]), time.Duration(f[5])
			p.Last = p.HeldAt
		}
	}
	return p, nil
}
