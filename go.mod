module github.com/f9014239/robots

go 1.26.0

require (
	github.com/dunglas/httpsfv v1.1.2
	github.com/jarcoal/httpmock v1.4.2
	go.etcd.io/bbolt v1.5.0
	go.uber.org/goleak v1.3.0
	golang.org/x/net v0.62.0
)

require (
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
)
