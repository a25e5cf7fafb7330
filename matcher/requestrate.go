package matcher

// Request-rate lines. Like Crawl-delay, Request-rate is not part of
// RFC 9309: it comes from the 1996 draft of an extended standard for robot
// exclusion, "Request-rate: n/T", at most n documents each T, and some
// sites still state it. [Group.RequestRate] reports it as an interval, T/n,
// for the robots package to pace an origin by; the longer of it and the
// crawl-delay wins there.
//
// The rates of a file are kept apart from its groups, which most files'
// are without: a list of the groups that have one, found by the group's
// first line number (Group.ln), which no two groups share.

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"time"
)

// fieldRequestRate is the field of a request-rate line, after those of
// usage.go.
const fieldRequestRate = fieldContentSignal + 1

// rateField returns fieldRequestRate if key is "request-rate", compared
// whole and without regard to ASCII case, or fieldNone. A field seldom
// written gets no leniency for misspellings it has not earned in the wild.
func rateField(key []byte) field {
	if len(key) == len("request-rate") && hasPrefixFold(key, "request-rate") {
		return fieldRequestRate
	}
	return fieldNone
}

// blockRate is the interval of the request-rate lines of one block (the
// longest, if it has several), while a file is parsed.
type blockRate struct {
	block int
	every time.Duration
}

// groupRate is the interval of the request-rate lines of a group: ln is
// the group's Group.ln, gi its index in Robots.groups.
type groupRate struct {
	ln, gi uint32
	every  time.Duration
}

// requestRate reads the request-rate line s has scanned, of the current
// block. A line before any user-agent line, or whose value is not a rate,
// is ignored (Lint reports it).
func (p *parser) requestRate(s *scanner) {
	if p.cur == nil {
		return
	}
	every, ok := parseRequestRate(s.value)
	if !ok {
		return
	}
	b := len(p.blocks) - 1
	if n := len(p.rates); n > 0 && p.rates[n-1].block == b {
		p.rates[n-1].every = max(p.rates[n-1].every, every)
		return
	}
	p.rates = append(p.rates, blockRate{b, every})
}

// buildRates sets r.rates from the blocks' rates, which are in block
// order: each group's is the longest of its blocks'.
func (r *Robots) buildRates(rates []blockRate, specs []groupSpec, ids []int) {
	if len(rates) == 0 {
		return
	}
	for gi, sp := range specs {
		every, found := time.Duration(0), false
		for _, b := range ids[sp.lo:sp.hi] {
			if i, ok := slices.BinarySearchFunc(rates, b, func(x blockRate, b int) int { return cmp.Compare(x.block, b) }); ok {
				every, found = max(every, rates[i].every), true
			}
		}
		if found {
			r.rates = append(r.rates, groupRate{ln: r.groups[gi].ln, gi: uint32(gi), every: every})
		}
	}
	r.rates = slices.Clip(r.rates)
}

// RequestRate returns the interval that the group's request-rate asks
// for, T/n of "Request-rate: n/T", and whether it has one. When several
// groups are combined, or a group has several request-rate lines, the
// longest interval is returned. A value too large for a time.Duration asks
// for the longest one, as a crawl-delay does (see CrawlDelay); a rate of
// very many requests per T asks for an interval of at least a nanosecond.
func (g *Group) RequestRate() (time.Duration, bool) {
	rates := g.r.rates
	if len(rates) == 0 {
		return 0, false
	}
	i, ok := slices.BinarySearchFunc(rates, g.ln, func(x groupRate, ln uint32) int { return cmp.Compare(x.ln, ln) })
	// The group of no group (see usageData.none) may share a ln; only a
	// group of the file itself has a rate.
	if !ok || int(rates[i].gi) >= len(g.r.groups) || &g.r.groups[rates[i].gi] != g {
		return 0, false
	}
	return rates[i].every, true
}

// parseRequestRate reads a request-rate value, "n/T": n documents (a
// number above 0) each T, a number above 0 followed by a unit, s, m or h,
// or by none for seconds; such as "1/5", "1/10s", "30/1m". It returns the
// interval T/n, rounded up to the nanosecond. The numbers are read as a
// crawl-delay's are (see parseDelay): a T too long for a time.Duration
// asks for the longest one. The draft's optional time of day after the
// rate ("1/10m 0800-1700") is allowed and ignored, so that the rate applies
// at all hours: it is never sooner than the site asked in the hours it
// named. A bare number N above 0, as real files write it ("Request-rate:
// 10"), is read as one request each N seconds, the slower of its two
// readings (the other being N requests a second); Lint warns of it.
// Anything else (0/0, 1/0s, 5/, 1/5x, 0) is not a rate.
func parseRequestRate(v []byte) (time.Duration, bool) {
	rate, _ := splitRateWindow(v)
	slash := -1
	for i, c := range rate {
		if c == '/' {
			slash = i
			break
		}
	}
	if slash < 0 {
		d, ok := parseDelay(rate)
		return d, ok && d > 0
	}
	n, ok := parseDelay(rate[:slash]) // n documents, as n seconds
	if !ok || n <= 0 {
		return 0, false
	}
	t := rate[slash+1:]
	unit := time.Duration(1)
	if k := len(t); k > 0 {
		switch t[k-1] | 0x20 {
		case 's':
			t = t[:k-1]
		case 'm':
			t, unit = t[:k-1], 60
		case 'h':
			t, unit = t[:k-1], 3600
		}
	}
	per, ok := parseDelay(t)
	if !ok || per <= 0 {
		return 0, false
	}
	if per > math.MaxInt64/unit {
		per = math.MaxInt64
	} else {
		per *= unit
	}
	return divCeil(per, n), true
}

// splitRateWindow splits a request-rate value into the rate and the time
// of day that may follow it after white space, such as "0800-1700" (nil
// if none). A value with anything else after the rate is returned whole,
// which is then not a rate.
func splitRateWindow(v []byte) (rate, window []byte) {
	i := indexSpace(v)
	if i < 0 {
		return v, nil
	}
	w := trimSpace(v[i:])
	if !isWindow(w) {
		return v, nil
	}
	return v[:i], w
}

// isWindow reports whether w is a time of day, "hhmm-hhmm".
func isWindow(w []byte) bool {
	if len(w) != 9 || w[4] != '-' {
		return false
	}
	for i, c := range w {
		if i != 4 && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// divCeil returns per/n seconds, where per is a number of nanoseconds of a
// period and n, a count, is given as n seconds (so in units of 1e-9),
// rounded up to the nanosecond and at least 1; the longest Duration where
// that overflows.
func divCeil(per, n time.Duration) time.Duration {
	hi, lo := bits.Mul64(uint64(per), uint64(time.Second))
	if hi >= uint64(n) {
		return math.MaxInt64
	}
	q, rem := bits.Div64(hi, lo, uint64(n))
	if q >= math.MaxInt64 {
		return math.MaxInt64
	}
	if rem != 0 || q == 0 {
		q++
	}
	return time.Duration(q)
}

// requestRate lints a request-rate line of value v.
func (l *linter) requestRate(v []byte) {
	d, ok := parseRequestRate(v)
	switch {
	case !ok:
		l.add(fmt.Sprintf("invalid request-rate %q ignored: want n/T, n requests each T, such as 1/5s (units s, m, h; seconds if none)", v))
		return
	case l.cur == nil:
		l.add("request-rate before any user-agent line ignored")
		return
	}
	rate, w := splitRateWindow(v)
	if w != nil {
		l.add(fmt.Sprintf("request-rate time of day %q ignored: the rate applies at all hours", w))
	}
	if !bytes.ContainsRune(rate, '/') {
		l.add(fmt.Sprintf("request-rate %q has no period: read as one request each %v, the slower reading; write 1/%ss to say so, or n/1s for n a second", rate, d, rate))
	}
	if !l.cur.HasRequestRate || d > l.cur.RequestRate {
		l.cur.RequestRate, l.cur.HasRequestRate = d, true
	}
}
