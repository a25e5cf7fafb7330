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
// # Usage preferences
//
// Content-Usage (IETF AIPREF) and Content-Signal lines say how fetched
// content may be used, such as for AI training; they never change whether a
// URL may be fetched. [Robots.ContentUsage] and [Group.Usage] tell the
// preference that applies to a URL: of each kind, the most specific matching
// line decides, and the two combine label by label, "n" first. See [Usage].
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
// Matching does not allocate for an ASCII URL, and its cost follows the
// length of the path, not the size of the file: each group's rules are
// indexed by their literal prefixes.
package matcher

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Robots is a parsed robots.txt file. It is immutable once returned by
// [Parse] and safe for concurrent use by multiple goroutines.
//
// All of a file's strings lie in one arena and all of its rules in one
// array, each group's rules side by side, so that a file of many small
// groups costs few allocations and little memory.
type Robots struct {
	robotsFields
	_ [robotsSize - unsafe.Sizeof(robotsFields{})]byte
}

// robotsSize is the size of Robots: 256 bytes where a pointer is 8, 192
// where it is 4, size classes of Go's allocator whose objects all start
// on a 64-byte cache line.
const robotsSize = 64 * (2 + unsafe.Sizeof(uintptr(0))/4)

// robotsFields are the fields of Robots.
type robotsFields struct {
	// The fields a query reads come first, in the first 64 bytes, then
	// starPrints, and Robots is robotsSize bytes, a size class whose
	// objects start on a cache line: a query that a small "*" group
	// decides reads the first 128 bytes of it, which the processor
	// fetches together, and no more.
	arena string // normalised and as-written patterns, then tokens
	rules []rule // the groups' rules, each group's in a range of its own
	// agentBits has the agentBit of the key of each of agents: a query
	// whose agent's bit is clear, as most are, reads no more of agents.
	// It is 0 when there are none.
	agentBits uint32
	star      int32 // the group of "*", or -1
	// starLo and starHi are the rules of the "*" group, as in
	// groups[star], so that a query that the "*" group decides need not
	// read groups when the group is small enough to be scanned.
	starLo, starHi uint32
	// The groups that are scanned have their rules first, rules[:nScan]:
	// those of more than linearMax rules, then the others. The groups
	// that are indexed follow. The prints of the first ones follow the
	// rules in the file's block: see prints.
	nScan     uint32
	starReady atomic.Bool // the "*" group is scanned and prepared (see Group.prepare)
	// starPrints are the first words of the "*" group's prints, at
	// prints[starLo:] and prints[nScan+8+starLo:] (see scanPrintsFirst),
	// when it has at most linearMax rules, which are scanned from Parse on:
	// a query that such a group decides reads its block only for the rules
	// whose prints the path has. They share the 128 bytes that the
	// processor fetches at once with the fields above.
	starPrints [2]uint64
	agents     []agentGroup // sorted by token
	groups     []Group

	lines    []int32         // the first user-agent line of each block of each group
	marks    []lineMark      // the line numbers of the rules: see lineOf
	sitemaps string          // the values of the sitemap lines, each but the last followed by a line feed, which no value holds
	delays   []time.Duration // the groups' crawl-delays
	size     atomic.Int64    // see Size: 0 until counted, then set once under mu
	usage    *usageData      // the Content-Usage and Content-Signal lines; nil if none (usage.go)

	mu sync.Mutex // serialises the building of the groups' indexes and the counting of size
}

// Robots is robotsSize bytes, the fields a query reads lie in its first
// cache line, and the first prints of its "*" group in the line after.
var (
	_ [unsafe.Sizeof(Robots{}) - robotsSize]struct{}
	_ [robotsSize - unsafe.Sizeof(Robots{})]struct{}
	_ [64 - (unsafe.Offsetof(Robots{}.starReady) + unsafe.Sizeof(Robots{}.starReady))]struct{}
	_ [128 - (unsafe.Offsetof(Robots{}.starPrints) + unsafe.Sizeof(Robots{}.starPrints))]struct{}
)

// agentBit returns the bit of agentBits that stands for the agents whose
// key is key: one of 32, picked by a multiplicative hash.
func agentBit(key uint64) uint32 { return 1 << (key * 0x9E3779B97F4A7C15 >> 59) }

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
	var (
		s      scanner
		blocks = sc.blocks[:0]
		cur    *block
		tokens = sc.tokens[:0]
		rules  = sc.rules[:0]
		arena  = sc.arena[:0]
		smaps  = sc.smaps[:0]
		uc     = &sc.usage
		lines  = lineMarker{marks: sc.marks[:0]}
	)
	s.init(body)
	s.keysOnly = true
	for s.next() {
		switch s.field {
		case fieldUserAgent:
			if cur == nil || cur.hasRules {
				blocks = append(blocks, block{line: s.num, rulesLo: len(rules), rulesHi: len(rules), usageLo: len(uc.lines), usageHi: len(uc.lines)})
				cur = &blocks[len(blocks)-1]
			}
			tok, _ := productToken(s.value)
			lower := lowerToken(&sc.toks, tok)
			tokens = append(tokens, tokenBlock{keyFold8(lower), lower, len(blocks) - 1})
		case fieldAllow, fieldDisallow:
			if cur == nil {
				continue // a rule before any user-agent line belongs to no group
			}
			cur.hasRules = true
			v := s.value
			if len(v) == 0 || v[0] != '/' && v[0] != '*' {
				continue // an empty rule is ignored; any other matches nothing
			}
			allow := s.field == fieldAllow
			arena = lines.add(arena, s.num)
			pat := uint32(len(arena))
			if kind, ok := plainPattern(v); ok && len(v) <= maxPattern {
				// Normalised as written, as most patterns are.
				arena = append(arena, v...)
				rules = append(rules, makeRule(pat, v, allow, kind, false, false))
				cur.rulesHi = len(rules)
				continue
			}
			arena = appendNormRule(arena, v)
			if len(arena)-int(pat) > maxPattern {
				var ok bool
				if arena, ok = capPattern(arena, int(pat), maxPattern, allow); !ok {
					continue
				}
			}
			n := uint32(len(arena)) - pat
			kind := patternKind(arena[pat:])
			written := string(arena[pat:]) != string(v)
			decoded := written && decodesTo(arena[pat:], v)
			if written && !decoded {
				// Keep how to edit the normalised pattern into the one
				// written, after it.
				norm := arena[pat:]
				arena = appendEdit(arena, norm, v)
			}
			rules = append(rules, makeRule(pat, arena[pat:pat+n], allow, kind, written && !decoded, decoded))
			cur.rulesHi = len(rules)
		case fieldSitemap:
			if len(s.value) > 0 {
				if len(smaps) > 0 {
					smaps = append(smaps, '\n')
				}
				smaps = append(smaps, s.value...)
			}
		case fieldContentUsage, fieldContentSignal:
			uc.add(&s, cur == nil)
			if cur != nil {
				cur.hasRules = true // a rule of its group (SPEC 10.1)
				cur.usageHi = len(uc.lines)
			}
		case fieldCrawlDelay:
			if cur == nil {
				continue
			}
			if d, ok := parseDelay(s.value); ok && (!cur.hasDelay || d > cur.delay) {
				cur.delay, cur.hasDelay = d, true
			}
		}
	}
	r := build(sc, arena, rules, lines.marks, blocks, tokens, smaps, uc)
	clear(uc.lines) // drop the references to body
	uc.lines, uc.nFile = uc.lines[:0], 0
	if cap(uc.lines) > maxScratch/32 {
		uc.lines = nil
	}
	if cap(arena) <= maxScratch && cap(rules) <= maxScratch/16 && cap(smaps) <= maxScratch && cap(tokens) <= maxScratch/16 {
		clear(tokens) // drop the token strings, whose bytes lie in sc.toks
		if cap(sc.toks) > maxScratch {
			sc.toks = nil
		}
		sc.toks = sc.toks[:0]
		sc.blocks, sc.tokens, sc.rules, sc.arena, sc.smaps = blocks, tokens, rules, arena, smaps
		if cap(lines.marks) <= maxScratch/8 {
			sc.marks = lines.marks
		}
		scratchPool.Put(sc)
	}
	return r
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
	hashes []uint64
	marks  []lineMark
	// places says where each group's rules go; prints is fewCandidates's.
	places []uint8
	prints []uint16
	usage  usageCollector
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// maxScratch bounds, in bytes, the buffers kept in scratchPool.
const maxScratch = 1 << 20

// lowerToken returns the lower case of the product token tok, an ASCII
// string, in a string that lies in *buf. The strings it returns are valid
// until *buf is reused, that is, during one Parse: appending to *buf never
// writes where an earlier string lies.
func lowerToken(buf *[]byte, tok []byte) string {
	if len(tok) == 0 {
		return ""
	}
	off := len(*buf)
	for _, c := range tok {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		*buf = append(*buf, c)
	}
	return unsafe.String(&(*buf)[off], len(tok))
}

// tokenBlock records that a user-agent line of a block names token.
type tokenBlock struct {
	key   uint64 // keyFold8(token), by which build sorts most tokens without comparing them whole
	token string // lower case; "*" for the "*" group
	block int
}

// groupSpec is a group to build: the blocks it combines, ids[lo:hi].
type groupSpec struct {
	lo, hi int
}

// Where the rules of a group go: the groups that are scanned first, those
// of more than linearMax rules (placeMid) before the others (placeSmall),
// then the groups that are indexed.
const (
	placeMid uint8 = iota
	placeSmall
	placeIndexed
)

// build combines the blocks that name each token into one Group each.
// arena holds the normalised patterns; build adds the tokens to it, so
// that the strings a query reads lie together in memory. smaps holds the
// sitemaps' values, each but the last followed by a line feed.
func build(sc *scratch, arena []byte, rules []rule, marks []lineMark, blocks []block, tokens []tokenBlock, smaps []byte, uc *usageCollector) *Robots {
	r := &Robots{robotsFields: robotsFields{star: -1}}
	// By token, as the agents are (see Robots.agent): the keys, their
	// first 8 bytes, order tokens as the tokens do, and most pairs
	// without comparing the strings.
	slices.SortFunc(tokens, func(a, b tokenBlock) int {
		if a.key != b.key {
			return cmp.Compare(a.key, b.key)
		}
		if c := strings.Compare(a.token, b.token); c != 0 {
			return c
		}
		return a.block - b.block
	})
	// One agent per distinct token other than "*", its token in the arena.
	agents := sc.agents[:0]
	for i, t := range tokens {
		if (i == 0 || t.token != tokens[i-1].token) && t.token != "*" {
			agents = append(agents, agentGroup{key: t.key, tok: uint32(len(arena))})
			arena = append(arena, t.token...)
		}
	}
	if cap(agents) <= maxScratch/16 {
		sc.agents = agents
	}
	if len(smaps) > 0 {
		r.sitemaps = string(smaps) // apart from the arena, which queries read
	}
	if len(tokens) == 0 {
		r.setSlab(nil, 0, 0, nil, arena, 0) // no user-agent line: no rules
		r.buildUsage(uc, blocks, nil, nil)
		return r
	}

	// The groups: one per distinct set of blocks that some token names.
	// Blocks are numbered in file order, so a set is a sorted list.
	specs, ids := sc.groups[:0], sc.ids[:0]
	single := make([]int32, len(blocks)) // 1 + the group of one block, shared by the tokens that name only it
	var multi map[string]int32           // groups of several blocks, by their block numbers
	agentGroups := make([]int32, 0, len(agents))
	nRules, nLines := 0, 0
	for i := 0; i < len(tokens); {
		tok := tokens[i].token
		lo := len(ids)
		for ; i < len(tokens) && tokens[i].token == tok; i++ {
			if b := tokens[i].block; len(ids) == lo || ids[len(ids)-1] != b {
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
		if g < 0 {
			g = int32(len(specs))
			specs = append(specs, groupSpec{lo, len(ids)})
			for _, b := range ids[lo:] {
				nRules += blocks[b].rulesHi - blocks[b].rulesLo
			}
			nLines += len(ids) - lo
			if len(ids)-lo == 1 {
				single[ids[lo]] = g + 1
			} else {
				if multi == nil {
					multi = make(map[string]int32)
				}
				multi[key] = g
			}
		} else {
			ids = ids[:lo]
		}
		if tok == "*" {
			r.star = g
		} else {
			agentGroups = append(agentGroups, g)
		}
	}
	// Groups of few rules, and groups of some more whose rules few paths
	// would all have to be tried against, are scanned; the others are
	// indexed.
	places := sc.places[:0]
	nScan, nMid := 0, 0
	for _, sp := range specs {
		n := 0
		for _, b := range ids[sp.lo:sp.hi] {
			n += blocks[b].rulesHi - blocks[b].rulesLo
		}
		place := placeSmall
		if n > linearMax {
			place = placeIndexed
			if n <= scanMax {
				var few bool
				few, sc.prints = fewCandidates(arena, rules, blocks, ids[sp.lo:sp.hi], sc.prints)
				if few {
					place = placeMid
					nMid += n
				}
			}
		}
		if place != placeIndexed {
			nScan += n
		}
		places = append(places, place)
	}
	if cap(places) <= maxScratch {
		sc.places = places
	}
	r.setSlab(agents, nRules, nScan, marks, arena, nLines)
	r.groups = make([]Group, len(specs))
	// Where the next group's rules go, by its place.
	var next [3]uint32
	next[placeSmall], next[placeIndexed] = uint32(nMid), uint32(nScan)
	for gi, sp := range specs {
		g := &r.groups[gi]
		at := &next[places[gi]]
		g.r, g.lo, g.ln = r, *at, uint32(len(r.lines))
		delay := time.Duration(-1)
		for _, bi := range ids[sp.lo:sp.hi] {
			b := &blocks[bi]
			*at += uint32(copy(r.rules[*at:], rules[b.rulesLo:b.rulesHi]))
			if b.hasDelay && b.delay > delay {
				delay = b.delay
			}
			r.lines = append(r.lines, int32(min(b.line, maxLine)))
		}
		g.hi = *at
		if delay >= 0 {
			if k := len(r.delays); k == 0 || r.delays[k-1] != delay {
				r.delays = append(r.delays, delay)
			}
			g.delay = uint32(len(r.delays))
		}
		if rs := r.rules[g.lo:g.hi]; len(rs) <= linearMax {
			sortBest(rs)
			r.setPrints(g.lo, g.hi)
		}
	}
	for i, g := range agentGroups {
		r.agents[i].group = uint32(g)
	}
	if r.star >= 0 {
		lo, hi := r.groups[r.star].lo, r.groups[r.star].hi
		r.starLo, r.starHi = lo, hi
		if lo < hi && hi <= r.nScan && hi-lo <= linearMax {
			r.starPrints[0], r.starPrints[1] = r.firstPrints(lo)
		}
	}
	r.buildUsage(uc, blocks, specs, ids)
	if cap(specs) <= maxScratch/16 && cap(ids) <= maxScratch/8 {
		sc.groups, sc.ids = specs, ids
	}
	return r
}

// setSlab allocates one block of memory for the agents, nRules rules, the
// prints of the first nScan, the line marks, the arena and nLines lines, in
// that order, and copies agents, marks and arena into it. A query reads
// the agents, rules, prints and arena: in one block, they share pages, and
// those of a small file share a few cache lines.
func (r *Robots) setSlab(agents []agentGroup, nRules, nScan int, marks []lineMark, arena []byte, nLines int) {
	aBytes := len(agents) * int(unsafe.Sizeof(agentGroup{}))
	rBytes := nRules * int(unsafe.Sizeof(rule{}))
	pBytes := printsBytes(nScan)
	mBytes := len(marks) * int(unsafe.Sizeof(lineMark{}))
	slab := slabBytes(len(agents), nRules, nScan, len(marks), len(arena), nLines)
	if slab == 0 {
		return
	}
	base := allocNoZero(slab)
	if len(agents) > 0 {
		r.agents = unsafe.Slice((*agentGroup)(base), len(agents))
		copy(r.agents, agents)
		for _, a := range agents {
			r.agentBits |= agentBit(a.key)
		}
	}
	if nRules > 0 {
		r.rules = unsafe.Slice((*rule)(unsafe.Add(base, aBytes)), nRules)
	}
	r.nScan = uint32(nScan)
	if len(marks) > 0 {
		r.marks = unsafe.Slice((*lineMark)(unsafe.Add(base, aBytes+rBytes+pBytes)), len(marks))
		copy(r.marks, marks)
	}
	if len(arena) > 0 {
		b := unsafe.Slice((*byte)(unsafe.Add(base, aBytes+rBytes+pBytes+mBytes)), len(arena))
		copy(b, arena)
		r.arena = unsafe.String(&b[0], len(b))
	}
	if nLines > 0 {
		r.lines = unsafe.Slice((*int32)(unsafe.Add(base, linesAt(aBytes+rBytes+pBytes+mBytes+len(arena)))), nLines)[:0]
	}
}

// allocNoZero returns a block of n bytes, n a multiple of 8, aligned to 8
// bytes, for values that hold no pointers. Unlike make, it does not zero
// the block, which setSlab would overwrite at once: every byte of the
// block whose value is used is first written (the agents, marks and arena
// are copied in, build writes each of the rules and lines, and the prints
// of a group are written before it is scanned), and only padding is left
// as it was: before the lines, at the end, and after the prints, which a
// scan reads with the prints before it but masks off. It takes the
// block from a strings.Builder, which allocates its buffer unzeroed, as
// its String returns it; an allocation of a multiple of 8 bytes is aligned
// to 8 bytes.
func allocNoZero(n int) unsafe.Pointer {
	var b strings.Builder
	b.Grow(n)
	b.WriteByte(0) // so that String has the block's address
	return unsafe.Pointer(unsafe.StringData(b.String()))
}

// prints returns what the rules of the groups that are scanned need of a
// path (see setPrints and scanPrints), which follow the rules in the
// file's block.
func (r *Robots) prints() string {
	if r.nScan == 0 {
		return ""
	}
	return unsafe.String((*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(r.rules)), len(r.rules)*int(unsafe.Sizeof(rule{})))), printsBytes(int(r.nScan)))
}

// linesAt returns the offset in the block of setSlab of the lines, which
// follow n bytes.
func linesAt(n int) int { return (n + 3) &^ 3 }

// printsBytes returns the bytes of the prints of n rules: two for each,
// and 8 after the prints of each offset, so that a scan can read the
// prints of any rule and the 7 after it as one word, rounded up to keep
// the marks that follow aligned.
func printsBytes(n int) int {
	if n == 0 {
		return 0
	}
	return (2*(n+8) + 3) &^ 3
}

// slabBytes returns the size of the block of setSlab.
func slabBytes(agents, rules, scanned, marks, arena, lines int) int {
	n := agents*int(unsafe.Sizeof(agentGroup{})) + rules*int(unsafe.Sizeof(rule{})) + printsBytes(scanned) +
		marks*int(unsafe.Sizeof(lineMark{})) + arena
	if lines > 0 {
		n = linesAt(n) + 4*lines
	}
	return (n + 7) &^ 7
}

// computeSize returns the bytes r holds, counting indexed, the bytes of
// the indexes that its groups will build when first used.
func (r *Robots) computeSize(indexed, groups int) int {
	return allocSize(int(unsafe.Sizeof(*r))) +
		allocSize(slabBytes(len(r.agents), len(r.rules), int(r.nScan), len(r.marks), len(r.arena), cap(r.lines))) +
		allocSizePtr(groups*int(unsafe.Sizeof(Group{}))) +
		allocSize(len(r.sitemaps)) +
		allocSize(cap(r.delays)*8) +
		indexed
}

// Size returns about how many bytes of memory r holds, counting each
// group's index as built: an index is built when its group is first
// matched against, and Size counts it from the start. It is meant for a
// cache that bounds the memory its parsed files take, so it may count a
// little more than r holds but not less. Size counts on its first call,
// in time linear in the number of rules, and takes constant time after.
func (r *Robots) Size() int {
	if n := r.size.Load(); n != 0 {
		return int(n)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.countSize()
}

// countSize returns Size, counting it if it has not been counted. r.mu
// must be held. It is counted on demand rather than by Parse, which most
// callers of Parse never need, and before the first index is built (see
// Group.index), since the size of an index depends on the order of its
// group's rules as parsed, which building it changes (see wideKeys).
func (r *Robots) countSize() int {
	if n := r.size.Load(); n != 0 {
		return int(n)
	}
	sc := scratchPool.Get().(*scratch)
	indexed := 0 // bytes of the indexes, once built
	for i := range r.groups {
		if g := &r.groups[i]; g.hi > r.nScan {
			var n int
			rs := g.rules()
			n, sc.hashes = indexSize(r.arena, rs, sc.hashes)
			indexed += n
		}
	}
	if cap(sc.hashes) > maxScratch/8 {
		sc.hashes = nil
	}
	scratchPool.Put(sc)
	n := r.computeSize(indexed, len(r.groups))
	if r.usage != nil {
		n += r.usage.size
	}
	r.size.Store(int64(n))
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
// seconds, such as "10" or "0.5". Anything else, including a value too large
// for a time.Duration, is not a delay.
func parseDelay(v []byte) (time.Duration, bool) {
	const maxSeconds = int64(1<<63-1) / int64(time.Second)
	var sec int64
	digits := 0
	i := 0
	for ; i < len(v) && '0' <= v[i] && v[i] <= '9'; i++ {
		sec = sec*10 + int64(v[i]-'0')
		if sec > maxSeconds {
			return 0, false
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
	if i != len(v) || digits == 0 {
		return 0, false
	}
	d := time.Duration(sec)*time.Second + frac
	if d < 0 {
		return 0, false // overflow
	}
	return d, true
}

// Allowed reports whether the crawler with product token agent may fetch url.
// url is an absolute URL or a path with an optional query, raw or
// percent-encoded. It is short for r.Group(agent).Allowed(url).
func (r *Robots) Allowed(agent, url string) bool {
	head := urlHead(url) // first: see urlHead
	var g *Group
	if i := r.agent(agent); i >= 0 {
		g = &r.groups[r.agents[i].group]
	} else if r.star < 0 {
		return true
	} else if lo, hi := r.starLo, r.starHi; hi <= r.nScan && hi-lo <= linearMax {
		// The "*" group, scanned here without reading groups, nor its
		// first prints, when it is small.
		i := r.scanDecideFirst(lo, hi, url, head, r.starPrints[0], r.starPrints[1])
		return i < 0 || r.rules[lo+uint32(i)].allow()
	} else if hi <= r.nScan && r.starReady.Load() {
		// Or larger and prepared.
		i := r.scanDecide(lo, hi, url, head)
		return i < 0 || r.rules[lo+uint32(i)].allow()
	} else {
		g = &r.groups[r.star]
	}
	if g.hi > r.nScan {
		return g.Allowed(url)
	}
	g.prepare()
	i := r.scanDecide(g.lo, g.hi, url, head)
	return i < 0 || r.rules[g.lo+uint32(i)].allow()
}

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
		return &r.usage.none // no group, but the lines before the first one (SPEC 10.1)
	}
	return emptyGroup
}

// agent returns the index in agents of the token agent, compared without
// regard to ASCII case, or -1.
func (r *Robots) agent(agent string) int {
	if r.agentBits == 0 {
		return -1 // most files name no agent but "*"
	}
	key := keyFold8(agent)
	if r.agentBits&agentBit(key) == 0 {
		return -1 // no agent has its key
	}
	agents := r.agents
	// The first agent whose key is not less, written so that the compiler
	// can use conditional moves.
	lo := 0
	for n := len(agents); n > 0; {
		half := n >> 1
		next := half
		if agents[lo+half].key < key {
			lo += half + 1
			next = n - half - 1
		}
		n = next
	}
	// Then those with the same key, which tokens of more than 8 bytes
	// share, in order.
	for ; lo < len(agents) && agents[lo].key == key; lo++ {
		if c := compareFold(agent, r.token(lo)); c <= 0 {
			if c == 0 {
				return lo
			}
			break
		}
	}
	return -1
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
