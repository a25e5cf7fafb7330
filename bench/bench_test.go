package bench

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// corpusSet is the corpus in the form the benchmarks use, built once.
type corpusSet struct {
	in *inputs
	// qs are the corpus queries, asked only of the files that every
	// implementation parses (temoto rejects a few files outright).
	qs []query
	// stream are the stream queries (see streamQueries), of the same
	// files.
	stream []query
	// skipped is the number of files left out of qs because temoto
	// rejects them.
	skipped int
}

var (
	corpusSetOnce sync.Once
	corpusSetData corpusSet
)

func needCorpusSet(tb testing.TB) *corpusSet {
	tb.Helper()
	files := needCorpus(tb)
	corpusSetOnce.Do(func() {
		bodies := make([][]byte, len(files))
		for i, f := range files {
			bodies[i] = f.body
		}
		in := newInputs(bodies...)
		ok := temotoParses(in)
		var qs []query
		for _, q := range corpusQueries(files) {
			if ok[q.file] {
				qs = append(qs, q)
			}
		}
		skipped := 0
		for _, v := range ok {
			if !v {
				skipped++
			}
		}
		stream := streamQueries(files, func(i int) bool { return ok[i] })
		corpusSetData = corpusSet{in: in, qs: qs, stream: stream, skipped: skipped}
	})
	return &corpusSetData
}

// BenchmarkParseCorpus parses every corpus file once per iteration. MB/s is
// the throughput over the corpus's bytes. Files are given whole, the
// largest (an HTML page) being 1.37 MB; the robots transport itself never
// parses more than the first 500 KiB of a file.
func BenchmarkParseCorpus(b *testing.B) {
	cs := needCorpusSet(b)
	for _, im := range impls {
		b.Run(im.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(cs.in.size())
			cpu := startCPU()
			for b.Loop() {
				im.parseAll(cs.in)
			}
			cpu.report(b)
		})
	}
}

// BenchmarkUseCorpus parses every corpus file and asks it one query per
// agent, once per iteration: the cost of putting a fresh robots.txt to use.
// It differs from BenchmarkParseCorpus by the cost of two queries plus
// whatever an implementation defers from parsing to first use (ours builds
// a group's index on its first query). MB/s is over the corpus's bytes.
func BenchmarkUseCorpus(b *testing.B) {
	cs := needCorpusSet(b)
	for _, im := range impls {
		b.Run(im.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(cs.in.size())
			cpu := startCPU()
			for b.Loop() {
				im.useAll(cs.in)
			}
			cpu.report(b)
		})
	}
}

// BenchmarkQueryCorpus asks one query per iteration, cycling through the
// corpus queries (about two dozen per file, see corpusQueries), each
// against its file parsed beforehand. ns/op is the mean over the corpus.
func BenchmarkQueryCorpus(b *testing.B) {
	cs := needCorpusSet(b)
	for _, im := range impls {
		b.Run(im.name, func(b *testing.B) {
			b.ReportAllocs()
			im.loopQueries(b, cs.in, cs.qs)
		})
	}
}

// BenchmarkQueryStream asks one query per iteration, cycling through the
// stream queries: absolute URLs on the sites of the corpus files, for an
// agent given with each query, in an order shuffled across the files (see
// streamQueries), as a crawler's frontier interleaves sites. ours and
// grobotstxt are given the absolute URL; temoto, whose API takes only a
// path, its path and query, extracted before the loop. ns/op is the mean
// over the stream.
func BenchmarkQueryStream(b *testing.B) {
	cs := needCorpusSet(b)
	for _, im := range impls {
		b.Run(im.name, func(b *testing.B) {
			b.ReportAllocs()
			im.loopQueries(b, cs.in, cs.stream)
		})
	}
}

// BenchmarkQueryCorpusGroup is BenchmarkQueryCorpus with each query's
// group resolved before the loop: the cost of matching a URL alone.
func BenchmarkQueryCorpusGroup(b *testing.B) {
	cs := needCorpusSet(b)
	for _, im := range groupImpls {
		b.Run(im.name, func(b *testing.B) {
			b.ReportAllocs()
			im.loopQueries(b, cs.in, cs.qs)
		})
	}
}

// largestQueryRules is how many of the largest file's rules become query
// paths.
const largestQueryRules = 64

// BenchmarkQueryLargest asks queries of the largest real rule file,
// docs.oracle.com (31,843 rules in 853 KB, one "*" group). The "rules"
// metric is the number of allow and disallow lines in it.
func BenchmarkQueryLargest(b *testing.B) {
	files := needCorpus(b)
	f := findFile(b, files, "/docs.oracle.com")
	in := newInputs(f.body)
	qs := pathQueries(0, append(append([]string(nil), genericPaths...), rulePaths(f.body, largestQueryRules)...))
	rules := float64(len(rulePatterns(f.body)))
	for _, im := range impls {
		b.Run(im.name, func(b *testing.B) {
			b.ReportAllocs()
			im.loopQueries(b, in, qs)
			b.ReportMetric(rules, "rules")
		})
	}
}

// generatedRules is the number of rules in BenchmarkQueryGenerated's file.
const generatedRules = 50000

// BenchmarkQueryGenerated asks queries of a generated file of
// generatedRules rules in one "*" group.
func BenchmarkQueryGenerated(b *testing.B) {
	body := generateRobots(generatedRules)
	in := newInputs(body)
	qs := pathQueries(0, generatedPaths(body, 64))
	rules := float64(len(rulePatterns(body)))
	for _, im := range impls {
		b.Run(im.name, func(b *testing.B) {
			b.ReportAllocs()
			im.loopQueries(b, in, qs)
			b.ReportMetric(rules, "rules")
		})
	}
}

// pathologicalRule backtracks badly in a naive matcher: ten wildcards that
// each can stop anywhere in a run of "a", and a final "b" that is never
// found.
const pathologicalRule = "/*a*a*a*a*a*a*a*a*a*a*b"

// BenchmarkPathological matches pathologicalRule against a path of n "a"
// bytes, for two sizes ten times apart: a linear matcher takes ten times
// as long on the longer path (same MB/s), a quadratic one a hundred times.
func BenchmarkPathological(b *testing.B) {
	in := newInputs([]byte("User-agent: *\nDisallow: " + pathologicalRule + "\n"))
	for _, n := range []int{2000, 20000} {
		p := "/" + strings.Repeat("a", n-1)
		qs := []query{{agent: "ExampleBot", url: p, path: p}}
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for _, im := range impls {
				b.Run(im.name, func(b *testing.B) {
					b.ReportAllocs()
					b.SetBytes(int64(n))
					im.loopQueries(b, in, qs)
				})
			}
		})
	}
}

// BenchmarkRetainedCorpus measures the heap that the parsed corpus keeps
// alive: each iteration parses a fresh copy of every file, asks it one
// query per agent (so that what an implementation builds on first use is
// counted), keeps the results (not the copies), and reports the live heap
// they account for after a garbage collection, in bytes ("retained-B") and
// as a multiple of the corpus's size ("retained/corpus"). For grobotstxt,
// which keeps no parsed form, what must be kept is the body itself, as a
// string.
func BenchmarkRetainedCorpus(b *testing.B) {
	cs := needCorpusSet(b)
	for _, im := range impls {
		b.Run(im.name, func(b *testing.B) {
			var retained int64
			for b.Loop() {
				retained = retainedHeap(im.keep, cs.in.bodies)
			}
			b.ReportMetric(float64(retained), "retained-B")
			b.ReportMetric(float64(retained)/float64(cs.in.size()), "retained/corpus")
		})
	}
}

// retainedHeap returns how much the live heap grows when a copy of each of
// bodies is parsed with keep and only the results are kept.
func retainedHeap(keep func([]byte) any, bodies [][]byte) int64 {
	kept := make([]any, len(bodies))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i, body := range bodies {
		kept[i] = keep(bytes.Clone(body))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(kept)
	return int64(after.HeapAlloc) - int64(before.HeapAlloc)
}

// pathQueries returns a query for each path and each agent, of file.
func pathQueries(file int, paths []string) []query {
	var qs []query
	for _, p := range paths {
		for _, a := range agents {
			qs = append(qs, query{file: file, agent: a, url: p, path: p})
		}
	}
	return qs
}

// rulePaths returns up to n query paths derived from body's rules, spread
// evenly over the file; every other one is below its rule, with a query.
func rulePaths(body []byte, n int) []string {
	rules := rulePatterns(body)
	n = min(n, len(rules))
	paths := make([]string, 0, n)
	for k := range n {
		i := 0
		if n > 1 {
			i = k * (len(rules) - 1) / (n - 1)
		}
		p := concretePath(rules[i])
		if k%2 == 1 {
			p = strings.TrimSuffix(p, "/") + "/item-42.html?id=7"
		}
		paths = append(paths, p)
	}
	return paths
}

// sections are the top-level directories of the generated file.
var sections = []string{
	"shop", "blog", "account", "search", "media", "api", "help", "news",
	"events", "forum", "docs", "cart", "user", "tag", "category", "archive",
}

// generateRobots returns a robots.txt body with n rules in one "*" group,
// in a deterministic mix like that of large real files: mostly plain
// directory prefixes, some allow exceptions below them, and some wildcard
// and end-anchored patterns.
func generateRobots(n int) []byte {
	var b bytes.Buffer
	b.WriteString("# generated\nUser-agent: *\n")
	for i := range n {
		sec := sections[i%len(sections)]
		id := strconv.FormatInt(int64(i)*7919%1000003, 36)
		switch i % 20 {
		case 14, 15:
			fmt.Fprintf(&b, "Allow: /%s/%s/public/\n", sec, id)
		case 16:
			fmt.Fprintf(&b, "Disallow: /*/%s/*.pdf$\n", id)
		case 17:
			fmt.Fprintf(&b, "Disallow: /%s/*?sessionid=%s\n", sec, id)
		case 18:
			fmt.Fprintf(&b, "Allow: /%s/%s.html$\n", sec, id)
		case 19:
			fmt.Fprintf(&b, "Disallow: /%s/tmp-%s*\n", sec, id)
		default:
			fmt.Fprintf(&b, "Disallow: /%s/%s/\n", sec, id)
		}
	}
	return b.Bytes()
}

// generatedPaths returns n query paths for a generated file: half derived
// from its rules (matched by them), half that no rule names.
func generatedPaths(body []byte, n int) []string {
	paths := rulePaths(body, n/2)
	for k := range n - len(paths) {
		sec := sections[k*5%len(sections)]
		paths = append(paths, fmt.Sprintf("/%s/zz%d/page-%d.html?ref=home", sec, k, k*31))
	}
	return paths
}
