package matcher

import (
	"math/rand"
	"strings"
	"testing"
)

// usageQuery is one query of BenchmarkUsageCorpus.
type usageQuery struct {
	r          *Robots
	agent, url string
}

// usageQueries returns the queries of BenchmarkQueryCorpus, on the corpus
// as it is (withUsage false: no file states a preference) or with usage
// lines added before the first group of each file: a Content-Signal line
// as Cloudflare writes it, a Content-Usage line for every path and three
// for paths of the file's own rules.
func usageQueries(b *testing.B, withUsage bool) []usageQuery {
	bodies, _ := readCorpus(b)
	var qs []usageQuery
	generic := []string{"/", "/index.html", "/search?q=running+shoes&page=2", "/about/contact", "/wp-admin/admin-ajax.php"}
	for _, body := range bodies {
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
		if withUsage {
			head := "Content-Signal: search=yes, ai-train=no, ai-input=no\nContent-Usage: train-ai=n\n"
			for i := 0; i < 3 && len(derived) > 0; i++ {
				head += "Content-Usage: " + derived[i*len(derived)/3] + " train-ai=y, search=y\n"
			}
			body = append([]byte(head), body...)
		}
		r := Parse(body)
		for _, p := range paths {
			qs = append(qs, usageQuery{r, "Googlebot", p}, usageQuery{r, "ExampleBot", p})
		}
	}
	rng := rand.New(rand.NewSource(1))
	rng.Shuffle(len(qs), func(i, j int) { qs[i], qs[j] = qs[j], qs[i] })
	return qs
}

// BenchmarkUsageCorpus compares asking the usage of a URL with asking its
// verdict, over the corpus's files as they are and with usage lines added,
// cycling through the files as BenchmarkQueryCorpus does.
//
//	go test ./matcher -run '^$' -bench 'UsageCorpus' -benchmem -count 6
func BenchmarkUsageCorpus(b *testing.B) {
	for _, withUsage := range []bool{false, true} {
		name := "as-is"
		if withUsage {
			name = "with-usage"
		}
		b.Run(name, func(b *testing.B) {
			qs := usageQueries(b, withUsage)
			for _, q := range qs { // build the indexes of the groups asked about
				q.r.Allowed(q.agent, q.url)
				_ = q.r.Usage(q.agent, q.url).String()
			}
			b.Run("Allowed", func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					q := &qs[i]
					q.r.Allowed(q.agent, q.url)
					if i++; i == len(qs) {
						i = 0
					}
				}
			})
			b.Run("ContentUsage", func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					q := &qs[i]
					_ = q.r.Usage(q.agent, q.url).String()
					if i++; i == len(qs) {
						i = 0
					}
				}
			})
			b.Run("Usage", func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					q := &qs[i]
					q.r.Usage(q.agent, q.url)
					if i++; i == len(qs) {
						i = 0
					}
				}
			})
		})
	}
}

// BenchmarkContentUsage compares ContentUsage with Allowed on a small file
// of the usual shape with usage lines: a Content-Signal line for every
// crawler, as Cloudflare writes it, and Content-Usage lines in the groups.
//
//	go test ./matcher -run '^$' -bench 'ContentUsage$' -benchmem
func BenchmarkContentUsage(b *testing.B) {
	r := Parse([]byte("Content-Signal: search=yes, ai-train=no\n" + benchRobots +
		"Content-Usage: /docs/ train-ai=y\n\nUser-agent: *\nContent-Usage: /blog/ train-ai=y\n"))
	// Cloudflare's managed robots.txt: one Content-Signal line before
	// the groups, nothing else.
	cf := Parse([]byte("Content-Signal: search=yes, ai-train=no\n" + benchRobots))
	b.Run("Cloudflare/Allowed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			cf.Allowed("ExampleBot", "https://example.com/products/shoes?color=red")
		}
	})
	b.Run("Cloudflare/ContentUsage", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = cf.Usage("ExampleBot", "https://example.com/products/shoes?color=red").String()
		}
	})
	for _, u := range []string{
		"https://example.com/products/shoes?color=red",
		"/docs/manual%20v2.pdf",
		"/caf%C3%A9/menu",
	} {
		name := strings.ReplaceAll(u, "/", "_")
		b.Run("Allowed"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r.Allowed("Googlebot", u)
			}
		})
		b.Run("ContentUsage"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = r.Usage("Googlebot", u).String()
			}
		})
	}
}
