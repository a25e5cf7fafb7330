// Package bench compares package matcher of github.com/f9014239/robots with
// two other Go robots.txt implementations, github.com/temoto/robotstxt and
// github.com/jimsmart/grobotstxt, on the same inputs.
//
// It is a separate module so that the robots module never depends on the
// peers. Everything is in the tests and benchmarks; see README.md for how to
// run them and what each measures, and the ratios command for the table of
// ratios from one run.
package bench
