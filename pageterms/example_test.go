package pageterms_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/f9014239/robots"
	"github.com/f9014239/robots/pageterms"
)

// A page's Robots-Tag says what the crawler may do with it: read it from the
// response, in one call.
func ExampleRobotsTagOf() {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			return // no rules
		}
		w.Header().Set("Robots-Tag", "*;nosnippet, ExampleBot;nofollow")
		w.Header().Add("X-Robots-Tag", "otherbot: noindex")
		io.WriteString(w, `<a href="/next">next</a>`)
	}))
	defer site.Close()
	t := robots.NewTransport(nil, "ExampleBot")
	t.NoDefaultPace = true
	defer t.CloseIdleConnections()
	client := &http.Client{Transport: t}

	resp, err := client.Get(site.URL + "/article")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	tag := pageterms.RobotsTagOf(resp)
	fmt.Println(tag.Rules)
	fmt.Println("follow links:", !tag.NoFollow, "index:", !tag.NoIndex)
	// Output:
	// [nosnippet nofollow]
	// follow links: false index: true
}

// A 402 is an answer: the Transport returns it as it came, pauses nothing,
// and TermsOf says what the site asks.
func ExampleTermsOf() {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, "License: https://example.com/license.xml\nUser-agent: *\nAllow: /\n")
			return
		}
		if r.Header.Get("Crawler-Max-Price") == "" {
			w.Header().Set("Crawler-Price", "USD 0.01")
			w.WriteHeader(http.StatusPaymentRequired)
			return
		}
		w.Header().Set("Crawler-Charged", "USD 0.01")
		io.WriteString(w, "the article")
	}))
	defer site.Close()
	t := robots.NewTransport(nil, "ExampleBot")
	t.NoDefaultPace = true
	defer t.CloseIdleConnections()

	resp, err := (&http.Client{Transport: t}).Get(site.URL + "/article")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	terms := pageterms.TermsOf(resp)
	fmt.Println(resp.StatusCode, terms.PaymentRequired(), terms.Price)

	// The caller decides to pay up to 5 cents a page.
	paying := robots.NewTransport(nil, "ExampleBot")
	paying.NoDefaultPace, paying.MaxPrice = true, "USD 0.05"
	defer paying.CloseIdleConnections()
	resp, err = (&http.Client{Transport: paying}).Get(site.URL + "/article")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, pageterms.TermsOf(resp).Charged, paying.Stats().Charged)
	// Output:
	// 402 true USD 0.01
	// 200 USD 0.01 1
}
