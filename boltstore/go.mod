module github.com/f9014239/robots/boltstore

go 1.26.0

replace github.com/f9014239/robots => ../

require (
	github.com/f9014239/robots v0.0.0
	go.etcd.io/bbolt v1.5.0
)

require (
	github.com/dunglas/httpsfv v1.1.2 // indirect
	go.uber.org/goleak v1.3.0
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
)
