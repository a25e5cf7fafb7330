package matcher

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"
)

// builtSize returns the bytes a built index holds, counted from its
// slices as the allocator sizes them: its slices hold no pointers, so
// they have no header.
func builtSize(ix *index) int {
	size := sizeClass(int(unsafe.Sizeof(*ix))) +
		sizeClass(cap(ix.ents)*int(unsafe.Sizeof(entry{}))) +
		sizeClass(cap(ix.bkts)*int(unsafe.Sizeof(bucket{})))
	if cap(ix.heavy) > 0 {
		size += sizeClass(cap(ix.heavy)*int(unsafe.Sizeof(heavyRun{}))) +
			sizeClass(cap(ix.groups)*int(unsafe.Sizeof(wildGroup{}))) +
			sizeClass(cap(ix.sets)*8)
	}
	return size
}

// TestIndexSize checks that the size counted before an index is built is
// the size of the index built, for groups with repeated literals, heavy
// runs of plain, exact and wildcard rules, and wildcard rules that need
// few or many distinct bytes.
func TestIndexSize(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 14))
	for trial := range 300 {
		var b strings.Builder
		b.WriteString("User-agent: *\n")
		nLits := 1 + rng.IntN(200)
		nRules := linearMax + 1 + rng.IntN(600)
		needs := "abcxyz.-_"[:1+rng.IntN(9)]
		for range nRules {
			lit := fmt.Sprintf("/d%d/", rng.IntN(nLits))
			if rng.IntN(3) == 0 {
				lit = fmt.Sprintf("/d%d", rng.IntN(nLits)) // a prefix of other literals
			}
			verb := "Disallow"
			if rng.IntN(2) == 0 {
				verb = "Allow"
			}
			switch rng.IntN(4) {
			case 0:
				fmt.Fprintf(&b, "%s: %s\n", verb, lit)
			case 1:
				fmt.Fprintf(&b, "%s: %s$\n", verb, lit)
			default:
				n := needs[rng.IntN(len(needs))]
				tail := ""
				if rng.IntN(2) == 0 {
					tail = "$"
				}
				fmt.Fprintf(&b, "%s: %s*%c%d%s\n", verb, lit, n, rng.IntN(5), tail)
			}
		}
		r := Parse([]byte(b.String()))
		g := r.Group("x")
		rules := g.rules()
		counted, _ := indexSize(r.arena, rules, nil)
		built := builtSize(g.index())
		if counted < built || counted > built+built/8 {
			ix := g.index()
			t.Logf("ents %d/%d bkts %d/%d heavy %d/%d groups %d/%d sets %d/%d", len(ix.ents), cap(ix.ents), len(ix.bkts), cap(ix.bkts), len(ix.heavy), cap(ix.heavy), len(ix.groups), cap(ix.groups), len(ix.sets), cap(ix.sets))
			t.Fatalf("trial %d (%d rules, %d literals): indexSize counts %d bytes, the index built holds %d (want as many, and at most an eighth more)", trial, nRules, nLits, counted, built)
		}
	}
}

// TestSizeClasses checks the probed size classes: increasing, no class
// more than a quarter and 16 bytes above the sizes it holds, and the
// fallback used without them never below them.
func TestSizeClasses(t *testing.T) {
	classes := sizeClasses()
	if len(classes) < 32 || len(classes) > 256 || classes[len(classes)-1] != maxSmall {
		t.Fatalf("%d classes up to %d", len(classes), classes[len(classes)-1])
	}
	for n := 1; n <= maxSmall; n++ {
		c := sizeClass(n)
		if c < n || c > n+n/4+16 {
			t.Fatalf("size class of %d is %d", n, c)
		}
		if o := overClass(n); o < c {
			t.Fatalf("fallback for %d is %d, below its class %d", n, o, c)
		}
		if n > 1 && sizeClass(n-1) > c {
			t.Fatalf("size classes decrease at %d", n)
		}
	}
}

// TestSizeCountedLazily checks that Size, which counts on its first call,
// gives the same whether it is first called before or after queries have
// built the indexes, and while they are being built. The index of the
// group of "a" takes keys of 4 bytes as its rules are parsed, and would
// take wide keys if counted in the order that building it sorts them in
// (see wideKeys); that of "b" takes keys of 4 bytes either way.
func TestSizeCountedLazily(t *testing.T) {
	var reordered, narrow strings.Builder
	reordered.WriteString("User-agent: a\n")
	narrow.WriteString("User-agent: b\n")
	// Sorted, each rule of the first half is followed by its twin of the
	// second, which differs only in its last byte.
	for _, last := range "12" {
		for i := range 300 {
			fmt.Fprintf(&reordered, "Disallow: /%c%c%c/tail/x%c\n", 'a'+i%26, 'a'+i/26%26, 'a'+i/676, last)
		}
	}
	for i := range 300 {
		fmt.Fprintf(&narrow, "Allow: /%d\n", i)
	}
	r := Parse([]byte(reordered.String()))
	g := r.Group("a")
	parsed := wideKeys(r.arena, g.rules())
	g.Allowed("/x")
	if sorted := wideKeys(r.arena, g.rules()); parsed || !sorted {
		t.Fatalf("the rules of a take wide keys as parsed: %v, as sorted: %v; want false, true", parsed, sorted)
	}
	for _, body := range []string{reordered.String(), narrow.String(), reordered.String() + narrow.String()} {
		before := Parse([]byte(body))
		want := before.Size()
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
