package matcher_test

import (
	"fmt"

	"github.com/f9014239/robots/matcher"
)

// Content-Usage and Content-Signal lines say how what is crawled may be
// used. The most specific matching line of each kind decides; the two
// combine, most restrictive first; a disallowed URL has no preference.
func ExampleRobots_Usage() {
	r := matcher.Parse([]byte(`Content-Signal: search=yes, ai-input=no
User-Agent: *
Disallow: /never/
Content-Usage: train-ai=n
Content-Usage: /ai-ok/ train-ai=y
`))
	for _, url := range []string{"/test", "/ai-ok/test", "/never/test"} {
		fmt.Printf("%-12s %q\n", url, r.Usage("ExampleBot", url).String())
	}
	u := r.Usage("ExampleBot", "/ai-ok/test")
	for _, l := range u.Labels() {
		fmt.Println(l.Label, l.Value, l.Rules[0].Line, l.Rules[0].Rule)
	}
	// Output:
	// /test        "ai-use=n, search=y, train-ai=n"
	// /ai-ok/test  "ai-use=n, search=y, train-ai=y"
	// /never/test  ""
	// ai-use n 1 Content-Signal: search=yes, ai-input=no
	// search y 1 Content-Signal: search=yes, ai-input=no
	// train-ai y 5 Content-Usage: /ai-ok/ train-ai=y
}
