package redisstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/f9014239/robots/fleet"

	"github.com/klauspost/compress/zstd"
)

// magic begins every encoded entry: a format name and its version. A value
// that does not begin with it was written by something else, or by another
// version, and is not read. (Version 1 began with "fleet.Entry\x01" and
// kept the body as it was.)
const magic = "rE\x02"

// formatName and version are the two parts of magic.
const (
	formatName = "rE"
	version    = 2
)

// maxFailures bounds Entry.Failures as read, far above any real count.
const maxFailures = 1 << 20

// Bodies are compressed with zstd (github.com/klauspost/compress), level
// SpeedBetterCompression, with its checksum (4 bytes), so that an altered
// value is refused rather than obeyed: over the shared corpus of real
// robots.txt files it keeps 5.0 times less than the bodies, as stdlib
// compress/flate at its best level does (5.1), and decodes 13 times faster,
// which matters because each process decodes every entry it takes from Redis.
// A body shorter than minCompress, or one that does not shrink, is kept as it
// is.
//
// Every frame is written as a single segment, which declares its content
// size, so that decode sizes its output from the header. Without that
// option the encoder leaves the size out of frames of fewer than 256 bytes
// (the single-segment flag is off below its 1 KiB minimum window, and a
// frame that is not a single segment carries its size only from 256 bytes
// on). Stores built before this was set wrote so every body of 64 to 255
// bytes that zstd shrank, and refused it as they read it: the fleet fetched
// such files once per process. The format stays "rE\x02": those Stores
// read what this one writes, and decode still reads the frames with no
// size that they wrote. It decodes such a frame into a buffer of 256
// bytes, then one 8 times larger at each try, up to the body's bound, so
// that no frame, however far it expands, costs more than a few times that
// bound (the decoder may write a block past the buffer's capacity before it
// stops, which grows the buffer once).
const (
	compressed  = 0x80 // in the access byte: the body is a zstd frame
	minCompress = 64
)

var (
	encoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBetterCompression),
			zstd.WithLowerEncoderMem(true), zstd.WithSingleSegment(true))
		if err != nil {
			panic(err) // only for invalid options
		}
		return e
	})
	decoder = sync.OnceValue(func() *zstd.Decoder {
		// DecodeAll writes no more than the capacity of its dst,
		// which decompress sizes from the frame's declared content
		// size, or grows up to the body's bound when there is none.
		d, err := zstd.NewReader(nil, zstd.WithDecodeAllCapLimit(true), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(DefaultMaxEntrySize*16), zstd.WithDecoderConcurrency(0))
		if err != nil {
			panic(err)
		}
		return d
	})
)

// encode returns e in the Store's format:
//
//	magic
//	access            1 byte; with bit 0x80 set if the body is compressed
//	fetched at        varint, Unix nanoseconds; 0 for the zero time
//	expires           varint, likewise
//	unreachable since varint, likewise
//	failures          uvarint
//	error             uvarint length, then that many bytes
//	body              uvarint length, then that many bytes: the body, or a
//	                  zstd frame, a single segment that declares its
//	                  content size (frames without it are read too)
//	etag              uvarint length, then that many bytes; with
//	last modified     likewise: both only when either is set, so that
//	                  an entry without validators is what earlier
//	                  versions wrote and read
func encode(e *fleet.Entry) []byte {
	access := byte(e.Access)
	body := e.Body
	if len(body) >= minCompress {
		if z := encoder().EncodeAll(body, make([]byte, 0, len(body)/2)); len(z) < len(body) {
			body = z
			access |= compressed
		}
	}
	n := len(magic) + 1 + 3*binary.MaxVarintLen64 + 5*binary.MaxVarintLen64 + len(e.Error) + len(body) +
		len(e.ETag) + len(e.LastModified)
	b := make([]byte, 0, n)
	b = append(b, magic...)
	b = append(b, access)
	b = binary.AppendVarint(b, unixNano(e.FetchedAt))
	b = binary.AppendVarint(b, unixNano(e.Expires))
	b = binary.AppendVarint(b, unixNano(e.UnreachableSince))
	b = binary.AppendUvarint(b, uint64(max(e.Failures, 0)))
	b = binary.AppendUvarint(b, uint64(len(e.Error)))
	b = append(b, e.Error...)
	b = binary.AppendUvarint(b, uint64(len(body)))
	b = append(b, body...)
	if e.ETag != "" || e.LastModified != "" {
		b = binary.AppendUvarint(b, uint64(len(e.ETag)))
		b = append(b, e.ETag...)
		b = binary.AppendUvarint(b, uint64(len(e.LastModified)))
		b = append(b, e.LastModified...)
	}
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

// formatError returns why b, which does not begin with magic, is not read.
func formatError(b []byte) error {
	switch {
	case len(b) > len(formatName) && string(b[:len(formatName)]) == formatName && b[len(formatName)] < ' ':
		// A version byte, not text that begins with "rE".
		return fmt.Errorf("entry of format version %d; this Store reads version %d only", b[len(formatName)], version)
	case len(b) >= len(v1Magic) && string(b[:len(v1Magic)]) == v1Magic:
		return fmt.Errorf("entry of format version 1; this Store reads version %d only", version)
	}
	return errFormat
}

// v1Magic began the entries of format version 1.
const v1Magic = "fleet.Entry\x01"

// decode reads an entry that encode wrote, whose body is at most maxBody
// bytes. It returns an error for any other value, whole or cut short. The
// entry's Body is a slice of b, or of a new array when it was compressed.
func decode(b []byte, maxBody int) (*fleet.Entry, error) {
	if len(b) < len(magic) || string(b[:len(magic)]) != magic {
		return nil, formatError(b)
	}
	d := reader{b: b[len(magic):]}
	access := d.byte()
	e := &fleet.Entry{Access: fleet.Access(access &^ compressed)}
	switch e.Access {
	case fleet.AccessSuccess, fleet.AccessUnavailable, fleet.AccessUnreachable:
	default:
		return nil, fmt.Errorf("unknown access result %d", e.Access)
	}
	e.FetchedAt = fromUnixNano(d.varint())
	e.Expires = fromUnixNano(d.varint())
	e.UnreachableSince = fromUnixNano(d.varint())
	failures := d.uvarint()
	e.Error = string(d.bytes())
	body := d.bytes()
	if d.err == nil && len(d.b) != 0 {
		e.ETag = string(d.bytes())
		e.LastModified = string(d.bytes())
	}
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
	case e.Access == fleet.AccessSuccess:
		if access&compressed != 0 {
			var err error
			if body, err = decompress(body, maxBody); err != nil {
				return nil, err
			}
		} else if len(body) > maxBody {
			return nil, fmt.Errorf("body of %d bytes, more than %d", len(body), maxBody)
		}
		e.Body = body
		if e.Body == nil {
			e.Body = []byte{}
		}
	case len(body) != 0 || access&compressed != 0:
		return nil, fmt.Errorf("body with access result %v", e.Access)
	}
	return e, nil
}

// decompress returns the body in the zstd frame z, of at most maxBody bytes.
// A frame that declares its content size is decoded into a buffer of that
// size; one that does not (see above), into a buffer of 256 bytes, then
// larger ones up to maxBody while the body does not fit.
func decompress(z []byte, maxBody int) ([]byte, error) {
	var h zstd.Header
	if err := h.Decode(z); err != nil {
		return nil, fmt.Errorf("compressed body: %w", err)
	}
	if h.Skippable {
		return nil, errors.New("compressed body: a skippable frame")
	}
	if h.HasFCS {
		if h.FrameContentSize == 0 {
			return nil, errors.New("compressed body declared empty")
		}
		if h.FrameContentSize > uint64(maxBody) {
			return nil, fmt.Errorf("compressed body of %d bytes, more than %d", h.FrameContentSize, maxBody)
		}
		out, err := decoder().DecodeAll(z, make([]byte, 0, h.FrameContentSize))
		if err != nil {
			return nil, fmt.Errorf("compressed body declared %d bytes: %w", h.FrameContentSize, err)
		}
		if uint64(len(out)) != h.FrameContentSize {
			return nil, fmt.Errorf("compressed body of %d bytes, declared %d", len(out), h.FrameContentSize)
		}
		return out, nil
	}
	for size := min(256, maxBody); ; size = min(8*size, maxBody) {
		out, err := decoder().DecodeAll(z, make([]byte, 0, size))
		switch {
		case err == nil && len(out) == 0:
			return nil, errors.New("compressed body is empty")
		case err == nil:
			return out, nil
		case !errors.Is(err, zstd.ErrDecoderSizeExceeded):
			return nil, fmt.Errorf("compressed body: %w", err)
		case size >= maxBody:
			return nil, fmt.Errorf("compressed body of more than %d bytes", maxBody)
		}
	}
}

// reader reads the fields of an encoded entry; after the first error, its
// reads return zero values and err keeps that error.
type reader struct {
	b   []byte
	err error
}

var errShort = errors.New("entry cut short")

func (d *reader) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.fail(errShort)
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *reader) varint() int64 {
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

func (d *reader) uvarint() uint64 {
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
func (d *reader) bytes() []byte {
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

func (d *reader) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}
