module github.com/f9014239/robots/bench

go 1.26.0

require (
	github.com/f9014239/robots v0.0.0-20261128225054-a452899d25c8
	github.com/jimsmart/grobotstxt v1.0.3
	github.com/temoto/robotstxt v1.1.2
)

require github.com/dunglas/httpsfv v1.1.2 // indirect

replace github.com/f9014239/robots => ../
