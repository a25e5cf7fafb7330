package main

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/f9014239/robots"
	"github.com/f9014239/robots/webbotauth"
)

// maxKeyFile bounds a key file read by crawl -sign-key and keygen.
const maxKeyFile = 64 << 10

// signFlags are crawl's flags of Web Bot Auth.
type signFlags struct {
	key, agent, form *string
}

func addSignFlags(fs *flag.FlagSet) signFlags {
	return signFlags{
		key:   fs.String("sign-key", "", "sign every request (robots.txt included) with Web Bot Auth, with the Ed25519 private key in `FILE` (a JWK or a PKCS #8 PEM; see robotstxt keygen)"),
		agent: fs.String("signature-agent", "", "with -sign-key, the https `URL` of the key directory, sent in Signature-Agent"),
		form:  fs.String("signature-agent-form", "url", "the form of Signature-Agent: url (a dictionary member, the full directory URL), origin (a member, its origin) or string (the earlier drafts' bare string)"),
	}
}

// signer returns the Signer the flags ask for, nil if none, or a usage
// error.
func (f signFlags) signer() (*webbotauth.Signer, error) {
	if *f.key == "" {
		if *f.agent != "" {
			return nil, errors.New("-signature-agent needs -sign-key")
		}
		return nil, nil
	}
	if *f.agent == "" {
		return nil, errors.New("-sign-key needs -signature-agent, the URL where its key directory is published")
	}
	key, err := readKey(*f.key)
	if err != nil {
		return nil, err
	}
	var form webbotauth.Form
	switch *f.form {
	case "url":
		form = webbotauth.FormURL
	case "origin":
		form = webbotauth.FormOrigin
	case "string":
		form = webbotauth.FormString
	default:
		return nil, fmt.Errorf("-signature-agent-form %q: want url, origin or string", *f.form)
	}
	s, err := webbotauth.New(webbotauth.Options{Key: key, Agent: *f.agent, Form: form, Method: true, Path: true})
	if err != nil {
		return nil, fmt.Errorf("-sign-key, -signature-agent: %w", err)
	}
	return s, nil
}

// readKey reads the Ed25519 private key of the file at path.
func readKey(path string) (ed25519.PrivateKey, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	key, err := webbotauth.ParseKey(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return key, nil
}

const keygenUsage = `usage: robotstxt keygen [-agent TOKEN] [-format pem|jwk] FILE [KEYFILE...]

Generates an Ed25519 key for Web Bot Auth, writes it to FILE (which must not
exist; readable by its owner alone), and prints on standard output the key
directory to publish, then the crawler's Signature Agent Card, each one JSON
object on a line of its own. Serve the directory at
/.well-known/http-message-signatures-directory of the site that
-signature-agent names, with media type
application/http-message-signatures-directory+json, and crawl with
-sign-key FILE -signature-agent URL. With KEYFILEs (keys in use), the
directory lists them too, before the new key: the rotation, in which both are
published while the new one signs (see doc/identity.md).

`

// runKeygen runs the keygen command.
func runKeygen(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("keygen", flag.ContinueOnError)
	agent := fs.String("agent", defaultAgent, "the crawler's product `token`, or a User-Agent header that names one, for the card")
	format := fs.String("format", "pem", "the key file's format: pem (PKCS #8, as OpenSSL writes) or jwk")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), keygenUsage)
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() < 1 {
		fs.Usage()
		return exitUsage
	}
	token, err := agentToken(*agent)
	if err != nil {
		fmt.Fprintf(stderr, "robotstxt: %v\n", err)
		return exitUsage
	}
	if *format != "pem" && *format != "jwk" {
		fmt.Fprintf(stderr, "robotstxt: -format %q: want pem or jwk\n", *format)
		return exitUsage
	}
	var keys []webbotauth.DirectoryKey
	for _, path := range fs.Args()[1:] {
		k, err := readKey(path)
		if err != nil {
			fmt.Fprintf(stderr, "robotstxt: %v\n", err)
			return exitUsage
		}
		keys = append(keys, webbotauth.DirectoryKey{Key: k})
	}
	key, err := webbotauth.GenerateKey(nil)
	if err != nil {
		fmt.Fprintf(stderr, "robotstxt: %v\n", err)
		return exitUsage
	}
	keys = append(keys, webbotauth.DirectoryKey{Key: key})
	dir, err := webbotauth.NewDirectory(keys, webbotauth.DirectoryOptions{})
	if err != nil {
		fmt.Fprintf(stderr, "robotstxt: %v\n", err)
		return exitUsage
	}
	signer, err := webbotauth.New(webbotauth.Options{Key: key})
	if err != nil {
		fmt.Fprintf(stderr, "robotstxt: %v\n", err)
		return exitUsage
	}
	// The card of crawl's own Transport, as crawl sets it up.
	tr := robots.NewTransport(nil, *agent)
	tr.UserAgent = sentAgent(*agent, token)
	tr.Signer = signer
	card, err := tr.Card()
	if err != nil {
		fmt.Fprintf(stderr, "robotstxt: %v\n", err)
		return exitUsage
	}
	card.Name = token
	card.Keys = dir.JSON()
	cardJSON, err := json.Marshal(card)
	if err != nil {
		fmt.Fprintf(stderr, "robotstxt: %v\n", err)
		return exitUsage
	}

	var data []byte
	if *format == "jwk" {
		data, err = webbotauth.MarshalPrivateJWK(key)
		data = append(data, '\n')
	} else {
		data, err = webbotauth.MarshalPKCS8(key)
	}
	if err == nil {
		err = writeNew(fs.Arg(0), data)
	}
	if err != nil {
		fmt.Fprintf(stderr, "robotstxt: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(stderr, "robotstxt: wrote the key %s to %s\n", signer.KeyID(), fs.Arg(0))
	fmt.Fprintf(stdout, "%s\n%s\n", dir.JSON(), cardJSON)
	return exitOK
}

// writeNew writes data to a new file at path, readable by its owner alone.
func writeNew(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s exists: keygen does not overwrite a key", path)
		}
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

// signHelp is the part of crawl -h about signing.
var signHelp = strings.TrimLeft(`
Signing: with -sign-key and -signature-agent, every request of the crawl
(each page, each redirect, each fetch of robots.txt) carries a Web Bot Auth
signature (draft-ietf-webbotauth-httpsig-protocol-01): Signature-Agent,
Signature-Input and Signature, over @method, @authority, @path and the
Signature-Agent member, created as it leaves (after its site's turn) and
expiring 5 minutes later. A request that cannot be signed is not sent.
robotstxt keygen makes a key and the directory to publish.
`, "\n")
