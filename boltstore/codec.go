package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/f9014239/robots/fleet"
)

// An entry is kept as: a version byte (entryVersion), Expires as 8 bytes
// (big-endian Unix ns; 0 for the zero time), so that it can be read alone
// (see expiresOf), the Access byte, FetchedAt and UnreachableSince (varint
// Unix ns, 0 for the zero time), Failures (uvarint), the length of Error
// (uvarint) and Error, and the Body to the end.
const entryVersion = 1

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
	b := make([]byte, 0, entryHeader+1+3*binary.MaxVarintLen64+len(e.Error)+len(e.Body))
	b = append(b, entryVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(unixNano(e.Expires)))
	b = append(b, byte(e.Access))
	b = binary.AppendVarint(b, unixNano(e.FetchedAt))
	b = binary.AppendVarint(b, unixNano(e.UnreachableSince))
	b = binary.AppendUvarint(b, uint64(max(e.Failures, 0)))
	b = binary.AppendUvarint(b, uint64(len(e.Error)))
	b = append(b, e.Error...)
	return append(b, e.Body...)
}

// expiresOf returns the Expires of the entry v, in Unix ns.
func expiresOf(v []byte) (int64, bool) {
	if len(v) < entryHeader || v[0] != entryVersion {
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
	if body := r.b[n:]; len(body) > 0 || e.Access == fleet.AccessSuccess {
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

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errShort
		return 0
	}
	r.b = r.b[n:]
	return v
}

// A pace is kept as a version byte (paceVersion) and its fields, each a
// varint, in the order of the struct (see encodePace).
const paceVersion = 1

// paceMaxLen bounds the length of an encoded pace.
const paceMaxLen = 1 + 11*binary.MaxVarintLen64

// encodePace returns the bytes that keep p.
func encodePace(p *pace) []byte { return appendPace(make([]byte, 0, paceMaxLen), p) }

// appendPace appends the bytes that keep p to b.
func appendPace(b []byte, p *pace) []byte {
	b = append(b, paceVersion)
	for _, v := range [...]int64{p.last, p.lastEvery, p.lastUntil, int64(p.heldID), p.heldAt, p.heldUntil,
		p.pauseUntil, p.boLevel, p.boStart, p.boEnd, p.boUntil} {
		b = binary.AppendVarint(b, v)
	}
	return b
}

// decodePace returns the pace that v keeps.
func decodePace(v []byte) (*pace, error) {
	if len(v) == 0 || v[0] != paceVersion {
		return nil, fmt.Errorf("pace of format %d", firstByte(v))
	}
	r := reader{b: v[1:]}
	p := &pace{}
	var held int64
	for _, f := range [...]*int64{&p.last, &p.lastEvery, &p.lastUntil, &held, &p.heldAt, &p.heldUntil,
		&p.pauseUntil, &p.boLevel, &p.boStart, &p.boEnd, &p.boUntil} {
		*f = r.varint()
	}
	if r.err != nil || len(r.b) != 0 || p.lastEvery < 0 || p.boLevel < 0 || p.boLevel > 64 {
		return nil, errors.New("pace cut short or altered")
	}
	p.heldID = uint64(held)
	return p, nil
}
