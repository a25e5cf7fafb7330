package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/f9014239/robots"
)

// agentToken returns the product token that agent names: a token such as
// "ExampleBot", or a User-Agent header such as "ExampleBot/1.0" or
// "Mozilla/5.0 (compatible; ExampleBot/1.0; +https://example.com/bot)". It
// takes what package robots takes, and derives the token as it does, by
// asking a [robots.Transport] made for agent: its refusal under a robots.txt
// that disallows everything names the token it decided for. Nothing is sent
// over the network. An agent that names no token is an error that says why.
func agentToken(agent string) (token string, err error) {
	if agent == "" {
		return "", errors.New("-agent is empty: give the crawler's product token, as in ExampleBot, or its User-Agent header")
	}
	tr := robots.NewTransport(disallowAll{}, agent)
	err = tr.Check(context.Background(), &url.URL{Scheme: "http", Host: "agent.invalid", Path: "/"})
	if de, ok := errors.AsType[*robots.DisallowedError](err); ok && de.Agent != "" {
		return de.Agent, nil
	}
	if err == nil {
		err = errors.New("no token")
	}
	return "", fmt.Errorf("-agent %q: %s", agent, strings.TrimPrefix(err.Error(), "robots: "))
}

// disallowAll is an [http.RoundTripper] whose every answer is a robots.txt
// that disallows everything for every crawler.
type disallowAll struct{}

func (disallowAll) RoundTrip(req *http.Request) (*http.Response, error) {
	body := "User-agent: *\nDisallow: /\n"
	return &http.Response{
		Status:        "200 OK",
		StatusCode:    http.StatusOK,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {"text/plain"}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}, nil
}

// sentAgent returns the User-Agent header that the command sends for -agent
// as given, whose product token is token: the header itself when one was
// given, or the token with the command's address.
func sentAgent(agent, token string) string {
	if agent == token {
		return userAgent(token)
	}
	return agent
}
