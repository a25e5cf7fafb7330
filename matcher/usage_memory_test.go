package matcher

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// TestUsageMemoryShapes measures what files of many usage lines hold, and
// how well Size predicts it, as TestMemoryShapes does for the other lines.
func TestUsageMemoryShapes(t *testing.T) {
	longTest(t)
	if raceEnabled {
		t.Skip("the race detector changes what the heap holds")
	}
	fill := func(head string, line func(i int) string) []byte {
		var b strings.Builder
		b.WriteString(head)
		for i := 0; b.Len() < MaxSize; i++ {
			b.WriteString(line(i))
		}
		return []byte(b.String())
	}
	const bound = 3
	for _, s := range []memShape{
		{"usage with paths", bound, fill("user-agent: *\n", func(i int) string {
			return fmt.Sprintf("content-usage: /docs/%d/ train-ai=%s\n", i, "yn"[i%2:i%2+1])
		})},
		{"short usage paths", bound, fill("user-agent: *\n", func(i int) string { return fmt.Sprintf("content-usage:/%x train-ai=n\n", i) })},
		{"file-level signals", bound, fill("", func(i int) string { return "content-signal: search=yes, ai-train=no\n" })},
		// 62 bytes a line of 24: each label has its pref, its text twice
		// (alone, and in what the lines without a path say together), its
		// offset and its rule. Adversarial; a real file states a handful.
		{"distinct labels", bound, fill("user-agent: *\n", func(i int) string { return fmt.Sprintf("content-usage: l%d=n\n", i) })},
		{"statements that do not parse", bound, fill("user-agent: *\n", func(i int) string { return fmt.Sprintf("content-usage: /%d X\n", i) })},
		{"groups with usage", bound, fill("content-signal: search=yes\n", func(i int) string {
			return fmt.Sprintf("user-agent: bot%d\ncontent-usage: train-ai=n\ncontent-signal: ai-input=no\n", i)
		})},
		// A tiny group whose one line is a usage line.
		{"file-level lines and groups", bound, fill("", func(i int) string {
			if i < 100 { // more than are copied into each group
				return fmt.Sprintf("content-usage: l%d=n\n", i)
			}
			return fmt.Sprintf("user-agent: b%d\ncontent-usage: o=y\n", i)
		})},
		{"realistic, usage and rules", 1.6, fill("User-agent: *\nContent-Signal: search=yes, ai-train=no\n", func(i int) string {
			if i%100 == 0 {
				return fmt.Sprintf("Content-Usage: /archive/%d/ train-ai=y\n", i)
			}
			return fmt.Sprintf("Disallow: /some/path/%08d/item-abcdefg\n", i)
		})},
	} {
		held, size := heldUsageBytes(s.body)
		n := float64(len(s.body))
		t.Logf("%-34s %7d B: holds %5.2f× its size, Size() %5.2f× (%.3f of held)",
			s.name, len(s.body), held/n, float64(size)/n, float64(size)/held)
		if held > s.bound*n {
			t.Errorf("%s: holds %.2f× the file, more than %g×", s.name, held/n, s.bound)
		}
		if float64(size) < held || float64(size) > 1.5*held+512 { // never below what it holds, and not far above
			t.Errorf("%s: Size() = %d, %.2f of the %.0f bytes held", s.name, size, float64(size)/held, held)
		}
	}
}

// heldUsageBytes is heldBytes with the usage rules of every group asked
// about too, so that their indexes are built.
func heldUsageBytes(body []byte) (held float64, size int) {
	const copies = 8
	kept := make([]*Robots, copies)
	Parse(body) // warm the scratch pool
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range kept {
		kept[i] = Parse(body)
		queryAll(kept[i])
		for j := range kept[i].agents {
			_ = kept[i].agentGroup(j).Usage("/x").String()
		}
		_ = kept[i].Usage("no-such-bot", "/x").String()
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(kept)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / copies, kept[0].Size()
}
