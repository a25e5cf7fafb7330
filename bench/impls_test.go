package bench

import (
	"testing"

	"github.com/f9014239/robots/matcher"
	"github.com/jimsmart/grobotstxt"
	"github.com/temoto/robotstxt"
)

// An impl is one robots.txt implementation under comparison. Each function
// calls the implementation directly (no interface in the measured loops),
// so that the loops measure the implementation and nothing else.
//
// How each is used for "one query against a file already parsed":
//   - ours: matcher.Parse once per file, then (*Robots).Allowed(agent, url).
//   - temoto: robotstxt.FromBytes once per file, then
//     (*RobotsData).TestAgent(path, agent), the call colly's users reach
//     for. (Resolving the group once with FindGroup and then calling
//     (*Group).Test is measured separately, for ours and temoto alike.)
//   - grobotstxt: it keeps no parsed form: like Google's C++ library it
//     parses the body during every query, calling back into a matcher that
//     knows the agent and URL. The fastest fair use is one
//     *RobotsMatcher reused for every query, and the body held as a string
//     (its API takes strings), so no conversion is paid per query.
type impl struct {
	name string
	// parseAll parses every input once and drops the results.
	parseAll func(in *inputs)
	// useAll parses every input once and asks it firstUse, dropping the
	// results: the cost of putting a fresh file to use, whatever an
	// implementation defers from parsing to its first query.
	useAll func(in *inputs)
	// keep parses one body, asks it firstUse, and returns what the
	// implementation needs to answer queries later. The body passed in is
	// not used afterwards by the caller.
	keep func(body []byte) any
	// loopQueries parses the inputs once, then answers qs round robin,
	// one query per b.Loop iteration.
	loopQueries func(b *testing.B, in *inputs, qs []query)
	// answers returns the verdict for each of qs.
	answers func(in *inputs, qs []query) []bool
}

// firstUse is the URL path of the first query asked of a freshly parsed
// file, for each agent, by useAll and keep.
const firstUse = "/"

// inputs is a set of robots.txt bodies in the forms the implementations
// take: bytes for ours and temoto, strings for grobotstxt.
type inputs struct {
	bodies [][]byte
	strs   []string
}

func newInputs(bodies ...[]byte) *inputs {
	in := &inputs{bodies: bodies}
	for _, b := range bodies {
		in.strs = append(in.strs, string(b))
	}
	return in
}

func (in *inputs) size() int64 {
	var n int64
	for _, b := range in.bodies {
		n += int64(len(b))
	}
	return n
}

// Sinks keep results alive so that no call is optimized away.
var (
	sinkOurs   *matcher.Robots
	sinkTemoto *robotstxt.RobotsData
	sinkBool   bool
)

var impls = []impl{
	{
		name: "ours",
		parseAll: func(in *inputs) {
			for _, body := range in.bodies {
				sinkOurs = matcher.Parse(body)
			}
		},
		useAll: func(in *inputs) {
			for _, body := range in.bodies {
				r := matcher.Parse(body)
				for _, a := range agents {
					sinkBool = r.Allowed(a, firstUse)
				}
			}
		},
		keep: func(body []byte) any {
			r := matcher.Parse(body)
			for _, a := range agents {
				sinkBool = r.Allowed(a, firstUse)
			}
			return r
		},
		loopQueries: func(b *testing.B, in *inputs, qs []query) {
			rs := parseOurs(in)
			i := 0
			cpu := startCPU()
			for b.Loop() {
				q := &qs[i]
				sinkBool = rs[q.file].Allowed(q.agent, q.url)
				if i++; i == len(qs) {
					i = 0
				}
			}
			cpu.report(b)
		},
		answers: func(in *inputs, qs []query) []bool {
			rs := parseOurs(in)
			out := make([]bool, len(qs))
			for i, q := range qs {
				out[i] = rs[q.file].Allowed(q.agent, q.url)
			}
			return out
		},
	},
	{
		name: "temoto",
		parseAll: func(in *inputs) {
			for _, body := range in.bodies {
				sinkTemoto, _ = robotstxt.FromBytes(body)
			}
		},
		useAll: func(in *inputs) {
			for _, body := range in.bodies {
				r, err := robotstxt.FromBytes(body)
				if err != nil {
					continue
				}
				for _, a := range agents {
					sinkBool = r.TestAgent(firstUse, a)
				}
			}
		},
		keep: func(body []byte) any {
			r, err := robotstxt.FromBytes(body)
			if err != nil {
				return nil
			}
			for _, a := range agents {
				sinkBool = r.TestAgent(firstUse, a)
			}
			return r
		},
		loopQueries: func(b *testing.B, in *inputs, qs []query) {
			rs := parseTemoto(in)
			i := 0
			cpu := startCPU()
			for b.Loop() {
				q := &qs[i]
				sinkBool = rs[q.file].TestAgent(q.path, q.agent)
				if i++; i == len(qs) {
					i = 0
				}
			}
			cpu.report(b)
		},
		answers: func(in *inputs, qs []query) []bool {
			rs := parseTemoto(in)
			out := make([]bool, len(qs))
			for i, q := range qs {
				out[i] = rs[q.file].TestAgent(q.path, q.agent)
			}
			return out
		},
	},
	{
		name: "grobotstxt",
		parseAll: func(in *inputs) {
			var h nopHandler
			for _, s := range in.strs {
				grobotstxt.Parse(s, &h)
			}
		},
		useAll: func(in *inputs) {
			m := grobotstxt.NewRobotsMatcher()
			for _, s := range in.strs {
				for _, a := range agents {
					sinkBool = m.AgentAllowed(s, a, firstUse)
				}
			}
		},
		keep: func(body []byte) any { return string(body) },
		loopQueries: func(b *testing.B, in *inputs, qs []query) {
			m := grobotstxt.NewRobotsMatcher()
			i := 0
			cpu := startCPU()
			for b.Loop() {
				q := &qs[i]
				sinkBool = m.AgentAllowed(in.strs[q.file], q.agent, q.url)
				if i++; i == len(qs) {
					i = 0
				}
			}
			cpu.report(b)
		},
		answers: func(in *inputs, qs []query) []bool {
			m := grobotstxt.NewRobotsMatcher()
			out := make([]bool, len(qs))
			for i, q := range qs {
				out[i] = m.AgentAllowed(in.strs[q.file], q.agent, q.url)
			}
			return out
		},
	},
}

// groupImpls answer queries with the agent's group resolved once per
// (file, agent) before the loop, for the implementations that can.
var groupImpls = []struct {
	name        string
	loopQueries func(b *testing.B, in *inputs, qs []query)
}{
	{
		name: "ours",
		loopQueries: func(b *testing.B, in *inputs, qs []query) {
			rs := parseOurs(in)
			gs := make([]*matcher.Group, len(qs))
			for i, q := range qs {
				gs[i] = rs[q.file].Group(q.agent)
			}
			i := 0
			cpu := startCPU()
			for b.Loop() {
				sinkBool = gs[i].Allowed(qs[i].url)
				if i++; i == len(qs) {
					i = 0
				}
			}
			cpu.report(b)
		},
	},
	{
		name: "temoto",
		loopQueries: func(b *testing.B, in *inputs, qs []query) {
			rs := parseTemoto(in)
			gs := make([]*robotstxt.Group, len(qs))
			for i, q := range qs {
				gs[i] = rs[q.file].FindGroup(q.agent)
			}
			i := 0
			cpu := startCPU()
			for b.Loop() {
				sinkBool = gs[i].Test(qs[i].path)
				if i++; i == len(qs) {
					i = 0
				}
			}
			cpu.report(b)
		},
	},
}

func parseOurs(in *inputs) []*matcher.Robots {
	rs := make([]*matcher.Robots, len(in.bodies))
	for i, body := range in.bodies {
		rs[i] = matcher.Parse(body)
	}
	return rs
}

// parseTemoto parses every body with temoto. A body temoto rejects is
// left nil; queries are only asked of files that temoto parses (see
// temotoParses).
func parseTemoto(in *inputs) []*robotstxt.RobotsData {
	rs := make([]*robotstxt.RobotsData, len(in.bodies))
	for i, body := range in.bodies {
		rs[i], _ = robotstxt.FromBytes(body)
	}
	return rs
}

// temotoParses reports which bodies temoto parses without error. temoto
// rejects a whole file for some lines that other parsers skip (a rule
// before any user-agent line, for one); colly then fails the request.
func temotoParses(in *inputs) []bool {
	ok := make([]bool, len(in.bodies))
	for i, body := range in.bodies {
		_, err := robotstxt.FromBytes(body)
		ok[i] = err == nil
	}
	return ok
}

// nopHandler is a grobotstxt.ParseHandler that does nothing, so that
// parsing with it measures grobotstxt's parser alone.
type nopHandler struct{}

func (*nopHandler) HandleRobotsStart()                      {}
func (*nopHandler) HandleRobotsEnd()                        {}
func (*nopHandler) HandleUserAgent(int, string)             {}
func (*nopHandler) HandleAllow(int, string)                 {}
func (*nopHandler) HandleDisallow(int, string)              {}
func (*nopHandler) HandleSitemap(int, string)               {}
func (*nopHandler) HandleUnknownAction(int, string, string) {}
