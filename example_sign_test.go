package robots_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/f9014239/robots"
	"github.com/f9014239/robots/webbotauth"
)

// A Transport with a Signer signs every request it sends with Web Bot Auth:
// robots.txt and the page here. The crawler's own site publishes its key
// directory with webbotauth.Directory, and its Signature Agent Card from the
// Transport's settings.
func ExampleTransport_signer() {
	// A fixed key, for the example's output: make one with
	// webbotauth.GenerateKey, or robotstxt keygen, and keep it secret.
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, ed25519.SeedSize))
	signer, err := webbotauth.New(webbotauth.Options{
		Key:   key,
		Agent: "https://crawler.example" + webbotauth.WellKnownPath,
		Path:  true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	tr := robots.NewTransport(nil, "ExampleBot")
	tr.Signer = signer
	tr.NoDefaultPace = true // for a quick example; keep the pace in a crawl

	// The crawler's site: the directory, and the card.
	directory, err := webbotauth.NewDirectory([]webbotauth.DirectoryKey{{Key: key}}, webbotauth.DirectoryOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	card, err := tr.Card()
	if err != nil {
		fmt.Println(err)
		return
	}
	card.Name, card.Contact = "ExampleBot", "https://crawler.example/bot"
	mux := http.NewServeMux()
	mux.Handle(webbotauth.WellKnownPath, directory)
	mux.HandleFunc("/.well-known/signature-agent-card", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(card)
	})
	home := httptest.NewServer(mux)
	defer home.Close()

	// A site the crawler visits, which prints what it receives.
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		input, _, _ := strings.Cut(r.Header.Get("Signature-Input"), ";created=")
		fmt.Printf("%s: Signature-Agent: %s\n  Signature-Input: %s;created=...\n", r.URL.Path, r.Header.Get("Signature-Agent"), input)
	}))
	defer site.Close()
	client := &http.Client{Transport: tr}
	resp, err := client.Get(site.URL + "/page")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()

	resp, err = http.Get(home.URL + webbotauth.WellKnownPath)
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Printf("directory (%s):\n%s\n", resp.Header.Get("Content-Type"), body)
	resp, err = http.Get(home.URL + "/.well-known/signature-agent-card")
	if err != nil {
		fmt.Println(err)
		return
	}
	var got map[string]any
	json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	fmt.Println("card:", got["rfc9309-product-token"], got["rfc9309-compliance"], got["rate-expectation"])
	// Output:
	// /robots.txt: Signature-Agent: sig1="https://crawler.example/.well-known/http-message-signatures-directory"
	//   Signature-Input: sig1=("@authority" "@path" "signature-agent";key="sig1");created=...
	// /page: Signature-Agent: sig1="https://crawler.example/.well-known/http-message-signatures-directory"
	//   Signature-Input: sig1=("@authority" "@path" "signature-agent";key="sig1");created=...
	// directory (application/http-message-signatures-directory+json):
	// {"keys":[{"kty":"OKP","crv":"Ed25519","kid":"UDDReOZl1ipXAfp9wYsm13sDBMK5og--QWdBjzuf6o4","x":"iojj3XQJ8ZX9UtstPLpdcspnCb8dlBIb83SIAbQPb1w","use":"sig"}]}
	// card: ExampleBot true one request at a time per site
}
