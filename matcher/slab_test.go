package matcher

import (
	"testing"
	"unsafe"
)

// TestSlabAligned checks that the block setSlab allocates unzeroed keeps
// the alignment its contents need, for blocks from the allocator's
// smallest sizes up, and that its rules and lines read back as written.
func TestSlabAligned(t *testing.T) {
	for _, body := range []string{
		"user-agent: *\n",
		"user-agent: a\n",
		"user-agent: *\ndisallow: /\n",
		"user-agent: a\nuser-agent: b\ndisallow: /x\nallow: /x/y\nsitemap: https://example.com/s\n",
		"user-agent: abcdefghijk\ndisallow: /p\nuser-agent: *\nallow: /q$\n",
	} {
		for range 100 { // blocks from fresh and reused memory
			r := Parse([]byte(body))
			if len(r.agents) > 0 && uintptr(unsafe.Pointer(&r.agents[0]))%8 != 0 {
				t.Fatalf("%q: agents at %p", body, &r.agents[0])
			}
			if len(r.lines) > 0 && uintptr(unsafe.Pointer(&r.lines[0]))%4 != 0 {
				t.Fatalf("%q: lines at %p", body, &r.lines[0])
			}
			if len(r.rules) > 0 && uintptr(unsafe.Pointer(&r.rules[0]))%4 != 0 {
				t.Fatalf("%q: rules at %p", body, &r.rules[0])
			}
			if g := r.Group("a"); g != emptyGroup && len(g.Lines()) == 0 {
				t.Fatalf("%q: no lines for a", body)
			}
		}
	}
	r := Parse([]byte("user-agent: a\ndisallow: /x\nallow: /x/y\n"))
	if m := r.Match("a", "/x/y/z"); !m.Allowed || m.Rule != "Allow: /x/y" || m.Line != 3 {
		t.Errorf("Match = %+v", m)
	}
	if m := r.Match("a", "/x/z"); m.Allowed || m.Rule != "Disallow: /x" || m.Line != 2 {
		t.Errorf("Match = %+v", m)
	}
}
