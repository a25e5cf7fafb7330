// Package memsize gives conservative upper bounds of what objects take on
// the heap, for the Size methods of the matcher and usage packages.
package memsize

import "reflect"

// Alloc returns no less than the bytes the allocator takes for an object of
// n bytes, generously: a small object's size class is at most a fifth larger
// than it, and a large object takes whole pages.
func Alloc(n int) int {
	switch {
	case n == 0:
		return 0
	case n <= 32<<10:
		return n + n/4 + 16
	}
	return (n + n/32 + 16 + 8191) &^ 8191
}

// Slice returns Alloc of the array of s.
func Slice[T any](s []T) int { return Alloc(cap(s) * int(reflect.TypeFor[T]().Size())) }
