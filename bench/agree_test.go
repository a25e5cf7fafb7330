package bench

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jimsmart/grobotstxt"
)

// examplesPerKind is how many disagreements of each kind are logged.
const examplesPerKind = 5

// TestAgreement asks every implementation the corpus queries and logs how
// often they disagree, with examples. It is informational: the peers
// follow other rules than ours in places (temoto matches user agents by
// prefix, does not percent-normalise, and rejects some files; grobotstxt
// compares rule paths as written and treats index.html specially; see
// ../doc/design.md, "Where sources differ"), so a disagreement is not a failure. It fails only if
// the queries cannot be asked at all.
func TestAgreement(t *testing.T) {
	cs := needCorpusSet(t)
	qs := cs.qs
	if testing.Short() {
		// grobotstxt parses the whole file for every query; keep -short
		// quick with one file in ten.
		var some []query
		for _, q := range qs {
			if q.file%10 == 0 {
				some = append(some, q)
			}
		}
		qs = some
	}
	if len(qs) == 0 {
		t.Fatal("no corpus queries")
	}

	answers := make([][]bool, len(impls))
	for i, im := range impls {
		answers[i] = im.answers(cs.in, qs)
		if len(answers[i]) != len(qs) {
			t.Fatalf("%s answered %d of %d queries", im.name, len(answers[i]), len(qs))
		}
	}

	files := needCorpus(t)
	rs := parseOurs(cs.in)
	kinds := map[string]int{}
	examples := map[string][]string{}
	allowed := make([]int, len(impls))
	for k, q := range qs {
		var key []string
		for i := range impls {
			if answers[i][k] {
				allowed[i]++
			}
			if answers[i][k] != answers[0][k] {
				key = append(key, impls[i].name)
			}
		}
		if len(key) == 0 {
			kinds["all agree"]++
			continue
		}
		// Name the kind by who sides against ours.
		kind := strings.Join(key, "+") + " differ from ours"
		if len(key) == len(impls)-1 {
			kind = "ours alone"
		}
		kinds[kind]++
		if len(examples[kind]) < examplesPerKind {
			m := rs[q.file].Match(q.agent, q.url)
			examples[kind] = append(examples[kind], fmt.Sprintf(
				"%s agent=%s url=%s: ours=%v (rule %q, line %d)",
				files[q.file].name, q.agent, q.url, answers[0][k], m.Rule, m.Line))
		}
	}

	t.Logf("%d queries over %d files (%d files left out: temoto rejects them)",
		len(qs), len(cs.in.bodies)-cs.skipped, cs.skipped)
	for i, im := range impls {
		t.Logf("%-10s allows %6d (%.1f%%)", im.name, allowed[i], pct(allowed[i], len(qs)))
	}
	for _, kind := range []string{"all agree", "ours alone"} {
		t.Logf("%-34s %6d (%.2f%%)", kind, kinds[kind], pct(kinds[kind], len(qs)))
	}
	for kind, n := range kinds {
		if kind != "all agree" && kind != "ours alone" {
			t.Logf("%-34s %6d (%.2f%%)", kind, n, pct(n, len(qs)))
		}
	}
	for kind, ex := range examples {
		t.Logf("examples of %s:", kind)
		for _, e := range ex {
			t.Logf("  %s", e)
		}
	}
}

func pct(n, of int) float64 { return 100 * float64(n) / float64(of) }

// TestQueries checks the query paths the benchmarks ask: ASCII, validly
// percent-encoded, starting with "/", and the same on every run.
func TestQueries(t *testing.T) {
	body := []byte("User-agent: *\nDisallow: /caf\u00e9/*.pdf$ # docs\r\nallow:/a b%zz\nDisallow: relative\n")
	got := filePaths(body)
	want := append(append([]string(nil), genericPaths...),
		"/caf%C3%A9/x7.pdf",
		"/a%20b%25zz/item-42.html?id=7",
	)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("filePaths:\n got %q\nwant %q", got, want)
	}

	gen := generateRobots(1000)
	if n := len(rulePatterns(gen)); n != 1000 {
		t.Errorf("generateRobots(1000) has %d rules", n)
	}
	paths := generatedPaths(gen, 64)
	if len(paths) != 64 {
		t.Errorf("generatedPaths: %d paths, want 64", len(paths))
	}
	// The first half of the generated paths come from rules; of those,
	// the ones not extended below their rule are decided by it. The
	// second half are named by no rule. grobotstxt, not ours, is the
	// judge here.
	m := grobotstxt.NewRobotsMatcher()
	for k, p := range paths {
		if !strings.HasPrefix(p, "/") || strings.ContainsFunc(p, func(c rune) bool { return c <= ' ' || c >= 0x7f }) {
			t.Errorf("query path %q is not a clean ASCII path", p)
		}
		m.AgentAllowed(string(gen), "ExampleBot", p)
		decided := m.MatchingLine() != 0
		switch {
		case k < 32 && k%2 == 0 && !decided:
			t.Errorf("generated path %q comes from a rule but no rule matches it", p)
		case k >= 32 && decided:
			t.Errorf("generated path %q should match no rule, matches line %d", p, m.MatchingLine())
		}
	}
}

// TestStreamQueries checks the stream queries: about streamPerFile per
// file, absolute URLs on the file's site whose path is the one temoto is
// given, every agent asked, the files interleaved, and the same on every
// run.
func TestStreamQueries(t *testing.T) {
	files := needCorpus(t)
	ok := func(i int) bool { return i%7 != 3 }
	qs := streamQueries(files, ok)
	want := 0
	for i, f := range files {
		if ok(i) {
			want += min(streamPerFile, len(filePaths(f.body)))
		}
	}
	if len(qs) != want {
		t.Errorf("%d stream queries, want %d", len(qs), want)
	}
	agentsSeen := map[string]bool{}
	same := 0
	for k, q := range qs {
		if !ok(q.file) {
			t.Fatalf("query %d is of file %d, which ok rejects", k, q.file)
		}
		if q.url != "https://"+files[q.file].site+q.path || !strings.HasPrefix(q.path, "/") {
			t.Errorf("query %d: url %q, path %q, site %q", k, q.url, q.path, files[q.file].site)
		}
		agentsSeen[q.agent] = true
		if k > 0 && q.file == qs[k-1].file {
			same++
		}
	}
	if len(agentsSeen) != len(streamAgents) {
		t.Errorf("agents asked: %v, want all of %q", agentsSeen, streamAgents)
	}
	if same > len(qs)/100 {
		t.Errorf("%d of %d queries follow one of the same file: not interleaved", same, len(qs))
	}
	if again := streamQueries(files, ok); fmt.Sprint(again) != fmt.Sprint(qs) {
		t.Error("streamQueries differs from one call to the next")
	}
}

// TestReadCorpus checks that a corpus is read as its manifest lists it,
// and that an absent corpus is told apart from a broken one: the first
// makes the benchmarks and tests that need it skip, the second fail.
func TestReadCorpus(t *testing.T) {
	dir := t.TempDir()
	_, err := readCorpus(filepath.Join(dir, "absent"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("readCorpus of a missing folder: %v, want an fs.ErrNotExist error", err)
	}

	write := func(name, body string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("MANIFEST.tsv", "filename\tsize_bytes\nsrc/a.example\t5\nsrc/b.example\t0\n")
	write("src/a.example", "hello")
	write("src/b.example", "")
	files, err := readCorpus(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].name != "src/a.example" || string(files[0].body) != "hello" || files[1].name != "src/b.example" ||
		files[0].site != "a.example" {
		t.Errorf("readCorpus = %+v", files)
	}

	write("MANIFEST.tsv", "filename\tsite\tsize_bytes\nsrc/a.example\twww.a.example (per filename)\t5\n")
	files, err = readCorpus(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0].site != "www.a.example" {
		t.Errorf("readCorpus with a site column = %+v", files)
	}
	write("MANIFEST.tsv", "filename\tsite\tsize_bytes\nsrc/a.example\t\t5\n")
	if _, err = readCorpus(dir); err == nil {
		t.Error("readCorpus with an empty site: no error")
	}

	write("MANIFEST.tsv", "filename\tsize_bytes\nsrc/a.example\t5\nsrc/gone.example\t9\n")
	_, err = readCorpus(dir)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("readCorpus with a listed file missing: %v, want an error that is not fs.ErrNotExist", err)
	}
}

// TestOursAllocs checks the goal that a query with an ASCII URL allocates
// nothing in ours, over the corpus queries and the stream queries. Each query is asked once
// before it is counted: ours builds a group's index on the group's first
// query, once.
func TestOursAllocs(t *testing.T) {
	cs := needCorpusSet(t)
	rs := parseOurs(cs.in)
	bad := 0
	for _, q := range append(cs.qs[:len(cs.qs):len(cs.qs)], cs.stream...) {
		if testing.Short() && q.file%10 != 0 {
			continue
		}
		r := rs[q.file]
		if n := testing.AllocsPerRun(1, func() { sinkBool = r.Allowed(q.agent, q.url) }); n != 0 {
			if bad++; bad <= examplesPerKind {
				t.Errorf("Allowed(%q, %q) on %s: %v allocations", q.agent, q.url, needCorpus(t)[q.file].name, n)
			}
		}
	}
	if bad > examplesPerKind {
		t.Errorf("... %d queries in all allocate", bad)
	}
}

// TestOursConsistent checks that ours answers every corpus and stream
// query alike through Robots.Allowed (which scans a small group itself),
// Group.Allowed and Robots.Match.
func TestOursConsistent(t *testing.T) {
	cs := needCorpusSet(t)
	rs := parseOurs(cs.in)
	bad := 0
	for _, q := range append(cs.qs[:len(cs.qs):len(cs.qs)], cs.stream...) {
		r := rs[q.file]
		a, g, m := r.Allowed(q.agent, q.url), r.Group(q.agent).Allowed(q.url), r.Match(q.agent, q.url)
		if a != g || a != m.Allowed {
			if bad++; bad <= examplesPerKind {
				t.Errorf("%s, %q, %q: Robots.Allowed %v, Group.Allowed %v, Match %+v", needCorpus(t)[q.file].name, q.agent, q.url, a, g, m)
			}
		}
	}
}
