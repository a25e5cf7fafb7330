package matcher

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// memShape is a kind of robots.txt file, built to about MaxSize bytes, and
// the most its parsed form may hold, as a multiple of the file's size.
type memShape struct {
	name  string
	bound float64
	body  []byte
}

// memShapes returns realistic files and the worst shapes found: those with
// the most per-line overhead for the fewest bytes of file.
func memShapes() []memShape {
	const size = MaxSize
	// fill writes "head", then line(i) for i = 0, 1, ... while the file is
	// shorter than size.
	fill := func(head string, line func(i int) string) []byte {
		var b strings.Builder
		b.WriteString(head)
		for i := 0; b.Len() < size; i++ {
			b.WriteString(line(i))
		}
		return []byte(b.String())
	}
	// word returns the n-character name of i in an alphabet of 62 bytes that
	// URLs and tokens keep as they are.
	const alpha = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	word := func(i, n int) string {
		b := make([]byte, n)
		for k := n - 1; k >= 0; k-- {
			b[k] = alpha[i%len(alpha)]
			i /= len(alpha)
		}
		return string(b)
	}
	lower := func(i, n int) string { // for user-agent tokens, which fold case
		b := make([]byte, n)
		for k := n - 1; k >= 0; k-- {
			b[k] = alpha[i%36+26*(i%36/26)]
			i /= 36
		}
		return string(b)
	}
	const any = 3
	return []memShape{
		{"realistic 40-byte disallow", 1.4, fill("User-agent: *\n", func(i int) string {
			return fmt.Sprintf("Disallow: /some/path/%08d/item-abcdefg\n", i)
		})},
		{"realistic, agents and sitemaps", any, fill("User-agent: Googlebot\nUser-agent: Bingbot\nCrawl-delay: 1\n", func(i int) string {
			if i%500 == 0 {
				return fmt.Sprintf("Sitemap: https://example.com/sitemap-%d.xml\nUser-agent: bot%d\n", i, i)
			}
			return fmt.Sprintf("Allow: /products/%d/*?color=\nDisallow: /search/%d$\n", i, i)
		})},
		{"long literals tied on 4 bytes", any, fill("User-agent: *\n", func(i int) string {
			return fmt.Sprintf("Disallow: /html/E%05d_%02d/\n", i/3, i%3) // wide keys
		})},
		{"short allow", any, fill("user-agent:*\n", func(i int) string { return "allow:/" + word(i, 3) + "\n" })},
		{"short disallow without colon", any, fill("user-agent:*\n", func(i int) string { return "disallow /" + word(i, 3) + "\n" })},
		{"short $", any, fill("user-agent:*\n", func(i int) string { return "allow:/" + word(i, 2) + "$\n" })},
		{"short wildcard", any, fill("User-agent: *\n", func(i int) string { return "Disallow: /*" + word(i, 2) + "\n" })},
		{"tiny wildcard", any, fill("user-agent:*\n", func(i int) string { return "allow:*" + word(i, 3) + "\n" })},
		{"wildcard per prefix", any, fill("user-agent:*\n", func(i int) string { return "allow:/" + word(i, 2) + "*" + word(i/3844, 1) + "\n" })},
		{"trailing wildcard", any, fill("user-agent:*\n", func(i int) string { return "allow:/" + word(i, 3) + "*\n" })},
		{"wildcard and $", any, fill("user-agent:*\n", func(i int) string { return "allow:/*" + word(i, 2) + "$\n" })},
		{"many wildcards", any, fill("user-agent:*\n", func(i int) string { return "allow:/*" + strings.Join(strings.Split(word(i, 4), ""), "*") + "\n" })},
		{"duplicate rules", any, fill("user-agent:*\n", func(i int) string { return "allow:/a\n" })},
		{"long lines", any, fill("user-agent:*\n", func(i int) string { return "disallow:/" + word(i, 3) + strings.Repeat("x", 10000) + "\n" })},
		{"many tiny groups", any, fill("", func(i int) string { return "user-agent:" + lower(i, 3) + "\nallow:/" + word(i, 1) + "\n" })},
		{"realistic tiny groups", any, fill("", func(i int) string { return fmt.Sprintf("User-agent: bot%d\nDisallow: /x\n", i) })},
		{"groups without rules", any, fill("", func(i int) string { return "user-agent:" + lower(i, 3) + "\nallow:\n" })},
		{"one block per rule, one token", any, fill("", func(i int) string { return "user-agent:a\nallow:/" + word(i, 3) + "\n" })},
		{"blocks of two tokens", any, fill("", func(i int) string {
			return "user-agent:" + lower(i, 3) + "\nuser-agent:" + lower(i+1, 3) + "\nallow:/" + word(i, 1) + "\n"
		})},
		{"many user-agent lines", any, fill("", func(i int) string { return "user-agent:" + lower(i, 3) + "\n" })},
		{"many user-agent lines, one group", any, fill("", func(i int) string {
			if i%1000 == 999 {
				return "allow:/x\n"
			}
			return "user-agent:" + lower(i, 3) + "\n"
		})},
		{"many sitemaps", any, fill("", func(i int) string { return "sitemap:" + word(i, 1) + "\n" })},
		{"crawl-delays", any, fill("", func(i int) string { return "user-agent:" + lower(i, 3) + "\ncrawl-delay:1\n" })},
		{"raw non-ASCII", any, fill("user-agent:*\n", func(i int) string { return "allow:/" + word(i, 3) + strings.Repeat("\xe3\x83\x84", 10) + "\n" })},
		{"short raw non-ASCII", any, fill("user-agent:*\n", func(i int) string { return "allow:/" + word(i, 2) + "\xff\n" })},
		{"lone percent", any, fill("user-agent:*\n", func(i int) string { return "allow:/" + word(i, 2) + strings.Repeat("%", 20) + "\n" })},
		{"lower-case escapes", any, fill("user-agent:*\n", func(i int) string { return "allow:/" + word(i, 3) + "%2f%2f%2f%2f\n" })},
		{"decoded escapes", any, fill("user-agent:*\n", func(i int) string { return "allow:/" + word(i, 3) + "%62%62%62%62\n" })},
		{"mid-pattern $", any, fill("user-agent:*\n", func(i int) string { return "allow:/" + word(i, 2) + "$$$$$$$$$$\n" })},
		{"comments", any, fill("user-agent:*\n", func(i int) string { return "# " + strings.Repeat("c", 60) + "\n" })},
		{"comment after rule", any, fill("user-agent:*\n", func(i int) string { return "allow:/" + word(i, 3) + "#\n" })},
		{"invalid lines", any, fill("user-agent:*\n", func(i int) string { return "allow:x" + word(i, 3) + "\n" })},
		{"three raw bytes", any, fill("user-agent:*\n", func(i int) string {
			return "allow:/" + string([]byte{byte(0x80 + i%128), byte(0x80 + i/128%128), byte(0x80 + i/16384%128)}) + "\n"
		})},
		{"escaped ASCII", any, fill("user-agent:*\n", func(i int) string { return "allow:/" + word(i, 3) + " \"\n" })},
		{"short mid-pattern $", any, fill("user-agent:*\n", func(i int) string { return "allow:/" + word(i, 3) + "$$\n" })},
		{"short lower-case escape", any, fill("user-agent:*\n", func(i int) string { return "allow:/" + word(i, 2) + "%" + word(i/3844%16+26, 1) + "f\n" })},
	}
}

// queryAll asks each group of r about one path, so that every index is built.
func queryAll(r *Robots) {
	for i := range r.agents {
		r.agentGroup(i).Allowed("/x")
	}
	r.Group("no-such-bot").Allowed("/x")
}

// heldBytes returns the heap that a parsed copy of body holds once each of
// its groups has been queried, measured over several copies at once so that
// the garbage collector's noise averages out, and the Size of one copy.
func heldBytes(body []byte) (held float64, size int) {
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
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(kept)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / copies, kept[0].Size()
}

// TestMemoryShapes measures what a parsed file of each shape holds, and
// how well Size predicts it. Run it with -v, and ROBOTS_LONG_TESTS=1, to
// see the figures.
func TestMemoryShapes(t *testing.T) {
	longTest(t)
	if raceEnabled {
		t.Skip("the race detector changes what the heap holds")
	}
	for _, s := range memShapes() {
		held, size := heldBytes(s.body)
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
