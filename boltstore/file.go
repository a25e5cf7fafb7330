package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// The layout of a bbolt meta page (bbolt's file format version 2, which
// bbolt v1 keeps): a page header of 16 bytes, then magic, version, page
// size and flags (4 bytes each), the root bucket (its page, its sequence),
// the freelist's page, the high-water mark (pages in use), the transaction
// ID and an FNV-64a checksum of the bytes before it, 8 bytes each, in the
// machine's byte order.
const (
	boltMagic        = 0xED0CDAED
	boltVersion      = 2
	pageHeaderSize   = 16
	metaSize         = 64
	metaChecksumAt   = 56
	metaPageSizeAt   = 8
	metaRootAt       = 16
	metaFreelistAt   = 32
	metaHighWaterAt  = 40
	metaTxidAt       = 48
	noFreelist       = 0xffffffffffffffff
	maxCheckPageSize = 1 << 24
)

// meta is what checkFile reads of a bbolt meta page.
type meta struct {
	pageSize  uint64
	root      uint64
	freelist  uint64
	highWater uint64
	txid      uint64
}

// readMeta decodes the meta page in b (at least a page header and a meta),
// or reports false if b holds none.
func readMeta(b []byte) (meta, bool) {
	if len(b) < pageHeaderSize+metaSize {
		return meta{}, false
	}
	m := b[pageHeaderSize : pageHeaderSize+metaSize]
	ne := binary.NativeEndian
	if ne.Uint32(m) != boltMagic || ne.Uint32(m[4:]) != boltVersion {
		return meta{}, false
	}
	h := fnv.New64a()
	h.Write(m[:metaChecksumAt])
	if h.Sum64() != ne.Uint64(m[metaChecksumAt:]) {
		return meta{}, false
	}
	mt := meta{
		pageSize:  uint64(ne.Uint32(m[metaPageSizeAt:])),
		root:      ne.Uint64(m[metaRootAt:]),
		freelist:  ne.Uint64(m[metaFreelistAt:]),
		highWater: ne.Uint64(m[metaHighWaterAt:]),
		txid:      ne.Uint64(m[metaTxidAt:]),
	}
	if mt.pageSize < 512 || mt.pageSize > maxCheckPageSize || mt.root >= mt.highWater ||
		mt.freelist >= mt.highWater && mt.freelist != noFreelist {
		return meta{}, false
	}
	return mt, true
}

// checkFile returns an error that matches ErrCorrupt if the file at path
// exists and is not a whole bbolt file: empty, with no valid meta page, or
// shorter than its newest meta page says (truncated). bbolt opens an empty
// file as a new database, and can fault on a truncated one, reading pages
// past its end through its memory map; so both are caught here, before it
// opens the file. A file that does not exist, or cannot be read, is left to
// bbolt.
func checkFile(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return nil // bbolt says why, with the path
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	size := fi.Size()
	if size == 0 {
		return corrupt("the file is empty")
	}
	buf := make([]byte, pageHeaderSize+metaSize)
	var best meta
	found := false
	try := func(off int64) {
		if off < 0 || off+int64(len(buf)) > size {
			return
		}
		if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
			return
		}
		if m, ok := readMeta(buf); ok && (!found || m.txid > best.txid) {
			best, found = m, true
		}
	}
	try(0)
	// The second meta page is one page in: the first's page size, or,
	// if the first is unreadable, one of the sizes bbolt would try.
	if found {
		try(int64(best.pageSize))
	} else {
		for ps := int64(1024); ps <= maxCheckPageSize; ps *= 2 {
			try(ps)
			if found {
				break
			}
		}
	}
	if !found {
		return corrupt("not a bbolt file (no valid meta page)")
	}
	if need := best.highWater * best.pageSize; uint64(size) < need {
		return corrupt(fmt.Sprintf("truncated: %d bytes, its last transaction needs %d", size, need))
	}
	return nil
}

// corruptError is a file, or a page of it, that is not what a Store
// writes. It matches ErrCorrupt.
type corruptError struct{ why string }

func (e *corruptError) Error() string        { return "not a boltstore file, or damaged: " + e.why }
func (e *corruptError) Is(target error) bool { return target == ErrCorrupt }

// lockedError is a file that another process has open. It matches
// ErrLocked.
type lockedError struct{ waited time.Duration }

func (e *lockedError) Error() string {
	return fmt.Sprintf("the file is in use by another process (its lock was not free within %v)", e.waited)
}
func (e *lockedError) Is(target error) bool { return target == ErrLocked }

// corrupt returns an error that matches ErrCorrupt, saying why.
func corrupt(why string) error { return &corruptError{why} }

// protect calls fn, and returns the error it returns, or one that matches
// ErrCorrupt if it panics or faults on its memory map: bbolt panics on
// some corrupt pages, and a page past the end of a file cut short faults.
func protect(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = corrupt(fmt.Sprint("bbolt: ", p))
		}
	}()
	return fn()
}

// openError returns the error of Open for path, from err, an error of
// bbolt's or of this package's.
func openError(path string, err error, o *options) error {
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("boltstore: open %s: %w", path, &lockedError{o.lockTimeout})
	case errors.Is(err, ErrCorrupt):
		return fmt.Errorf("boltstore: open %s: %w; delete the file to start fresh", path, err)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch),
		errors.Is(err, berrors.ErrChecksum):
		return fmt.Errorf("boltstore: open %s: %w; delete the file to start fresh", path, &corruptError{"bbolt: " + err.Error()})
	}
	return fmt.Errorf("boltstore: open %s: %w", path, err)
}

// boltOptions returns the options of bbolt for o.
func boltOptions(o *options) *bolt.Options {
	return &bolt.Options{Timeout: o.lockTimeout, MaxSize: o.maxFileSize}
}
