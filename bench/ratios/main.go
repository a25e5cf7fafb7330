// Ratios prints how package matcher compares with each peer implementation
// in the output of one run of the bench module's benchmarks.
//
// Usage:
//
//	go test -run '^$' -bench . -benchmem -count 6 | tee new.txt
//	go run ./ratios new.txt
//
// Sub-benchmarks are named Benchmark<Group>/<implementation>; "ours" is the
// baseline of each group. For every group it prints the median of the
// group's main metric for each implementation and how many times better
// ours is (peer time / our time, our MB/s / peer MB/s, peer memory / our
// memory), then the same for CPU time per op (the benchmarks' cpu-ns/op,
// which a busy machine distorts less than the wall clock), the
// allocations, whether the project's goals are met, and how the
// pathological benchmark scales with the path's length. With no
// file argument it reads standard input.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// baseline is the implementation the others are compared with.
const baseline = "ours"

// cpuUnit is the benchmarks' CPU time per operation, which a busy machine
// distorts less than the wall-clock ns/op.
const cpuUnit = "cpu-ns/op"

func main() {
	var in io.Reader = os.Stdin
	if len(os.Args) > 2 {
		fmt.Fprintln(os.Stderr, "usage: ratios [bench-output-file]")
		os.Exit(2)
	}
	if len(os.Args) == 2 {
		f, err := os.Open(os.Args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, "ratios:", err)
			os.Exit(1)
		}
		defer f.Close()
		in = f
	}
	res, err := parse(in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ratios:", err)
		os.Exit(1)
	}
	if len(res.groups) == 0 {
		fmt.Fprintln(os.Stderr, "ratios: no Benchmark<Group>/<implementation> lines in the input")
		os.Exit(1)
	}
	res.write(os.Stdout)
}

// results holds every value of a run: values[group][impl][unit].
type results struct {
	groups []string            // in order of first appearance
	impls  map[string][]string // group -> implementations, in order
	values map[string]map[string]map[string][]float64
}

// parse reads the output of go test -bench.
func parse(r io.Reader) (*results, error) {
	res := &results{
		impls:  map[string][]string{},
		values: map[string]map[string]map[string][]float64{},
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue // not a result line
		}
		name := trimProcs(strings.TrimPrefix(f[0], "Benchmark"))
		i := strings.LastIndexByte(name, '/')
		if i < 0 {
			continue
		}
		group, impl := name[:i], name[i+1:]
		if res.values[group] == nil {
			res.groups = append(res.groups, group)
			res.values[group] = map[string]map[string][]float64{}
		}
		if res.values[group][impl] == nil {
			res.impls[group] = append(res.impls[group], impl)
			res.values[group][impl] = map[string][]float64{}
		}
		for j := 2; j+1 < len(f); j += 2 {
			v, err := strconv.ParseFloat(f[j], 64)
			if err != nil {
				return nil, fmt.Errorf("bad value %q in %q", f[j], sc.Text())
			}
			unit := f[j+1]
			res.values[group][impl][unit] = append(res.values[group][impl][unit], v)
		}
	}
	return res, sc.Err()
}

// trimProcs removes the -GOMAXPROCS suffix go test adds to a name.
func trimProcs(name string) string {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return name
	}
	if _, err := strconv.Atoi(name[i+1:]); err != nil {
		return name
	}
	return name[:i]
}

// median returns the median of group/impl's values in unit, and whether
// there are any.
func (res *results) median(group, impl, unit string) (float64, bool) {
	vs := slices.Clone(res.values[group][impl][unit])
	if len(vs) == 0 {
		return 0, false
	}
	slices.Sort(vs)
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2], true
	}
	return (vs[n/2-1] + vs[n/2]) / 2, true
}

// count returns how many runs of group/impl there are.
func (res *results) count(group, impl string) int {
	return len(res.values[group][impl]["ns/op"])
}

// mainUnit returns the unit that the group is judged by, and whether a
// larger value is better in it.
func (res *results) mainUnit(group string) (unit string, higherBetter bool) {
	for _, impl := range res.impls[group] {
		if _, ok := res.values[group][impl]["retained/corpus"]; ok {
			return "retained/corpus", false
		}
		if _, ok := res.values[group][impl]["MB/s"]; ok {
			return "MB/s", true
		}
	}
	return "ns/op", false
}

// better returns how many times better ours is than peer in group's main
// unit, and whether both have a value.
func (res *results) better(group, peer string) (float64, bool) {
	unit, higher := res.mainUnit(group)
	return res.betterIn(group, peer, unit, higher)
}

// betterIn returns how many times better ours is than peer in unit, and
// whether both have a value.
func (res *results) betterIn(group, peer, unit string, higher bool) (float64, bool) {
	o, ok1 := res.median(group, baseline, unit)
	p, ok2 := res.median(group, peer, unit)
	if !ok1 || !ok2 || o == 0 || p == 0 {
		return 0, false
	}
	if higher {
		return o / p, true
	}
	return p / o, true
}

// peers returns every implementation named in the run other than ours.
func (res *results) peers() []string {
	var out []string
	for _, g := range res.groups {
		for _, impl := range res.impls[g] {
			if impl != baseline && !slices.Contains(out, impl) {
				out = append(out, impl)
			}
		}
	}
	return out
}

// A goal is one of the project's performance goals.
type goal struct {
	group string
	check func(res *results) (got string, met, ok bool)
}

func fasterThan(group, peer string, times float64) goal {
	return goal{group, func(res *results) (string, bool, bool) {
		x, ok := res.better(group, peer)
		got := fmt.Sprintf("≥%g× %s: %.1f×", times, peer, x)
		met := x >= times
		if c, ok := res.betterIn(group, peer, cpuUnit, false); ok {
			// Met only if met by both clocks: on a busy machine the
			// wall clock can favour either side.
			got += fmt.Sprintf(" (CPU time: %.1f×)", c)
			met = met && c >= times
		}
		return got, met, ok
	}}
}

func atMost(group, unit string, limit float64) goal {
	return goal{group, func(res *results) (string, bool, bool) {
		v, ok := res.median(group, baseline, unit)
		return fmt.Sprintf("%s ≤ %g: %s", unit, limit, num(v)), v <= limit, ok
	}}
}

var goals = []goal{
	fasterThan("ParseCorpus", "temoto", 10),
	fasterThan("UseCorpus", "temoto", 4),
	fasterThan("QueryStream", "temoto", 8),
	atMost("QueryStream", "allocs/op", 0),
	fasterThan("QueryCorpus", "temoto", 8),
	atMost("QueryCorpus", "allocs/op", 0),
	fasterThan("QueryLargest", "temoto", 1000),
	fasterThan("QueryGenerated", "temoto", 100),
	fasterThan("Pathological/2000", "grobotstxt", 10),
	atMost("RetainedCorpus", "retained/corpus", 1.5),
}

func (res *results) write(w io.Writer) {
	peers := res.peers()

	fmt.Fprintf(w, "Medians; \"×\" = how many times better ours is than the peer.\n\n")
	fmt.Fprintf(w, "| benchmark | unit | runs | %s |", baseline)
	for _, p := range peers {
		fmt.Fprintf(w, " %s | ours vs %s |", p, p)
	}
	fmt.Fprintf(w, "\n|---|---|---|---:|")
	for range peers {
		fmt.Fprintf(w, "---:|---:|")
	}
	fmt.Fprintln(w)
	for _, g := range res.groups {
		unit, _ := res.mainUnit(g)
		fmt.Fprintf(w, "| %s | %s | %d | %s |", g, unit, res.count(g, baseline), res.cell(g, baseline, unit))
		for _, p := range peers {
			x := "–"
			if v, ok := res.better(g, p); ok {
				x = fmt.Sprintf("**%.1f×**", v)
			}
			fmt.Fprintf(w, " %s | %s |", res.cell(g, p, unit), x)
		}
		fmt.Fprintln(w)
	}

	res.writeCPU(w, peers)

	fmt.Fprintf(w, "\nAllocations per op (allocs/op, B/op):\n\n| benchmark | %s |", baseline)
	for _, p := range peers {
		fmt.Fprintf(w, " %s |", p)
	}
	fmt.Fprintf(w, "\n|---|---:|")
	for range peers {
		fmt.Fprintf(w, "---:|")
	}
	fmt.Fprintln(w)
	for _, g := range res.groups {
		if unit, _ := res.mainUnit(g); unit == "retained/corpus" {
			continue
		}
		fmt.Fprintf(w, "| %s | %s |", g, res.allocCell(g, baseline))
		for _, p := range peers {
			fmt.Fprintf(w, " %s |", res.allocCell(g, p))
		}
		fmt.Fprintln(w)
	}

	fmt.Fprintf(w, "\nGoals:\n\n")
	for _, gl := range goals {
		got, met, ok := gl.check(res)
		verdict := "met"
		switch {
		case !ok:
			verdict, got = "not measured", strings.SplitN(got, ":", 2)[0]
		case !met:
			verdict = "MISSED"
		}
		fmt.Fprintf(w, "- %s: %s — %s\n", gl.group, got, verdict)
	}

	res.writeScaling(w)
}

// writeCPU prints the CPU time per op of every group that reports it.
func (res *results) writeCPU(w io.Writer, peers []string) {
	var groups []string
	for _, g := range res.groups {
		if _, ok := res.median(g, baseline, cpuUnit); ok {
			groups = append(groups, g)
		}
	}
	if len(groups) == 0 {
		return
	}
	fmt.Fprintf(w, "\nCPU time per op (%s; less distorted than ns/op when the machine is busy):\n\n| benchmark | %s |", cpuUnit, baseline)
	for _, p := range peers {
		fmt.Fprintf(w, " %s | ours vs %s |", p, p)
	}
	fmt.Fprintf(w, "\n|---|---:|")
	for range peers {
		fmt.Fprintf(w, "---:|---:|")
	}
	fmt.Fprintln(w)
	for _, g := range groups {
		fmt.Fprintf(w, "| %s | %s |", g, res.cell(g, baseline, cpuUnit))
		for _, p := range peers {
			x := "–"
			if v, ok := res.betterIn(g, p, cpuUnit, false); ok {
				x = fmt.Sprintf("**%.1f×**", v)
			}
			fmt.Fprintf(w, " %s | %s |", res.cell(g, p, cpuUnit), x)
		}
		fmt.Fprintln(w)
	}
}

// writeScaling prints, for every pair of groups Name/<n1> and Name/<n2>,
// how each implementation's time grows with n.
func (res *results) writeScaling(w io.Writer) {
	type sized struct {
		n     int
		group string
	}
	families := map[string][]sized{}
	var order []string
	for _, g := range res.groups {
		i := strings.LastIndexByte(g, '/')
		if i < 0 {
			continue
		}
		n, err := strconv.Atoi(g[i+1:])
		if err != nil {
			continue
		}
		fam := g[:i]
		if families[fam] == nil {
			order = append(order, fam)
		}
		families[fam] = append(families[fam], sized{n, g})
	}
	for _, fam := range order {
		s := families[fam]
		if len(s) < 2 {
			continue
		}
		slices.SortFunc(s, func(a, b sized) int { return a.n - b.n })
		lo, hi := s[0], s[len(s)-1]
		k := float64(hi.n) / float64(lo.n)
		fmt.Fprintf(w, "\nScaling of %s from %d to %d (%.0f× longer input; %.0f× time is linear, %.0f× quadratic):\n\n",
			fam, lo.n, hi.n, k, k, k*k)
		for _, impl := range res.impls[hi.group] {
			a, ok1 := res.median(lo.group, impl, "ns/op")
			b, ok2 := res.median(hi.group, impl, "ns/op")
			if ok1 && ok2 && a > 0 {
				fmt.Fprintf(w, "- %s: %.1f× time\n", impl, b/a)
			}
		}
	}
}

func (res *results) cell(group, impl, unit string) string {
	v, ok := res.median(group, impl, unit)
	if !ok {
		return "–"
	}
	if unit == "ns/op" || unit == cpuUnit {
		return duration(v)
	}
	return num(v)
}

func (res *results) allocCell(group, impl string) string {
	a, ok1 := res.median(group, impl, "allocs/op")
	b, ok2 := res.median(group, impl, "B/op")
	if !ok1 || !ok2 {
		return "–"
	}
	return fmt.Sprintf("%s (%s B)", num(a), num(b))
}

// duration formats nanoseconds with a unit that keeps 3 significant digits.
func duration(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.3gs", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.3gms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.3gµs", ns/1e3)
	}
	return fmt.Sprintf("%.3gns", ns)
}

// num formats v with 3 significant digits, or as a whole number from 100 up.
func num(v float64) string {
	if v >= 100 || v <= -100 || v == float64(int64(v)) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
