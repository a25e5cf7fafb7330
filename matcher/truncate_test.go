package matcher

import "testing"

func TestTruncate(t *testing.T) {
	for _, c := range []struct {
		body  string
		limit int
		want  string
	}{
		{"a\nb\n", 10, "a\nb\n"},
		{"a\nb\n", 4, "a\nb\n"},
		{"a\nbc\n", 4, "a\nbc"}, // the next byte ends the line: it is whole
		{"a\nbc\n", 3, "a\n"},
		{"a\nbc\n", 2, "a\n"},
		{"a\nb\r\n", 4, "a\nb\r"},
		{"a\rbc", 3, "a\r"},
		{"abc", 2, ""},
		{"", 0, ""},
		{"abc", -1, ""},
	} {
		if got := string(Truncate([]byte(c.body), c.limit)); got != c.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", c.body, c.limit, got, c.want)
		}
	}
}

// A cut "Allow: /public-area/" must not become "Allow: /p".
func TestTruncateCutRule(t *testing.T) {
	body := []byte("User-agent: *\nDisallow: /\nAllow: /public-area/\n")
	limit := len("User-agent: *\nDisallow: /\nAllow: /p")
	r := Parse(Truncate(body, limit))
	if r.Allowed("Bot", "/private/secret") {
		t.Fatal("a cut rule allowed /private/secret")
	}
	if r.Allowed("Bot", "/public-area/x") {
		t.Fatal("the cut rule should be gone, leaving Disallow: /")
	}
}
