package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/f9014239/robots/bench
BenchmarkParseCorpus/ours-8         	      10	  20000000 ns/op	 800.00 MB/s	 1000 B/op	 10 allocs/op
BenchmarkParseCorpus/ours-8         	      10	  30000000 ns/op	 600.00 MB/s	 1000 B/op	 10 allocs/op
BenchmarkParseCorpus/ours-8         	      10	  25000000 ns/op	 700.00 MB/s	 1000 B/op	 10 allocs/op
BenchmarkParseCorpus/temoto-8       	       5	 250000000 ns/op	  70.00 MB/s	 5000 B/op	 50 allocs/op
BenchmarkUseCorpus/ours-8           	      10	  20000000 ns/op	 800.00 MB/s	  20000000 cpu-ns/op
BenchmarkUseCorpus/temoto-8         	       5	 250000000 ns/op	  64.00 MB/s	  60000000 cpu-ns/op
BenchmarkQueryCorpus/ours-8         	 1000000	       100 ns/op	  80 cpu-ns/op	       0 B/op	       0 allocs/op
BenchmarkQueryCorpus/temoto-8       	  100000	       900 ns/op	 960 cpu-ns/op	      16 B/op	       1 allocs/op
BenchmarkQueryCorpus/grobotstxt-8   	   10000	     50000 ns/op	    1840 B/op	      29 allocs/op
BenchmarkPathological/2000/ours-8   	 1000000	      1000 ns/op	2000.00 MB/s	       0 B/op	       0 allocs/op
BenchmarkPathological/2000/grobotstxt-8	   10000	 20000 ns/op	 100.00 MB/s	   100 B/op	       1 allocs/op
BenchmarkPathological/20000/ours-8  	  100000	     10000 ns/op	2000.00 MB/s	       0 B/op	       0 allocs/op
BenchmarkPathological/20000/grobotstxt-8	    1000	 2000000 ns/op	  10.00 MB/s	   100 B/op	       1 allocs/op
BenchmarkRetainedCorpus/ours-8      	       3	  9000000 ns/op	  1000 retained-B	 0.5000 retained/corpus	 5 B/op	 1 allocs/op
BenchmarkRetainedCorpus/temoto-8    	       3	  9000000 ns/op	  8000 retained-B	 4.000 retained/corpus	 5 B/op	 1 allocs/op
BenchmarkNoSub-8                    	     100	       100 ns/op
PASS
ok  	github.com/f9014239/robots/bench	12.3s
`

func TestParse(t *testing.T) {
	res, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	wantGroups := "ParseCorpus UseCorpus QueryCorpus Pathological/2000 Pathological/20000 RetainedCorpus"
	if got := strings.Join(res.groups, " "); got != wantGroups {
		t.Errorf("groups = %q, want %q", got, wantGroups)
	}
	if got := strings.Join(res.impls["QueryCorpus"], " "); got != "ours temoto grobotstxt" {
		t.Errorf("QueryCorpus impls = %q", got)
	}
	if m, _ := res.median("ParseCorpus", "ours", "MB/s"); m != 700 {
		t.Errorf("median MB/s = %v, want 700", m)
	}
	if n := res.count("ParseCorpus", "ours"); n != 3 {
		t.Errorf("count = %d, want 3", n)
	}
	for _, c := range []struct {
		group, peer string
		want        float64
	}{
		{"ParseCorpus", "temoto", 10},      // MB/s: higher is better
		{"QueryCorpus", "temoto", 9},       // ns/op: lower is better
		{"QueryCorpus", "grobotstxt", 500}, //
		{"Pathological/20000", "grobotstxt", 200},
		{"RetainedCorpus", "temoto", 8}, // memory: lower is better
	} {
		if got, ok := res.better(c.group, c.peer); !ok || got != c.want {
			t.Errorf("better(%s, %s) = %v, %v; want %v", c.group, c.peer, got, ok, c.want)
		}
	}
	if _, ok := res.better("ParseCorpus", "grobotstxt"); ok {
		t.Error("better reports a ratio for a peer that did not run")
	}
}

func TestWrite(t *testing.T) {
	res, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	res.write(&b)
	out := b.String()
	for _, want := range []string{
		"| ParseCorpus | MB/s | 3 | 700 | 70 | **10.0×** | – | – |",
		"| QueryCorpus | ns/op | 1 | 100ns | 900ns | **9.0×** | 50µs | **500.0×** |",
		"| QueryCorpus | 0 (0 B) | 1 (16 B) | 29 (1840 B) |",
		"- ParseCorpus: ≥10× temoto: 10.0× — met",
		"- QueryStream: ≥8× temoto — not measured",
		"- UseCorpus: ≥4× temoto: 12.5× (CPU time: 3.0×) — MISSED",
		"- QueryCorpus: ≥8× temoto: 9.0× (CPU time: 12.0×) — met",
		"| QueryCorpus | 80ns | 960ns | **12.0×** | – | – |",
		"- QueryCorpus: allocs/op ≤ 0: 0 — met",
		"- QueryLargest: ≥1000× temoto — not measured",
		"- RetainedCorpus: retained/corpus ≤ 1.5: 0.5 — met",
		"Scaling of Pathological from 2000 to 20000",
		"- ours: 10.0× time",
		"- grobotstxt: 100.0× time",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n%s", want, out)
		}
	}
}

func TestTrimProcs(t *testing.T) {
	for in, want := range map[string]string{
		"ParseCorpus/ours-8":        "ParseCorpus/ours",
		"ParseCorpus/ours":          "ParseCorpus/ours",
		"Pathological/2000/ours-16": "Pathological/2000/ours",
		"Foo/self-test":             "Foo/self-test",
	} {
		if got := trimProcs(in); got != want {
			t.Errorf("trimProcs(%q) = %q, want %q", in, got, want)
		}
	}
}
