package matcher

// Truncate returns the part of body that a reader limited to limit bytes
// may parse: body itself if it is no longer than limit, and otherwise its
// first limit bytes without the line that the limit cuts, so that a cut
// line, such as "Allow: /p" of "Allow: /public/", is not read as a rule the
// file does not have. A line ends at a line feed or a carriage return. If
// the first limit bytes hold no line end, nothing is left.
//
// Parse keeps no limit of its own; a crawler that reads at most limit bytes
// of a robots.txt (RFC 9309 §2.5) passes what it read through Truncate,
// with the limit, to tell a file that ends there from one that is cut.
func Truncate(body []byte, limit int) []byte {
	if limit < 0 {
		limit = 0
	}
	if len(body) <= limit {
		return body
	}
	if limit < len(body) && (body[limit] == '\n' || body[limit] == '\r') {
		return body[:limit] // the limit falls on a line end
	}
	for i := limit - 1; i >= 0; i-- {
		if body[i] == '\n' || body[i] == '\r' {
			return body[:i+1]
		}
	}
	return body[:0]
}
