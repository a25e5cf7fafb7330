//go:build !unix

package boltstore

import "time"

func cpuTime() time.Duration { return 0 }
