package matcher

import (
	"bytes"
	"strings"
	"sync"
)

// A query matches the normalised path and query of its URL: the URL's
// own bytes when they are in that form, as most are, or else bytes that
// it normalises into a buffer of its own, on the stack or from normPool.
// The functions that read a path take either, so that neither is copied.

// path is the type of a normalised path and query: a string, or bytes
// that a query has normalised into a buffer of its own, which matching
// reads without copying them into a string.
type path interface{ ~string | ~[]byte }

// isString reports whether P is string. It does not allocate: the zero
// value of a string or slice needs no memory of its own in an interface.
func isString[P path]() bool {
	var z P
	_, ok := any(z).(string)
	return ok
}

// indexByte is strings.IndexByte for a path.
func indexByte[P path](p P, c byte) int {
	if isString[P]() {
		return strings.IndexByte(string(p), c)
	}
	return bytes.IndexByte([]byte(p), c)
}

// indexIn is strings.Index for a path.
func indexIn[P path](s P, sep string) int {
	if isString[P]() {
		return strings.Index(string(s), sep)
	}
	return indexBytes([]byte(s), sep)
}

// indexBytes returns the index of the first sep in s, or -1, in time
// linear in their lengths (Rabin-Karp), without copying sep.
func indexBytes(s []byte, sep string) int {
	n := len(sep)
	switch {
	case n == 0:
		return 0
	case n == 1:
		return bytes.IndexByte(s, sep[0])
	case n > len(s):
		return -1
	}
	const prime = 16777619
	var h, hs, pow uint32 = 0, 0, 1
	for i := 0; i < n; i++ {
		h = h*prime + uint32(sep[i])
		hs = hs*prime + uint32(s[i])
		pow *= prime
	}
	if hs == h && string(s[:n]) == sep {
		return 0
	}
	for i := n; i < len(s); i++ {
		hs = hs*prime + uint32(s[i]) - pow*uint32(s[i-n])
		if hs == h && string(s[i-n+1:i+1]) == sep {
			return i - n + 1
		}
	}
	return -1
}

// hasPrefix is strings.HasPrefix for a path.
func hasPrefix[P path](p P, prefix string) bool {
	return len(p) >= len(prefix) && string(p[:len(prefix)]) == prefix
}

// normBuffer returns the buffer to normalise the path and query p into:
// stack, when it is large enough, else one from normPool, which it also
// returns, or stack again when p is too long for those, and append then
// allocates.
func normBuffer(stack []byte, p string) ([]byte, *[]byte) {
	n := 3*len(p) + 1 // normalising at most triples the bytes, and may add a '/'
	if n <= cap(stack) || n > maxPooled {
		return stack, nil
	}
	pooled := normPool.Get().(*[]byte)
	return (*pooled)[:0], pooled
}

// putNormBuffer returns pooled, which normBuffer returned, to normPool.
// Its buffer, of maxPooled bytes, held all that was appended to it.
func putNormBuffer(pooled *[]byte) {
	if pooled != nil {
		normPool.Put(pooled)
	}
}

// maxPooled is the largest buffer normPool keeps: a path and query of up
// to a third of it (normalising at most triples their bytes) are matched
// without allocating; longer ones allocate a buffer for each query.
const maxPooled = 64 << 10

// normPool holds buffers for the normalised paths that do not fit on the
// stack.
var normPool = sync.Pool{New: func() any { b := make([]byte, 0, maxPooled); return &b }}
