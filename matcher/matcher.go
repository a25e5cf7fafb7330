// Package matcher parses robots.txt files and matches URLs against them, as
// RFC 9309 specifies, with the leniency of Google's reference parser.
//
// The package is pure: it does no I/O and imports no net/http. [Parse] never
// fails and never panics, whatever the input: lines it cannot use are
// ignored, and [Lint] says which and why.
//
// # Groups
//
// A crawler obeys the groups whose user-agent lines name its product token,
// combined; if none does, the "*" groups, combined; if there is none either,
// nothing is restricted (RFC 9309 §2.2.1). A user-agent line names the
// leading run of a-zA-Z0-9_- characters of its value, so "Googlebot/2.1"
// names Googlebot. The caller's token is compared whole and without regard
// to ASCII case.
//
// # Matching
//
// The rule with the longest pattern that matches the URL's path and query
// decides, and allow wins a tie (RFC 9309 §2.2.2). '*' matches any run of
// characters and a final '$' anchors a pattern at the end of the URL. Rules
// and URLs are compared after percent-encoding normalisation: "%62" is "b",
// "%2f" is "%2F", a raw "ツ" is "%E3%83%84", and a '*' or '$' in a URL
// matches "%2A" or "%24" in a rule. /robots.txt itself is always allowed.
//
// # Crawl-delay
//
// Crawl-delay is not part of RFC 9309; [Group.CrawlDelay] reports it for
// crawlers that honour it. Its value is a non-negative decimal number of
// seconds, fractions allowed ("0.5"); anything else is ignored. A group with
// several crawl-delay lines, or several groups combined, takes the largest.
//
// Request-rate ("Request-rate: 1/5s", n requests each T; units s, m, h,
// seconds if none) is not part of RFC 9309 either; [Group.RequestRate]
// reports it as the interval T/n, the longest of a group's lines.
//
// # Usage preferences
//
// Content-Usage (draft-ietf-aipref-attach) and Content-Signal (Cloudflare's
// Content Signals Policy) lines say how fetched content may be used, such
// as for AI training; they never change whether a URL may be fetched.
// [Robots.Usage] and [Group.Usage] tell the preference that applies to a
// URL: of each kind, the most specific matching line decides, and the two
// combine label by label, "n" first. Package usage says what a preference
// holds.
//
// # Example
//
//	r := matcher.Parse(body)
//	r.Allowed("ExampleBot", "https://example.com/private/x")
//
//	g := r.Group("ExampleBot") // pick the group once, match many URLs
//	for _, u := range urls {
//		if g.Allowed(u) {
//			// fetch u
//		}
//	}
//
// Matching a URL does not allocate, unless its path and query need
// normalising (such as "%7e", "*" or a raw "ツ") and are longer than 21 KiB.
// Its cost follows the length of the path, not the size of the file: a
// group of many rules is indexed by their literal prefixes.
package matcher

import (
	"bytes"
	"cmp"
	"errors"
	"math"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/f9014239/robots/internal/memsize"
)

// Robots is a parsed robots.txt file. It is immutable once returned by
// [Parse] and safe for concurrent use by multiple goroutines.
//
// All of a file's patterns and tokens lie in one string, and all of its
// rules in one slice, each group's rules side by side, so that a file of
// many small groups costs few allocations and little memory.
type Robots struct {
	// What a query reads first comes first, in the struct's first 88
	// bytes: a query whose token is not among the file's agents, of a file
	// whose "*" group is scanned, is answered from these, the prints, the
	// rules and the patterns, without reading the agents or the groups.
	agentBits      uint64                // bit agentBit(agents[i].key) set for each agent
	star           int32                 // the group of "*", or -1
	starLo, starHi uint32                // the rules of the "*" group when it is or may be scanned (see setStar); else 0
	starLazy       bool                  // the "*" group's first use decides whether it is scanned: then by starIx's prints
	starIx         atomic.Pointer[index] // the "*" group's index, once its first use found it scanned
	rules          []rule                // the groups' rules, each group's in a range of its own
	prints         string                // what each rule of a group that Parse scans needs of a path: see appendPrints
	arena          string                // each rule's line byte (see lineOf) and normalised pattern, then the agents' tokens

	agents   []agentGroup    // sorted by token
	groups   []Group         // in the order of their first user-agent lines
	lines    []int32         // the first user-agent line of each block of each group
	marks    []lineMark      // the line numbers of the rules: see lineOf
	sitemaps string          // the values of the sitemap lines, each but the last followed by a line feed, which no value holds
	licenses string          // the absolute URLs of the license lines, as sitemaps
	delays   []time.Duration // the groups' crawl-delays
	rates    []groupRate     // the request-rates of the groups that have one, by Group.ln (requestrate.go)
	visits   []groupVisit    // the visit-times of the groups that have one, by Group.ln (visittime.go)
	usage    *usageData      // the Content-Usage and Content-Signal lines; nil if none (usage.go)

	mu   sync.Mutex   // serialises the building of the groups' indexes and the counting of size
	size atomic.Int64 // see Size: 0 until counted
}

// agentGroup is the combined group of one product token.
type agentGroup struct {
	key   uint64 // keyFold8(token)
	tok   uint32 // the token, lower case, in arena up to the next agent's tok (or the end of arena)
	group uint32 // in groups
}

// token returns the token of agents[i].
func (r *Robots) token(i int) string {
	end := uint32(len(r.arena))
	if i+1 < len(r.agents) {
		end = r.agents[i+1].tok
	}
	return r.arena[r.agents[i].tok:end]
}

// agentGroup returns the group of agents[i].
func (r *Robots) agentGroup(i int) *Group { return &r.groups[r.agents[i].group] }

// block is one group as written in the file: user-agent lines, then rules.
type block struct {
	line             int // of its first user-agent line
	rulesLo, rulesHi int // its rules, in parser.rules
	hasRules         bool
	delay            time.Duration
	hasDelay         bool
	usageLo, usageHi int // its usage lines, in usageCollector.lines
}

// Parse parses a robots.txt body. It never fails: lines that are not valid
// are ignored (RFC 9309 §2.3.1.5). Parsing is lenient in the ways Google's parser
// is: keys are matched case-insensitively and by prefix, common misspellings
// such as "dissallow" and "useragent" are accepted, and a line without a
// colon that holds exactly two words is read as "key value".
//
// Parse reads all of body and keeps no reference to it. It sets no size
// limit of its own: RFC 9309 §2.5 lets a crawler stop after 500 KiB
// ([MaxSize]), and the robots package reads no more than that when it
// fetches a file; a caller with a body of its own may cut it there first.
// A rule holds at most 512 KiB of normalised pattern: a longer disallow
// rule is cut there, which disallows more, and a longer allow rule is
// ignored, which allows less.
func Parse(body []byte) *Robots {
	sc := scratchPool.Get().(*scratch)
	p := parser{sc: sc, blocks: sc.blocks[:0], tokens: sc.tokens[:0], rules: sc.rules[:0], arena: sc.arena[:0],
		smaps: sc.smaps[:0], lines: lineMarker{marks: sc.marks[:0]}}
	var s scanner
	s.init(body)
	s.keysOnly = true
	for s.next() {
		p.line(&s)
	}
	r := build(&p)
	p.recycle()
	return r
}

// parser is the state of one Parse.
type parser struct {
	sc     *scratch
	blocks []block
	cur    *block // the last of blocks, or nil before the first user-agent line
	tokens []tokenBlock
	rules  []rule
	arena  []byte
	smaps  []byte
	lics   []byte // the license lines' URLs, as smaps; rare, not pooled
	lines  lineMarker
	rates  []blockRate  // the blocks' request-rates, in block order (requestrate.go)
	visits []blockVisit // the blocks' visit-times, in block order (visittime.go); rare, not pooled
}

// line reads the line s has scanned.
func (p *parser) line(s *scanner) {
	switch s.field {
	case fieldUserAgent:
		if p.cur == nil || p.cur.hasRules {
			n, u := len(p.rules), len(p.sc.usage.lines)
			p.blocks = append(p.blocks, block{line: s.num, rulesLo: n, rulesHi: n, usageLo: u, usageHi: u})
			p.cur = &p.blocks[len(p.blocks)-1]
		}
		tok, _ := productToken(s.value)
		off := len(p.sc.toks)
		for _, c := range tok {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			p.sc.toks = append(p.sc.toks, c)
		}
		lower := p.sc.toks[off:]
		p.tokens = append(p.tokens, tokenBlock{keyFold8(string(lower)), uint32(off), uint32(len(lower)), len(p.blocks) - 1})
	case fieldAllow, fieldDisallow:
		if p.cur != nil {
			p.cur.hasRules = true
			p.rule(s.num, s.value, s.field == fieldAllow)
		}
	case fieldSitemap:
		if len(s.value) > 0 {
			if len(p.smaps) > 0 {
				p.smaps = append(p.smaps, '\n')
			}
			p.smaps = append(p.smaps, s.value...)
		}
	case fieldLicense:
		// Global, as a sitemap: it belongs to no group (RSL 1.0).
		if isAbsURL(s.value) {
			if len(p.lics) > 0 {
				p.lics = append(p.lics, '\n')
			}
			p.lics = append(p.lics, s.value...)
		}
	case fieldContentUsage, fieldContentSignal:
		p.sc.usage.add(s, p.cur == nil)
		if p.cur != nil {
			p.cur.hasRules = true // a rule of its group
			p.cur.usageHi = len(p.sc.usage.lines)
		}
	case fieldRequestRate:
		p.requestRate(s)
	case fieldVisitTime:
		p.visitTime(s)
	case fieldCrawlDelay:
		if p.cur == nil {
			return
		}
		if d, ok := parseDelay(s.value); ok && (!p.cur.hasDelay || d > p.cur.delay) {
			p.cur.delay, p.cur.hasDelay = d, true
		}
	}
}

// rule adds the allow or disallow rule of pattern v on line num to the
// current block.
func (p *parser) rule(num int, v []byte, allow bool) {
	if len(v) == 0 || v[0] != '/' && v[0] != '*' {
		return // an empty rule is ignored; any other matches nothing
	}
	p.arena = p.lines.add(p.arena, num)
	pat := uint32(len(p.arena))
	if kind, ok := plainPattern(v); ok && len(v) <= maxPattern {
		// Normalised as written, as most patterns are.
		p.arena = append(p.arena, v...)
		p.rules = append(p.rules, makeRule(pat, v, allow, kind, false, false))
		p.cur.rulesHi = len(p.rules)
		return
	}
	p.arena = appendNormRule(p.arena, v)
	if len(p.arena)-int(pat) > maxPattern {
		var ok bool
		if p.arena, ok = capPattern(p.arena, int(pat), maxPattern, allow); !ok {
			return
		}
	}
	norm := p.arena[pat:]
	written := !bytes.Equal(norm, v)
	decoded := written && decodesTo(norm, v)
	rl := makeRule(pat, norm, allow, patternKind(norm), written && !decoded, decoded)
	if written && !decoded {
		// Keep how to edit the normalised pattern into the one written,
		// after it.
		p.arena = appendEdit(p.arena, norm, v)
	}
	p.rules = append(p.rules, rl)
	p.cur.rulesHi = len(p.rules)
}

// recycle drops p's references to the body and returns its buffers to
// scratchPool, unless they have grown too large to keep.
func (p *parser) recycle() {
	sc, uc := p.sc, &p.sc.usage
	clear(uc.lines) // drop the references to body
	uc.lines, uc.nFile = uc.lines[:0], 0
	if cap(uc.lines) > maxScratch/32 {
		uc.lines = nil
	}
	if cap(p.arena) > maxScratch || cap(p.rules) > maxScratch/8 || cap(p.smaps) > maxScratch ||
		cap(p.tokens) > maxScratch/24 || cap(p.lines.marks) > maxScratch/8 || cap(sc.toks) > maxScratch {
		return
	}
	sc.toks = sc.toks[:0]
	sc.blocks, sc.tokens, sc.rules, sc.arena, sc.smaps, sc.marks = p.blocks, p.tokens, p.rules, p.arena, p.smaps, p.lines.marks
	scratchPool.Put(sc)
}

// scratch holds the working buffers of Parse, reused across calls so that
// parsing allocates little more than what the result keeps.
type scratch struct {
	agents []agentGroup
	blocks []block
	tokens []tokenBlock
	toks   []byte // the tokens' bytes
	rules  []rule
	arena  []byte
	smaps  []byte
	groups []groupSpec
	ids    []int
	marks  []lineMark
	usage  usageCollector
	prints []byte // appendPrints's
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// maxScratch bounds, in bytes, the buffers kept in scratchPool.
const maxScratch = 1 << 20

// tokenBlock records that a user-agent line of a block names a token, in
// lower case, that lies in scratch.toks; "*" for the "*" group.
type tokenBlock struct {
	key      uint64 // keyFold8(token), by which build sorts most tokens without comparing them whole
	off, len uint32
	block    int
}

// groupSpec is a group to build: the blocks it combines, ids[lo:hi].
type groupSpec struct {
	lo, hi int
}

// build combines the blocks that name each token into one Group each.
func build(p *parser) *Robots {
	r := &Robots{star: -1}
	sc := p.sc
	tok := func(t tokenBlock) []byte { return sc.toks[t.off : t.off+t.len] }
	// By token, as the agents are (see Robots.agent): the keys, their
	// first 8 bytes, order tokens as the tokens do, and most pairs
	// without comparing the strings.
	slices.SortFunc(p.tokens, func(a, b tokenBlock) int {
		if a.key != b.key {
			return cmp.Compare(a.key, b.key)
		}
		if c := bytes.Compare(tok(a), tok(b)); c != 0 {
			return c
		}
		return a.block - b.block
	})
	// One agent per distinct token other than "*", its token in the arena.
	agents := sc.agents[:0]
	for i, t := range p.tokens {
		if (i == 0 || !bytes.Equal(tok(t), tok(p.tokens[i-1]))) && string(tok(t)) != "*" {
			agents = append(agents, agentGroup{key: t.key, tok: uint32(len(p.arena))})
			p.arena = append(p.arena, tok(t)...)
		}
	}
	if cap(agents) <= maxScratch/16 {
		sc.agents = agents
	}
	r.agents = slices.Clone(agents)
	for _, a := range agents {
		r.agentBits |= agentBit(a.key)
	}
	r.arena = string(p.arena)
	r.marks = slices.Clone(p.lines.marks)
	if len(p.smaps) > 0 {
		r.sitemaps = string(p.smaps)
	}
	if len(p.lics) > 0 {
		r.licenses = string(p.lics)
	}
	specs, ids := r.groupSpecs(p)
	r.fillGroups(p, specs, ids)
	r.buildUsage(&sc.usage, p.blocks, specs, ids)
	r.buildRates(p.rates, specs, ids)
	r.buildVisits(p.visits, specs, ids)
	if cap(specs) <= maxScratch/16 && cap(ids) <= maxScratch/8 {
		sc.groups, sc.ids = specs, ids
	}
	return r
}

// groupSpecs returns the groups to build: one per distinct set of blocks
// that some token names, the blocks of each as numbers in file order in
// ids. It sets the group of each agent and r.star.
func (r *Robots) groupSpecs(p *parser) (specs []groupSpec, ids []int) {
	specs, ids = p.sc.groups[:0], p.sc.ids[:0]
	single := make([]int32, len(p.blocks)) // 1 + the group of one block, shared by the tokens that name only it
	var multi map[string]int32             // groups of several blocks, by their block numbers
	toks, agent := p.sc.toks, 0
	for i := 0; i < len(p.tokens); {
		t := p.tokens[i]
		tok := toks[t.off : t.off+t.len]
		lo := len(ids)
		for ; i < len(p.tokens) && bytes.Equal(toks[p.tokens[i].off:p.tokens[i].off+p.tokens[i].len], tok); i++ {
			if b := p.tokens[i].block; len(ids) == lo || ids[len(ids)-1] != b {
				ids = append(ids, b)
			}
		}
		g := int32(-1)
		var key string
		if len(ids)-lo == 1 {
			g = single[ids[lo]] - 1
		} else {
			k := make([]byte, 0, 8*(len(ids)-lo))
			for _, b := range ids[lo:] {
				k = strconv.AppendInt(k, int64(b), 10)
				k = append(k, ',')
			}
			key = string(k)
			if gi, ok := multi[key]; ok {
				g = gi
			}
		}
		switch {
		case g >= 0:
			ids = ids[:lo]
		case len(ids)-lo == 1:
			g = int32(len(specs))
			single[ids[lo]] = g + 1
		default:
			g = int32(len(specs))
			if multi == nil {
				multi = make(map[string]int32)
			}
			multi[key] = g
		}
		if int(g) == len(specs) {
			specs = append(specs, groupSpec{lo, len(ids)})
		}
		if string(tok) == "*" {
			r.star = g
		} else {
			r.agents[agent].group = uint32(g)
			agent++
		}
	}
	return specs, ids
}

// fillGroups lays out the rules, lines and crawl-delays of the groups of
// specs, and sorts those of the groups of up to linearMax rules, which are
// scanned. Whether a larger group of up to scanMax rules is scanned too is
// decided on its first use, so that a file's groups that no crawler asks
// about cost parsing nothing more than their rules.
func (r *Robots) fillGroups(p *parser, specs []groupSpec, ids []int) {
	nRules := 0
	for _, sp := range specs {
		for _, b := range ids[sp.lo:sp.hi] {
			nRules += p.blocks[b].rulesHi - p.blocks[b].rulesLo
		}
	}
	if nRules > 0 {
		r.rules = make([]rule, 0, nRules)
	}
	if len(specs) > 0 {
		r.groups = make([]Group, len(specs))
		r.lines = make([]int32, 0, len(ids))
	}
	for gi, sp := range specs {
		g := &r.groups[gi]
		g.r, g.lo, g.ln = r, uint32(len(r.rules)), uint32(len(r.lines))
		delay := time.Duration(-1)
		for _, bi := range ids[sp.lo:sp.hi] {
			b := &p.blocks[bi]
			r.rules = append(r.rules, p.rules[b.rulesLo:b.rulesHi]...)
			if b.hasDelay && b.delay > delay {
				delay = b.delay
			}
			r.lines = append(r.lines, int32(min(b.line, maxLine)))
		}
		g.hi = uint32(len(r.rules))
		if delay >= 0 {
			if k := len(r.delays); k == 0 || r.delays[k-1] != delay {
				r.delays = append(r.delays, delay)
			}
			g.delay = uint32(len(r.delays))
		}
		switch rs := g.rules(); {
		case len(rs) <= linearMax:
			sortBest(rs)
			g.delay |= groupScanned
		case len(rs) <= scanMax:
			g.delay |= groupMayScan // decided on first use: see Group.indexLocked
		}
	}
	if len(r.rules) > 0 {
		buf := r.appendPrints(p.sc.prints[:0])
		r.prints = string(buf)
		if cap(buf) <= maxScratch {
			p.sc.prints = buf
		}
	}
	r.setStar()
}

// Size returns about how many bytes of memory r holds. It is meant for a
// cache that bounds the memory its parsed files take, so it may count more
// than r holds but not less: it counts each allocation of r at its length
// and a quarter more. Size builds the index of each group that has one
// (which is otherwise built when the group is first matched against) and
// counts it, on its first call; later calls take constant time.
func (r *Robots) Size() int {
	if n := r.size.Load(); n != 0 {
		return int(n)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := r.size.Load(); n != 0 {
		return int(n)
	}
	n := memsize.Alloc(int(reflect.TypeFor[Robots]().Size())) + r.heldBytes()
	if d := r.usage; d != nil {
		n += d.heldBytes()
	}
	r.size.Store(int64(n))
	return n
}

// heldBytes returns the bytes that r's slices and indexes hold, building
// the indexes. r.mu must be held.
func (r *Robots) heldBytes() int {
	n := memsize.Alloc(len(r.arena)) + memsize.Slice(r.rules) + memsize.Slice(r.agents) + memsize.Slice(r.groups) +
		memsize.Slice(r.lines) + memsize.Slice(r.marks) + memsize.Alloc(len(r.sitemaps)) + memsize.Alloc(len(r.licenses)) + memsize.Slice(r.delays) + memsize.Slice(r.rates) + memsize.Slice(r.visits) +
		memsize.Alloc(len(r.prints))
	for i := range r.groups {
		if g := &r.groups[i]; g.indexed() {
			n += g.indexLocked().heldBytes()
		}
	}
	return n
}

// maxLine is the largest line number a rule or group records: a rule on a
// later line reports this one.
const maxLine = 1<<27 - 1

// The line numbers of rules, which only Match reports, are kept out of
// the rule records: each rule's pattern in the arena follows a byte that
// is its line less that of the last lineMark before it. A mark is added
// when a line is more than 255 after the last, so a file holds one for
// every 256 lines of rules at most.

// lineMark is the line, base, from which the lines of the rules whose
// patterns lie in the arena from pat up to the next mark count.
type lineMark struct {
	pat, base uint32
}

// lineMarker writes the line bytes and marks of a file's rules, in file
// order.
type lineMarker struct {
	marks []lineMark
	base  uint32 // of the last mark
}

// add appends to arena the line byte of a rule on line, whose pattern
// follows it.
func (m *lineMarker) add(arena []byte, line int) []byte {
	l := uint32(min(line, maxLine))
	if l-m.base > 255 || len(m.marks) == 0 {
		m.marks = append(m.marks, lineMark{pat: uint32(len(arena)) + 1, base: l})
		m.base = l
	}
	return append(arena, byte(l-m.base))
}

// lineOf returns the line of rule rl, one of r's rules: the base of the
// last mark at or before its pattern, plus its line byte.
func (r *Robots) lineOf(rl *rule) int {
	i, _ := slices.BinarySearchFunc(r.marks, rl.pat+1, func(m lineMark, pat uint32) int { return cmp.Compare(m.pat, pat) })
	return int(r.marks[i-1].base) + int(r.arena[rl.pat-1])
}

// capPattern cuts the normalised pattern at arena[pat:], which is longer
// than limit bytes, so that a rule holds at most limit, and reports whether
// the rule is kept: an allow rule is dropped, which refuses whatever it
// would have allowed; a disallow rule is cut to its first limit bytes, less
// an escape cut in two, which disallows all that the whole does and more.
func capPattern(arena []byte, pat, limit int, allow bool) ([]byte, bool) {
	if allow {
		return arena[:pat], false
	}
	end := pat + limit
	for k := end - 1; k >= end-2 && k > pat; k-- {
		if arena[k] == '%' {
			end = k
		}
	}
	return arena[:end], true
}

// parseDelay reads a crawl-delay value: a non-negative decimal number of
// seconds, such as "10" or "0.5", or one in exponent form, such as "1e3". A
// value too large for a time.Duration asks for the longest one: a site that
// asks for a very long delay gets no shorter one than the Transport's cap.
// Anything else (negative, NaN, units, empty) is not a delay.
func parseDelay(v []byte) (time.Duration, bool) {
	const maxSeconds = int64(1<<63-1) / int64(time.Second)
	var sec int64
	digits := 0
	i := 0
	for ; i < len(v) && '0' <= v[i] && v[i] <= '9'; i++ {
		if sec <= maxSeconds {
			sec = sec*10 + int64(v[i]-'0')
		}
		digits++
	}
	var frac time.Duration
	if i < len(v) && v[i] == '.' {
		i++
		scale := time.Second
		for ; i < len(v) && '0' <= v[i] && v[i] <= '9'; i++ {
			scale /= 10
			frac += time.Duration(v[i]-'0') * scale
			digits++
		}
	}
	if i < len(v) && digits > 0 && (v[i] == 'e' || v[i] == 'E') {
		return parseExpDelay(v)
	}
	if i != len(v) || digits == 0 {
		return 0, false
	}
	if sec > maxSeconds {
		return math.MaxInt64, true
	}
	d := time.Duration(sec)*time.Second + frac
	if d < 0 {
		return math.MaxInt64, true // overflow
	}
	return d, true
}

// parseExpDelay reads a crawl-delay in exponent form, such as "1e3" or
// "2.5E-1", saturated at the longest time.Duration.
func parseExpDelay(v []byte) (time.Duration, bool) {
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || f < 0 || math.IsNaN(f) {
		return 0, false
	}
	if f*float64(time.Second) >= math.MaxInt64 {
		return math.MaxInt64, true
	}
	return time.Duration(f * float64(time.Second)), true
}

// Allowed reports whether the crawler with product token agent may fetch url.
// url is an absolute URL or a path with an optional query, raw or
// percent-encoded. It is short for r.Group(agent).Allowed(url).
func (r *Robots) Allowed(agent, url string) bool {
	if i := r.agent(agent); i >= 0 {
		return r.groups[r.agents[i].group].Allowed(url)
	}
	if r.starHi == 0 {
		if r.star >= 0 {
			return r.groups[r.star].Allowed(url)
		}
		return true // no group applies; usage lines never refuse a fetch
	}
	// The "*" group, scanned without reading r.groups.
	lo, hi := r.starLo, r.starHi
	rules := r.rules[lo:hi] // whose rules are read only once they are sorted
	var i int
	if !r.starLazy {
		i = decideScanned(rules, r.arena, r.prints[lo:], r.prints[len(r.rules)+8+int(lo):], url)
	} else if ix := r.starIx.Load(); ix != nil {
		i = decideScanned(rules, r.arena, ix.prints, ix.prints[hi-lo+8:], url)
	} else {
		return r.groups[r.star].Allowed(url) // its first use, or indexed
	}
	return i < 0 || rules[i].allow()
}

// setStar records the rules of the "*" group in starLo and starHi when it
// has rules and is scanned, or may be (then starLazy), for Allowed.
func (r *Robots) setStar() {
	if r.star < 0 {
		return
	}
	if g := &r.groups[r.star]; (g.scanned() || g.mayScan()) && g.hi > g.lo {
		r.starLo, r.starHi, r.starLazy = g.lo, g.hi, g.mayScan()
	}
}

// agentBit returns the bit of agentBits that stands for agents of key,
// a keyFold8.
func agentBit(key uint64) uint64 { return 1 << ((key * 0x9E3779B97F4A7C15) >> 58) }

// Match is like Allowed but also names the deciding rule.
func (r *Robots) Match(agent, url string) Match { return r.Group(agent).Match(url) }

// Group returns the rules that govern agent: the groups that name it,
// combined, or else the "*" groups, combined, or else an empty group that
// allows everything. It never returns nil.
//
// agent is a product token such as "ExampleBot", compared whole and without
// regard to ASCII case with the token of each user-agent line. A user-agent
// line's token is the leading run of its value's a-zA-Z0-9_- characters, so
// "ExampleBot/1.2" in a file names ExampleBot, but a caller that passes
// "ExampleBot/1.2" matches no group.
func (r *Robots) Group(agent string) *Group {
	if i := r.agent(agent); i >= 0 {
		return &r.groups[r.agents[i].group]
	}
	if r.star >= 0 {
		return &r.groups[r.star]
	}
	if r.usage != nil {
		return &r.usage.none // no group, but the usage lines before the first one apply
	}
	return emptyGroup
}

// agent returns the index in agents of the token agent, compared without
// regard to ASCII case, or -1.
func (r *Robots) agent(agent string) int {
	key := keyFold8(agent)
	if r.agentBits&agentBit(key) == 0 {
		return -1 // no agent has its key; most files name no agent but "*"
	}
	i, _ := slices.BinarySearchFunc(r.agents, key, func(a agentGroup, k uint64) int { return cmp.Compare(a.key, k) })
	// Then those with the same key, which tokens of more than 8 bytes
	// share, in order.
	for ; i < len(r.agents) && r.agents[i].key == key; i++ {
		if c := compareFold(agent, r.token(i)); c <= 0 {
			if c == 0 {
				return i
			}
			break
		}
	}
	return -1
}

// Licenses returns the URLs of the License lines (RSL 1.0), in file order:
// each an absolute http or https URL, as written. A License line is global,
// whatever group it is in; one whose value is not such a URL (a relative
// one, say) is ignored, and [Lint] reports it. nil if none.
func (r *Robots) Licenses() []string {
	if r.licenses == "" {
		return nil
	}
	return strings.Split(r.licenses, "\n")
}

// isAbsURL reports whether v is an absolute http or https URL with a host.
func isAbsURL(v []byte) bool {
	u, err := url.Parse(string(v))
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// Sitemaps returns the values of the sitemap lines, in file order.
func (r *Robots) Sitemaps() []string {
	if r.sitemaps == "" {
		return nil
	}
	return strings.Split(r.sitemaps, "\n")
}

// Match is a verdict and the rule that decided it.
type Match struct {
	Allowed bool
	// Rule is the deciding rule as written, with its canonical key, as in
	// "Disallow: /private". It is empty when no rule decided.
	Rule string
	// Line is the 1-based line number of Rule in the file, or 0.
	Line int
}
