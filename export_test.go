package robots

// onMiss makes t call f on each cache miss, after the site is added and
// before its load is waited for, so that a test can evict the site in
// between. It must be called before t's first use.
func (t *Transport) onMiss(f func(originKey)) { t.missed = f }

// learnThroughAnyBase makes t learn addresses through any Base (a fake
// that calls httptrace's GotConn), not only an *http.Transport. It must
// be called before t's first use.
func (t *Transport) learnThroughAnyBase() { t.learnAny = true }
