package matcher

import (
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// corpusDir holds real robots.txt files, through the link testdata/shared
// (see testdata/README.md). It is absent outside the project's workspace.
// The bench module compares this package with other parsers on it; these
// benchmarks measure ours alone.
const corpusDir = "../testdata/shared/corpus"

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
		"/wiki/Wikipedia%3AStrony_do_usuni%C4%99cia", // escapes kept as they are, beyond 32 bytes
		"/docs/a%7Eb%2f.pdf",                         // needs normalising
		"/a*b$c",                                     // needs normalising
		"/caf\xC3\xA9/menu",                          // raw non-ASCII
		"HTTPS://EXAMPLE.COM/",                       // upper-case scheme
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

// BenchmarkQueryCorpus asks each corpus file, parsed beforehand, a few
// generic paths and paths derived from its own rules, cycling through the
// files so that, as in a crawler, each query finds its file's data cold.
func BenchmarkQueryCorpus(b *testing.B) {
	bodies, _ := readCorpus(b)
	type query struct {
		r          *Robots
		agent, url string
	}
	var qs []query
	generic := []string{"/", "/index.html", "/search?q=running+shoes&page=2", "/about/contact", "/wp-admin/admin-ajax.php"}
	for _, body := range bodies {
		r := Parse(body)
		paths := append([]string(nil), generic...)
		var derived []string
		for line := range strings.SplitSeq(string(body), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if k = strings.ToLower(strings.TrimSpace(k)); !ok || k != "allow" && k != "disallow" {
				continue
			}
			if v, _, _ = strings.Cut(v, "#"); strings.HasPrefix(strings.TrimSpace(v), "/") {
				v = strings.TrimSuffix(strings.ReplaceAll(strings.TrimSpace(v), "*", "x7"), "$")
				derived = append(derived, string(appendNormURL(nil, v)))
			}
		}
		for i := 0; i < 6 && len(derived) > 0; i++ {
			paths = append(paths, derived[i*len(derived)/6])
		}
		for _, p := range paths {
			qs = append(qs, query{r, "Googlebot", p}, query{r, "ExampleBot", p})
		}
	}
	// Interleave the files.
	rng := rand.New(rand.NewSource(1))
	rng.Shuffle(len(qs), func(i, j int) { qs[i], qs[j] = qs[j], qs[i] })
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		q := &qs[i]
		q.r.Allowed(q.agent, q.url)
		if i++; i == len(qs) {
			i = 0
		}
	}
}

// BenchmarkScanCorpus measures the tokenizer alone: lines, keys and values.
func BenchmarkScanCorpus(b *testing.B) {
	bodies, size := readCorpus(b)
	b.SetBytes(size)
	for b.Loop() {
		for _, body := range bodies {
			var s scanner
			s.init(body)
			for s.next() {
			}
		}
	}
}
