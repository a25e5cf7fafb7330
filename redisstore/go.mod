module github.com/f9014239/robots/redisstore

go 1.26.0

require (
	github.com/f9014239/robots v0.0.0-20261128225054-a452899d25c8
	github.com/klauspost/compress v1.20.4
	github.com/redis/go-redis/v9 v9.24.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dunglas/httpsfv v1.1.2 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.43.0 // indirect
)

replace github.com/f9014239/robots => ../
