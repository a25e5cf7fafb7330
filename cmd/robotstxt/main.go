// Robotstxt checks URLs against robots.txt files, lints them, and runs a
// small polite crawler built on package robots.
//
// Usage:
//
//	robotstxt check [-agent TOKEN] [-json] [-timeout D] FILE|URL|- [URL...]
//	robotstxt lint [-json] [-all] [-timeout D] FILE|URL|-
//	robotstxt crawl [-agent TOKEN] [-json] [-max N] [-timeout D] [-workers N] [-state FILE] [-sign-key FILE -signature-agent URL] [-demo] [URL...]
//	robotstxt keygen [-agent TOKEN] [-format pem|jwk] FILE [KEYFILE...]
//	robotstxt version
//	robotstxt help [COMMAND]
//
// -agent is the crawler's product token, as in ExampleBot, or a User-Agent
// header that names one, as in "ExampleBot/1.0" or "Mozilla/5.0
// (compatible; ExampleBot/1.0; +https://example.com/bot)": the token is
// derived as package robots derives it (see [robots.Transport.Agent]), and
// a header given is sent as it is. Something that names no token, such as
// "/1.0" or "My Crawler", is a usage error.
//
// # check
//
// Check prints a verdict for each URL: allowed or disallowed, the group of
// the robots.txt file that applied, and the rule that decided, with its line
// number. The first argument is the robots.txt source: a local file ("-" for
// standard input; the URLs must then be arguments), or any
// http or https URL of the site, which only names the site (it is not itself
// checked). The site's /robots.txt is then fetched through a robots.Transport,
// which decides as a crawler would: for a 4xx everything is allowed, for a 429,
// a 5xx or a network error everything is disallowed (RFC 9309 §2.3.1). The URLs
// to check follow; without them, they are read from standard input, one a line
// (blank lines and lines starting with # are skipped; a line over 64 KiB is
// reported as an error and skipped). Like crawlers, check reads the first
// 500 KiB of a file, without the line that limit cuts. URLs may be paths
// ("/private/a?b=c") or absolute; in site mode paths are resolved against the
// site URL, and an absolute URL of another site is checked against that site's
// robots.txt. A path without its leading "/" ("private/a", "example.com/a")
// is an error, not a verdict. A source that is none of a file, "-" and an
// http or https URL (a host such as example.com, an ftp URL) is a usage error
// that says what was expected. A file that is not a robots.txt at all (an
// HTML page, UTF-16 text, gzip or other binary data) is named as such in a
// warning on standard error, as lint names it; its verdicts follow, as
// crawlers would read it. With -json, check writes one JSON object per URL, one a line
// (JSON Lines), so output can be piped into jq while URLs are still being read.
// Each object has the fields url, agent (the product token), allowed, rule
// and line (the deciding rule, when one decided), groups (the line and
// product tokens of each group that applied), reason (why no rule decided,
// when the site's robots.txt was missing or unreachable), and for an allowed
// URL with a usage preference, usage, usage_rules and use (the extent that
// Content-Signal's use key allows: immediate, reference or full).
//
// Exit status: 0 when every URL is allowed, 1 when any is disallowed, 2 on bad
// usage or unreadable input (a missing file, an unparsable URL). A site whose
// robots.txt cannot be fetched is not an error: its URLs are disallowed, as
// they would be for a crawler.
//
// # lint
//
// Lint reports what a site owner wants to know about a robots.txt file: lines
// that crawlers ignore and why (unknown fields, rules outside any group, paths
// that do not start with "/", misspelt fields that are accepted leniently,
// content past the first 500 KiB, which crawlers do not read), the groups with
// their product tokens, rule counts and crawl-delays, and the sitemaps. For a
// URL it fetches the site's /robots.txt (up to 4 MiB, following up to 5
// redirects) and also reports the HTTP status and what crawlers make of it.
// With -json, lint writes the report as one JSON object.
//
// Exit status: 0 when there is nothing to report, 1 when there are
// diagnostics or robots.txt answers in a way crawlers cannot use (429, 5xx,
// more than 5 redirects), 2 on bad usage or when the file cannot be read at
// all (a missing file, a network error).
//
// A file that is not a robots.txt at all (an HTML page, UTF-16 text, gzip or
// other binary data) is named as such, once, and its per-line problems are
// not listed (-all lists them). The text report lists the first 20 problems
// of a robots.txt (-all lists all; -json always holds all). Rule counts are of the
// rules crawlers read: those within the first 500 KiB, up to the last whole
// line there, whose number lint gives. An empty "Disallow:", which allows
// everything, is not a problem.
//
// Lint itself reads the first 4 MiB of a file, up to the last whole line
// there. Of a longer file it says so, in the text and in -json (truncated,
// with the bytes and lines it read in linted and linted_lines), and what it
// counts past the first 500 KiB (the rules and sitemaps crawlers ignore, the
// groups, the problems) is of what it read: the file has at least that many.
//
// # crawl
//
// Crawl fetches each URL and the pages it links to on the same origin
// through a [robots.Transport]: each URL is printed with its HTTP status, or
// as refused with the rule that refused it. The Transport fetches and caches
// robots.txt and paces requests: one at a time to a site, the next no
// sooner than its Crawl-delay after the answer, or the default pace (1 s)
// for a site that states none, longer for a site that answers slowly; there
// is no way to turn that off. Up to -workers requests
// (default 4) are sent at a time. A request whose site's turn is more than
// 50 ms away is not sent ([robots.ErrNotYet]): its URL goes back in the
// queue for that turn, and the worker takes a URL of another site, so that
// a site with a long Crawl-delay holds up no other. Redirects are not
// followed as such: a redirect to a crawled site is queued like a link, and
// printed as "redirect to /path". With -demo, crawl
// starts a small site on 127.0.0.1 (a robots.txt with several groups,
// wildcards, a crawl-delay and a sitemap, and a handful of linked pages) and
// crawls it, so that everything can be seen working without a network:
//
//	go run ./cmd/robotstxt crawl -demo
//
// Before the first URL, crawl says what each site's robots.txt makes of the
// crawler, from the Transport's copy (robots.txt is fetched once): which
// group it obeys, by the line of the group's first user-agent line, and the
// crawl-delay the Transport keeps, as in
//
//	obeying the group of user-agent: robotstxt (line 3), not the * group, crawl-delay 1s
//
// or that robots.txt is unavailable (everything is allowed) or unreachable
// (everything is refused until it is fetched again, at the time given). A
// URL refused because robots.txt is unreachable is printed with that time,
// as "retry after 12:34:56". The summary counts the URLs fetched, those
// disallowed by rules, and those refused because robots.txt was unreachable.
//
// A fetched page with a usage preference is printed with it, and with what
// decided each label: a line of robots.txt (Content-Usage or Content-Signal,
// with its number) or the response's own Content-Usage header, as in
//
//	200      /blog/first-post  usage ai-use=n, search=y, use=reference from robots.txt line 12 (Content-Signal); train-ai=n from the response's Content-Usage header
//
// With -json, crawl writes one JSON object per URL on standard output, one a
// line, with the fields url, outcome ("fetched", "disallowed",
// "unreachable" or "error"), status, rule and line, error, retry_at (when a
// site's robots.txt is unreachable: when it is fetched again), redirect,
// requeued (how many times the URL waited in the queue for its site's turn),
// usage, use and usage_sources; crawl -h describes them. The rest of the
// output goes to standard error.
//
// Every response body is read up to a fixed size and every request has a
// time limit (-timeout, which also bounds the fetch of robots.txt). Crawl
// stops after -max URLs (fetched or refused). On a terminal, a progress line
// is kept on standard error. A start URL that redirects to another origin
// is followed, and that origin crawled too, as its own robots.txt allows.
//
// The summary says why the crawl stopped: it finished, it stopped at -max,
// it was interrupted (SIGINT or SIGTERM: the requests out are let end; a
// second signal ends the process at once), every site refused the crawler,
// or every URL left waits for a pause of its site (Retry-After, a back-off)
// further away than twice -timeout, which the crawl does not wait for. With
// -json it is also the last line of standard output, {"summary": {...}}.
//
// A page answered 429 or 503, or whose request failed in a way that may
// pass (a timeout, a connection refused or reset), is sent again when its
// site's pause ends and no sooner than 1, 2 and 4 s after each answer (see
// [github.com/f9014239/robots/frontier.Frontier.Answered]), up to 3 times, and then printed as given
// up. A 404, a 500 or a refusal is not retried.
//
// Crawl keeps its state (the robots.txt cache, the paces, pauses and
// back-offs of the sites) in a file of package boltstore, by default
// robotstxt/state.db in the user's cache directory ([os.UserCacheDir]),
// which the first line names; -state FILE keeps it in another, -state ""
// in none. Beside it a journal, one per crawl (by -agent and the start
// URLs), records each URL queued and visited: a crawl interrupted or killed
// resumes when the same command runs again, each URL visited once across
// the runs but the one a kill cut short. A crawl that ran to its end
// removes its journal, and the same command then crawls again. A state
// file in use by another crawl, damaged or of another format, and a
// journal damaged or of another format, are a message and exit status 2.
//
// Exit status: 0 when the crawl ran to its end, 1 when a start URL could not
// be fetched (refused, or a network error) or the crawl stopped before its
// end (interrupted, or only pauses beyond -timeout left: the same command
// resumes it), 2 on bad usage or a state file that cannot be used.
//
// With -sign-key FILE and -signature-agent URL, crawl signs every request
// it sends (each page, each redirect hop, each fetch of robots.txt) with Web
// Bot Auth (draft-ietf-webbotauth-httpsig-protocol-01; see
// [robots.Transport.Signer]): FILE holds an Ed25519 private key, as a JWK
// or a PKCS #8 PEM block, and URL is where its key directory is published,
// sent in Signature-Agent in the form -signature-agent-form says (url, the
// default; origin; string). The signature covers @method, @authority,
// @path and the Signature-Agent member, is created when the request leaves,
// after its site's turn, and expires 5 minutes later. A request that cannot
// be signed is not sent. A key file that holds no Ed25519 private key, a URL
// that is not https, or one flag without the other is a usage error.
//
// # keygen
//
// Keygen generates an Ed25519 key for crawl -sign-key and writes it to FILE
// (PKCS #8 PEM, or a JWK with -format jwk), which must not exist, readable
// by its owner alone. On standard output it prints two lines: the key
// directory to serve at /.well-known/http-message-signatures-directory
// (media type application/http-message-signatures-directory+json), and the
// crawler's Signature Agent Card (draft-meunier-webbotauth-registry-04),
// whose product token, rfc9309-compliance, rate-control and
// rate-expectation are those of crawl's own Transport (see
// [robots.Transport.Card]). Key files given after FILE (the keys in use)
// are listed in the directory before the new key, for a rotation.
//
// # version
//
// Version prints the version of the module the command was built from, from
// its build information: a release's version, a pseudo-version, or "(devel)";
// the version control revision, whether the checkout was modified and when
// the revision was committed, or else why there is no revision (go run, go
// test and -buildvcs=false record none; go build in a git checkout does);
// and the Go version.
//
// Every command prints its usage to standard output and exits 0 for -h or
// --help; a usage error prints it to standard error and exits 2.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// The first signal stops the command gracefully (crawl lets the
		// requests out end, and keeps its journal); a second ends the
		// process at once.
		<-ctx.Done()
		stop()
	}()
	code := runContext(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit statuses shared by every subcommand.
const (
	exitOK      = 0 // all allowed, nothing to report, crawl done
	exitFlagged = 1 // something disallowed, diagnostics, start URL refused
	exitUsage   = 2 // bad usage or unreadable input
)

const mainUsage = `usage:
  robotstxt check [-agent TOKEN] [-json] [-timeout D] FILE|URL|- [URL...]
  robotstxt lint [-json] [-all] [-timeout D] FILE|URL|-
  robotstxt crawl [-agent TOKEN] [-json] [-max N] [-timeout D] [-workers N] [-state FILE] [-sign-key FILE -signature-agent URL] [-demo] [URL...]
  robotstxt keygen [-agent TOKEN] [-format pem|jwk] FILE [KEYFILE...]
  robotstxt version

Run "robotstxt COMMAND -h" for the flags of a command.
`

// run runs the command line args (without the program name) and returns the
// exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdin, stdout, stderr)
}

func runContext(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, mainUsage)
		return exitUsage
	}
	switch args[0] {
	case "check":
		return runCheck(ctx, args[1:], stdin, stdout, stderr)
	case "lint":
		return runLint(ctx, args[1:], stdin, stdout, stderr)
	case "crawl":
		return runCrawl(ctx, args[1:], stdout, stderr)
	case "keygen":
		return runKeygen(args[1:], stdout, stderr)
	case "version":
		return runVersion(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		if len(args) == 2 && args[0] == "help" && args[1] != "help" {
			return runContext(ctx, []string{args[1], "-h"}, stdin, stdout, stderr)
		}
		fmt.Fprint(stdout, mainUsage)
		return exitOK
	}
	fmt.Fprintf(stderr, "robotstxt: unknown command %q\n%s", args[0], mainUsage)
	return exitUsage
}

// parseFlags parses the flags of a subcommand, the same way for every one.
// An explicit -h or --help prints the usage to stdout: ok is false and code
// is exitOK. A bad flag prints the error and the usage to stderr: ok is false
// and code is exitUsage. Afterwards fs writes to stderr, so that fs.Usage
// reports a usage error.
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	var msg bytes.Buffer
	fs.SetOutput(&msg)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		fs.SetOutput(stderr)
		return exitOK, false
	case err != nil:
		stderr.Write(msg.Bytes())
		return exitUsage, false
	}
	return exitOK, true
}
