package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// corpusDir is the shared corpus of real robots.txt files, relative to this
// module (the robots module's root is one level up).
const corpusDir = "../../shared/corpus"

// agents are the product tokens the queries are asked for: one that many
// files name (so the specific-group path is taken) and one that none does
// (so the "*" group decides).
var agents = []string{"Googlebot", "ExampleBot"}

// genericPaths are asked of every file, whatever its rules.
var genericPaths = []string{
	"/",
	"/index.html",
	"/search?q=running+shoes&page=2",
	"/about/contact",
	"/wp-admin/admin-ajax.php",
}

// rulePathsPerFile is how many of a file's own allow/disallow rules are
// turned into query paths.
const rulePathsPerFile = 6

// corpusFile is one file of the corpus.
type corpusFile struct {
	name string // path in the corpus, as in MANIFEST.tsv
	site string // the host that served it, as in MANIFEST.tsv
	body []byte // the whole file
}

// corpus is the loaded corpus, or why it could not be loaded.
type corpus struct {
	files []corpusFile
	bytes int64 // sum of len(body)
	err   error
}

var (
	corpusOnce sync.Once
	corpusData corpus
)

// loadCorpus reads every file named in MANIFEST.tsv, once per process.
func loadCorpus() *corpus {
	corpusOnce.Do(func() {
		corpusData.files, corpusData.err = readCorpus(corpusDir)
		for _, f := range corpusData.files {
			corpusData.bytes += int64(len(f.body))
		}
	})
	return &corpusData
}

// needCorpus returns the corpus files, or skips tb with a clear message
// when the shared corpus is absent.
func needCorpus(tb testing.TB) []corpusFile {
	tb.Helper()
	c := loadCorpus()
	if errors.Is(c.err, fs.ErrNotExist) {
		tb.Skipf("shared corpus not found at %s (it lives beside the repository); skipping", corpusDir)
	}
	if c.err != nil {
		tb.Fatal(c.err)
	}
	return c.files
}

func readCorpus(dir string) ([]corpusFile, error) {
	manifest, err := os.ReadFile(filepath.Join(dir, "MANIFEST.tsv"))
	if err != nil {
		return nil, err
	}
	var files []corpusFile
	siteCol := -1
	sc := bufio.NewScanner(bytes.NewReader(manifest))
	for line := 0; sc.Scan(); line++ {
		cols := strings.Split(sc.Text(), "\t")
		if line == 0 {
			siteCol = slices.Index(cols, "site")
			continue // header
		}
		name := cols[0]
		if name == "" {
			continue
		}
		// The site is its column's first word: a few say after it how it
		// was found ("reddit.com (per filename)"). Without that column,
		// the file's name stands for it.
		site := path.Base(name)
		if siteCol >= 0 {
			var w []string
			if siteCol < len(cols) {
				w = strings.Fields(cols[siteCol])
			}
			if len(w) == 0 {
				return nil, fmt.Errorf("corpus: MANIFEST.tsv names %s without its site", name)
			}
			site = w[0]
		}
		body, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			// Not %w: a file the manifest names but that is missing is a
			// broken corpus, not an absent one.
			return nil, fmt.Errorf("corpus: MANIFEST.tsv names %s: %v", name, err)
		}
		files = append(files, corpusFile{name: name, site: site, body: body})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("corpus: %s lists no files", filepath.Join(dir, "MANIFEST.tsv"))
	}
	return files, nil
}

// findFile returns the corpus file whose name ends in suffix.
func findFile(tb testing.TB, files []corpusFile, suffix string) corpusFile {
	tb.Helper()
	for _, f := range files {
		if strings.HasSuffix(f.name, suffix) {
			return f
		}
	}
	tb.Fatalf("corpus has no file named *%s", suffix)
	return corpusFile{}
}

// query is one question asked of every implementation: may agent fetch
// url, under the rules of file number file?
type query struct {
	file  int
	agent string
	url   string // path and query, ASCII, percent-encoded; or an absolute URL
	// path is url's path and query, what temoto is given: its API takes
	// nothing else. It is url itself when url is a path.
	path string
}

// corpusQueries returns the queries asked of each file: genericPaths plus
// paths derived from up to rulePathsPerFile of the file's own rules, each
// for every agent. The result depends only on the files.
func corpusQueries(files []corpusFile) []query {
	var qs []query
	for i, f := range files {
		for _, p := range filePaths(f.body) {
			for _, a := range agents {
				qs = append(qs, query{file: i, agent: a, url: p, path: p})
			}
		}
	}
	return qs
}

// streamAgents are the product tokens of the stream queries: three that
// hundreds of corpus files name (Googlebot 397 files, bingbot 212,
// Baiduspider 154) and one that none does.
var streamAgents = []string{"Googlebot", "Bingbot", "Baiduspider", "ExampleBot"}

// streamPerFile is how many stream queries each file gets.
const streamPerFile = 6

// streamSeed seeds the choice and order of the stream queries.
const streamSeed = 14

// streamQueries returns the queries of a crawler's frontier: for each file
// whose number ok accepts, streamPerFile of its query paths (see
// filePaths) picked at random, each as an absolute https URL on the
// file's site and for an agent picked at random from streamAgents; then
// all of them shuffled, so that consecutive queries go to different files.
// The result depends only on the files and ok.
func streamQueries(files []corpusFile, ok func(file int) bool) []query {
	rng := rand.New(rand.NewPCG(streamSeed, streamSeed))
	var qs []query
	for i, f := range files {
		if !ok(i) {
			continue
		}
		paths := filePaths(f.body)
		rng.Shuffle(len(paths), func(a, b int) { paths[a], paths[b] = paths[b], paths[a] })
		for _, p := range paths[:min(streamPerFile, len(paths))] {
			a := streamAgents[rng.IntN(len(streamAgents))]
			u := "https://" + f.site + p
			// temoto's path is the URL's own: both read the same bytes,
			// in the same state of the caches.
			qs = append(qs, query{file: i, agent: a, url: u, path: u[len(u)-len(p):]})
		}
	}
	rng.Shuffle(len(qs), func(a, b int) { qs[a], qs[b] = qs[b], qs[a] })
	return qs
}

// filePaths returns the query paths for one robots.txt body.
func filePaths(body []byte) []string {
	return append(append([]string(nil), genericPaths...), rulePaths(body, rulePathsPerFile)...)
}

// rulePatterns returns the values of the allow and disallow lines of body
// that start with "/", in file order. It is a rough scan, good enough to
// choose query paths; it is not used to decide anything.
func rulePatterns(body []byte) []string {
	var out []string
	for len(body) > 0 {
		var line []byte
		if i := bytes.IndexAny(body, "\r\n"); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			line, body = body, nil
		}
		if i := bytes.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		key, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		key = bytes.ToLower(bytes.TrimSpace(key))
		if !bytes.Equal(key, []byte("allow")) && !bytes.Equal(key, []byte("disallow")) {
			continue
		}
		value = bytes.TrimSpace(value)
		if len(value) > 0 && value[0] == '/' {
			out = append(out, string(value))
		}
	}
	return out
}

// concretePath turns a rule pattern into a path the rule matches: each
// wildcard becomes a short literal, an end anchor is dropped, and the result
// is made ASCII and validly percent-encoded.
func concretePath(pattern string) string {
	pattern = strings.TrimSuffix(pattern, "$")
	pattern = strings.ReplaceAll(pattern, "*", "x7")
	return escapePath(pattern)
}

// escapePath percent-encodes the bytes of p that may not stand raw in a
// URL (controls, space, non-ASCII and the like) and a "%" that does not
// start an escape, leaving everything else as written.
func escapePath(p string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '%' && i+2 < len(p) && isHex(p[i+1]) && isHex(p[i+2]):
			b.WriteByte(c)
		case c <= ' ' || c >= 0x7f || c == '%' || strings.IndexByte("\"<>\\^`{|}", c) >= 0:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
