package matcher

import (
	"fmt"
	"strings"
	"testing"

	"github.com/f9014239/robots/internal/memsize"
)

// TestAllocBytes checks that allocBytes is never below the size the
// allocator takes for an object, as appending to a nil slice shows it:
// the size class of a small object, whole pages for a large one.
func TestAllocBytes(t *testing.T) {
	for n := 1; n <= 200<<10; n += 1 + n/64 {
		took := cap(append([]byte(nil), make([]byte, n)...))
		if got := memsize.Alloc(n); got < took {
			t.Fatalf("memsize.Alloc(%d) = %d, below the %d bytes the allocator takes", n, got, took)
		}
	}
	if memsize.Alloc(0) != 0 {
		t.Errorf("memsize.Alloc(0) = %d", memsize.Alloc(0))
	}
}

// TestSizeStable checks that Size, which builds the indexes on its first
// call, gives the same whether it is first called before or after queries
// have built some of them, and while they are being built.
func TestSizeStable(t *testing.T) {
	var a, b strings.Builder
	a.WriteString("User-agent: a\n")
	b.WriteString("User-agent: b\n")
	for _, last := range "12" {
		for i := range 300 {
			fmt.Fprintf(&a, "Disallow: /%c%c%c/tail/x%c\n", 'a'+i%26, 'a'+i/26%26, 'a'+i/676, last)
		}
	}
	for i := range 300 {
		fmt.Fprintf(&b, "Allow: /%d\n", i)
	}
	for _, body := range []string{a.String(), b.String(), a.String() + b.String() + "Content-Usage: /x train-ai=n\n"} {
		want := Parse([]byte(body)).Size()
		after := Parse([]byte(body))
		queryAll(after)
		if got := after.Size(); got != want {
			t.Errorf("Size after the indexes are built = %d, before = %d", got, want)
		}
		during := Parse([]byte(body))
		done := make(chan int)
		go func() { done <- during.Size() }()
		queryAll(during)
		if got := <-done; got != want {
			t.Errorf("Size while the indexes are built = %d, before = %d", got, want)
		}
	}
}
