package backend

// Within reports whether n bytes at off fit in a buffer of size bytes. It
// is the one range check every backend and the rank's request handling
// use: the obvious off+n > size wraps for an offset near 2^64 and lets a
// request that names such an offset through to a slice index or a device
// address (issue 18: a CPU-atomics target at 2^64-8 panicked a rank).
func Within(off, n, size uint64) bool { return off <= size && n <= size-off }
