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
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Robots is a parsed robots.txt file. It is immutable once returned by
// [Parse] and safe for concurrent use by multiple goroutines.
type Robots struct {
	agents   []agentGroup // sorted by token
	star     *Group       // the "*" groups combined, or nil
	sitemaps []string
}

// agentGroup is the combined group of one product token.
type agentGroup struct {
	key   uint64 // keyFold8(token)
	token string // lower case
	group *Group
}

// block is one group as written in the file: user-agent lines, then rules.
type block struct {
	line             int // of its first user-agent line
	rulesLo, rulesHi int // its rules, in parser.rules
	hasRules         bool
	delay            time.Duration
	hasDelay         bool
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
func Parse(body []byte) *Robots {
	sc := scratchPool.Get().(*scratch)
	var (
		s        scanner
		blocks   = sc.blocks[:0]
		cur      *block
		tokens   = sc.tokens[:0]
		rules    = sc.rules[:0]
		arena    = sc.arena[:0]
		sitemaps []string
	)
	s.init(body)
	for s.next() {
		switch s.field {
		case fieldUserAgent:
			if cur == nil || cur.hasRules {
				blocks = append(blocks, block{line: s.num, rulesLo: len(rules), rulesHi: len(rules)})
				cur = &blocks[len(blocks)-1]
			}
			tok, _ := productToken(s.value)
			tokens = append(tokens, tokenBlock{strings.ToLower(string(tok)), len(blocks) - 1})
		case fieldAllow, fieldDisallow:
			if cur == nil {
				continue // a rule before any user-agent line belongs to no group
			}
			cur.hasRules = true
			v := s.value
			if len(v) == 0 || v[0] != '/' && v[0] != '*' {
				continue // an empty rule is ignored; any other matches nothing
			}
			r := rule{pat: uint32(len(arena)), line: uint32(s.num), allow: s.field == fieldAllow}
			arena = appendNormRule(arena, v)
			r.n = uint32(len(arena)) - r.pat
			r.setKind(arena[r.pat:])
			if string(arena[r.pat:]) != string(v) {
				// Keep the pattern as written too, after the normalised
				// one, with its length first.
				r.written = true
				arena = binary.AppendUvarint(arena, uint64(len(v)))
				arena = append(arena, v...)
			}
			rules = append(rules, r)
			cur.rulesHi = len(rules)
		case fieldSitemap:
			if len(s.value) > 0 {
				sitemaps = append(sitemaps, string(s.value))
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
	r := build(arena, slices.Clone(rules), blocks, tokens, sitemaps)
	if cap(arena) <= maxScratch && cap(rules) <= maxScratch/16 {
		sc.blocks, sc.tokens, sc.rules, sc.arena = blocks, tokens, rules, arena
		scratchPool.Put(sc)
	}
	return r
}

// scratch holds the working buffers of Parse, reused across calls so that
// parsing allocates little more than what the result keeps.
type scratch struct {
	blocks []block
	tokens []tokenBlock
	rules  []rule
	arena  []byte
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// maxScratch bounds, in bytes, the buffers kept in scratchPool.
const maxScratch = 1 << 20

// tokenBlock records that a user-agent line of a block names token.
type tokenBlock struct {
	token string // lower case; "*" for the "*" group
	block int
}

// build combines the blocks that name each token into one Group each.
// arena holds the normalised patterns; build adds the tokens to it, so that
// all of a file's strings lie together in memory.
func build(arena []byte, rules []rule, blocks []block, tokens []tokenBlock, sitemaps []string) *Robots {
	r := &Robots{sitemaps: sitemaps}
	if len(tokens) == 0 {
		return r
	}
	slices.SortFunc(tokens, func(a, b tokenBlock) int {
		if c := strings.Compare(a.token, b.token); c != 0 {
			return c
		}
		return a.block - b.block
	})
	// One agent per distinct token other than "*", its token in the arena.
	type span struct{ off, n int }
	var spans []span
	for i, t := range tokens {
		if (i == 0 || t.token != tokens[i-1].token) && t.token != "*" {
			spans = append(spans, span{len(arena), len(t.token)})
			arena = append(arena, t.token...)
		}
	}
	all := string(arena)
	r.agents = make([]agentGroup, 0, len(spans))
	for _, s := range spans {
		tok := all[s.off : s.off+s.n]
		r.agents = append(r.agents, agentGroup{key: keyFold8(tok), token: tok})
	}

	single := make([]*Group, len(blocks)) // groups of one block, shared by the tokens that name only it
	var multi map[string]*Group           // groups of several blocks, by their block numbers
	// The groups live side by side in one array, which never grows: there
	// are at most as many as distinct tokens.
	groups := make([]Group, 0, len(spans)+1)
	newGroup := func(rules []rule, delay time.Duration, hasDelay bool, ids []int) *Group {
		groups = groups[:len(groups)+1]
		g := &groups[len(groups)-1]
		g.init(all, rules, delay, hasDelay)
		g.lines = make([]int, len(ids))
		for i, b := range ids {
			g.lines[i] = blocks[b].line
		}
		return g
	}
	var ids []int
	agent := 0
	for i := 0; i < len(tokens); {
		tok := tokens[i].token
		ids = ids[:0]
		for ; i < len(tokens) && tokens[i].token == tok; i++ {
			if b := tokens[i].block; len(ids) == 0 || ids[len(ids)-1] != b {
				ids = append(ids, b)
			}
		}
		var g *Group
		if len(ids) == 1 {
			b := &blocks[ids[0]]
			if g = single[ids[0]]; g == nil {
				g = newGroup(rules[b.rulesLo:b.rulesHi:b.rulesHi], b.delay, b.hasDelay, ids)
				single[ids[0]] = g
			}
		} else {
			key := make([]byte, 0, 8*len(ids))
			for _, b := range ids {
				key = strconv.AppendInt(key, int64(b), 10)
				key = append(key, ',')
			}
			if g = multi[string(key)]; g == nil {
				var rs []rule
				var delay time.Duration
				hasDelay := false
				for _, bi := range ids {
					b := &blocks[bi]
					rs = append(rs, rules[b.rulesLo:b.rulesHi]...)
					if b.hasDelay && (!hasDelay || b.delay > delay) {
						delay, hasDelay = b.delay, true
					}
				}
				g = newGroup(rs, delay, hasDelay, ids)
				if multi == nil {
					multi = make(map[string]*Group)
				}
				multi[string(key)] = g
			}
		}
		if tok == "*" {
			r.star = g
		} else {
			r.agents[agent].group = g
			agent++
		}
	}
	return r
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
func (r *Robots) Allowed(agent, url string) bool { return r.Group(agent).Allowed(url) }

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
	key := keyFold8(agent)
	lo, hi := 0, len(r.agents)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if a := &r.agents[m]; a.key < key || a.key == key && compareFold(agent, a.token) > 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(r.agents) && compareFold(agent, r.agents[lo].token) == 0 {
		return r.agents[lo].group
	}
	if r.star != nil {
		return r.star
	}
	return emptyGroup
}

// Sitemaps returns the values of the sitemap lines, in file order.
func (r *Robots) Sitemaps() []string { return slices.Clone(r.sitemaps) }

// Match is a verdict and the rule that decided it.
type Match struct {
	Allowed bool
	// Rule is the deciding rule as written, with its canonical key, as in
	// "Disallow: /private". It is empty when no rule decided.
	Rule string
	// Line is the 1-based line number of Rule in the file, or 0.
	Line int
}
