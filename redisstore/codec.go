package redisstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/f9014239/robots"
)

// magic begins every encoded entry: a format name and its version. A value
// that does not begin with it was written by something else, or by a later
// version, and is not read.
const magic = "robots.Entry\x01"

// maxFailures bounds Entry.Failures as read, far above any real count.
const maxFailures = 1 << 20

// encode returns e in the Store's format:
//
//	magic
//	access            1 byte
//	fetched at        varint, Unix nanoseconds; 0 for the zero time
//	expires           varint, likewise
//	unreachable since varint, likewise
//	failures          uvarint
//	error             uvarint length, then that many bytes
//	body              uvarint length, then that many bytes
func encode(e *robots.Entry) []byte {
	n := len(magic) + 1 + 3*binary.MaxVarintLen64 + 3*binary.MaxVarintLen64 + len(e.Error) + len(e.Body)
	b := make([]byte, 0, n)
	b = append(b, magic...)
	b = append(b, byte(e.Access))
	b = binary.AppendVarint(b, unixNano(e.FetchedAt))
	b = binary.AppendVarint(b, unixNano(e.Expires))
	b = binary.AppendVarint(b, unixNano(e.UnreachableSince))
	b = binary.AppendUvarint(b, uint64(max(e.Failures, 0)))
	b = binary.AppendUvarint(b, uint64(len(e.Error)))
	b = append(b, e.Error...)
	b = binary.AppendUvarint(b, uint64(len(e.Body)))
	b = append(b, e.Body...)
	return b
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

var errFormat = errors.New("not an entry of this format")

// decode reads an entry that encode wrote. It returns an error for any other
// value, whole or cut short. The entry's Body is a slice of b.
func decode(b []byte) (*robots.Entry, error) {
	if len(b) < len(magic)+1 || string(b[:len(magic)]) != magic {
		return nil, errFormat
	}
	d := decoder{b: b[len(magic):]}
	e := &robots.Entry{Access: robots.Access(d.byte())}
	switch e.Access {
	case robots.AccessSuccess, robots.AccessUnavailable, robots.AccessUnreachable:
	default:
		return nil, fmt.Errorf("unknown access result %d", e.Access)
	}
	e.FetchedAt = fromUnixNano(d.varint())
	e.Expires = fromUnixNano(d.varint())
	e.UnreachableSince = fromUnixNano(d.varint())
	failures := d.uvarint()
	e.Error = string(d.bytes())
	body := d.bytes()
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%d bytes after the entry", len(d.b))
	}
	if failures > maxFailures {
		return nil, fmt.Errorf("failure count %d out of range", failures)
	}
	e.Failures = int(failures)
	switch {
	case e.Access == robots.AccessSuccess:
		e.Body = body
		if e.Body == nil {
			e.Body = []byte{}
		}
	case len(body) != 0:
		return nil, fmt.Errorf("body with access result %v", e.Access)
	}
	return e, nil
}

// decoder reads the fields of an encoded entry; after the first error, its
// reads return zero values and err keeps that error.
type decoder struct {
	b   []byte
	err error
}

var errShort = errors.New("entry cut short")

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.fail(errShort)
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// bytes reads a length and that many bytes. It returns nil for a length of
// zero, and otherwise a slice of the decoder's input.
func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) || n > math.MaxInt {
		d.fail(errShort)
		return nil
	}
	if n == 0 {
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}
