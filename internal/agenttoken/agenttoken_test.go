package agenttoken

import "testing"

func TestProduct(t *testing.T) {
	for _, c := range []struct{ ua, want string }{
		{"Mozilla/5.0 (compatible; ExampleBot/1.0; +https://example.com/bot)", "ExampleBot"},
		{"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "Googlebot"},
		{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36", "bingbot"},
		{"Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "Googlebot"},
		{"Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)", "MJ12bot"},
		{"Mozilla/5.0 (compatible; ExampleBot; +https://example.com/bot)", "ExampleBot"},
		{"ExampleBot/1.0", "ExampleBot"},
		{"ExampleBot/1.0 (+https://example.com/bot)", "ExampleBot"},
		{"Mozilla/5.0 ExampleBot/1.0", "ExampleBot"},
		{"curl/8.5.0", "curl"},
		{"Go-http-client/1.1", "Go-http-client"},
		{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36", ""},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1", ""},
		{"Mozilla/5.0 (compatible; MSIE 10.0; Windows NT 6.2; Trident/6.0)", ""},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:121.0) Gecko/20100101 Firefox/121.0", ""},
		{"", ""},
		{"(((", ""},
		{"just words", "just"}, // two products (RFC 9110 §10.1.5); the first names the crawler
		{"ExampleBot", "ExampleBot"},
		{"ExampleBot (+https://example.com/bot)", "ExampleBot"},
	} {
		if got := Product(c.ua); got != c.want {
			t.Errorf("Product(%q) = %q, want %q", c.ua, got, c.want)
		}
	}
}
