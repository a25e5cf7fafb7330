package robots

// onMiss makes t call f on each cache miss, after the site is added and
// before its load is waited for, so that a test can evict the site in
// between. It must be called before t's first use.
func (t *Transport) onMiss(f func(originKey)) { t.missed = f }
