package matcher

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// corpusDir holds real robots.txt files, relative to this package. It is
// absent outside the project's workspace. The bench module compares this
// package with other parsers on it; these benchmarks measure ours alone.
const corpusDir = "../../shared/corpus"

func readCorpus(tb testing.TB) (bodies [][]byte, size int64) {
	tb.Helper()
	err := filepath.WalkDir(corpusDir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".md") || strings.HasSuffix(path, ".tsv") {
			return err
		}
		b, err := os.ReadFile(path)
		bodies = append(bodies, b)
		size += int64(len(b))
		return err
	})
	if os.IsNotExist(err) {
		tb.Skipf("no corpus: %s not found", corpusDir)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return bodies, size
}

func BenchmarkParseCorpus(b *testing.B) {
	bodies, size := readCorpus(b)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		for _, body := range bodies {
			Parse(body)
		}
	}
}

// benchRobots is a small file of the usual shape.
const benchRobots = `User-agent: *
Disallow: /admin/
Disallow: /cart
Disallow: /*?sessionid=
Disallow: /*.pdf$
Allow: /admin/public/
Sitemap: https://example.com/sitemap.xml

User-agent: Googlebot
Disallow: /search
Crawl-delay: 1
`

func BenchmarkAllowed(b *testing.B) {
	r := Parse([]byte(benchRobots))
	urls := []string{
		"https://example.com/products/shoes?color=red",
		"/admin/public/logo.png",
		"/docs/manual%20v2.pdf",
		"/caf%C3%A9/menu",
	}
	for _, u := range urls {
		b.Run(strings.ReplaceAll(u, "/", "_"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r.Allowed("ExampleBot", u)
			}
		})
	}
}

func TestAllowedDoesNotAllocate(t *testing.T) {
	r := Parse([]byte(benchRobots))
	big := strings.Repeat("Disallow: /a/b/c\nDisallow: /a/*/x$\n", 20)
	rBig := Parse([]byte("User-agent: *\n" + big))
	for _, u := range []string{
		"https://example.com/products/shoes?color=red",
		"/admin/x",
		"/docs/a%7Eb%2f.pdf",   // needs normalising
		"/a*b$c",               // needs normalising
		"/caf\xC3\xA9/menu",    // raw non-ASCII
		"HTTPS://EXAMPLE.COM/", // upper-case scheme
	} {
		for _, agent := range []string{"ExampleBot", "googlebot", "GOOGLEBOT"} {
			if n := testing.AllocsPerRun(100, func() { r.Allowed(agent, u) }); n != 0 {
				t.Errorf("Allowed(%q, %q) allocates %v times", agent, u, n)
			}
		}
		if n := testing.AllocsPerRun(100, func() { rBig.Allowed("x", u) }); n != 0 {
			t.Errorf("Allowed(%q) on an indexed group allocates %v times", u, n)
		}
	}
}
