package redisstore

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/f9014239/robots/fleet"

	"github.com/redis/go-redis/v9"

	"github.com/f9014239/robots"
)

var wholeCorpus = flag.Bool("whole-corpus", false, "TestMemoryPerOrigin: measure every file of the corpus, not one in ten")

// TestMemoryPerOrigin puts an entry for robots.txt files of the shared
// corpus (one in ten, or all with -whole-corpus) into Redis and measures what
// Redis holds per origin (MEMORY USAGE of each entry's key, key and overhead
// included), against the same bodies kept as they are.
func TestMemoryPerOrigin(t *testing.T) {
	files, _ := filepath.Glob("../../shared/corpus/*/*")
	if len(files) == 0 {
		t.Skip("../../shared/corpus is absent")
	}
	if !*wholeCorpus {
		var sample []string
		for i := 0; i < len(files); i += 10 {
			sample = append(sample, files[i])
		}
		files = sample
	}
	addr := redisAddr(t)
	s := newStore(t, newClient(t, addr))
	s.Prefix = testPrefix(t, addr)
	ctx := context.Background()
	now := time.Now()
	var rawBody, encoded int64
	var keys, rawKeys []string
	var raw [][]byte
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil || filepath.Base(f) == "MANIFEST.tsv" || filepath.Base(f) == "README.md" {
			continue
		}
		if len(body) > robots.DefaultMaxBodySize {
			body = body[:robots.DefaultMaxBodySize] // as a Transport keeps it
		}
		origin := "https://" + filepath.Base(f)
		e := &fleet.Entry{Access: fleet.AccessSuccess, Body: body, FetchedAt: now, Expires: now.Add(24 * time.Hour)}
		if err := s.Put(ctx, origin, e); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, s.entryKey(origin))
		rawKeys = append(rawKeys, s.Prefix+"raw:{"+origin+"}")
		raw = append(raw, body)
		rawBody += int64(len(body))
		encoded += int64(len(encode(e)))
	}
	origins := int64(len(keys))
	if _, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range rawKeys {
			p.Set(ctx, k, raw[i], time.Minute)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sizes, rawSizes := memoryUsage(t, s.client, keys), memoryUsage(t, s.client, rawKeys)
	usage, rawUsage := sum(sizes), sum(rawSizes)
	slices.Sort(sizes)
	slices.Sort(rawSizes)
	per := func(n int64) int64 { return n / origins }
	t.Logf("%d origins: body %d B, encoded entry %d B; in Redis (MEMORY USAGE, key of %d B included): %d B per origin compressed, %d B as raw bodies (%.2fx); median %d B compressed, %d B raw",
		origins, per(rawBody), per(encoded), len(s.entryKey("https://example.com")), per(usage), per(rawUsage), float64(rawUsage)/float64(usage),
		sizes[len(sizes)/2], rawSizes[len(rawSizes)/2])
	if usage*2 > rawUsage {
		t.Errorf("entries take %d B per origin in Redis, raw bodies %d B: want at most half", per(usage), per(rawUsage))
	}
}

// memoryUsage returns what Redis reports each of keys to use, in bytes.
func memoryUsage(t *testing.T, c redis.UniversalClient, keys []string) []int64 {
	t.Helper()
	var cmds []*redis.IntCmd
	_, err := c.Pipelined(context.Background(), func(p redis.Pipeliner) error {
		for _, k := range keys {
			cmds = append(cmds, p.MemoryUsage(context.Background(), k, 0))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	n := make([]int64, len(cmds))
	for i, c := range cmds {
		n[i] = c.Val()
	}
	return n
}

func sum(ns []int64) (total int64) {
	for _, n := range ns {
		total += n
	}
	return total
}
