package lb

import (
	"hash/fnv"
	"math"
	"sort"
)

// Maglev fills a lookup table of size m (a prime) with backend indexes, in
// proportion to weights (exactly: each backend gets floor(m*w/W) or one more
// entry), following Maglev's permutation-based population (Eisenbud et al.,
// NSDI 2016) so that removing or adding a backend changes few entries besides
// its own. Backends are identified by name: the same name always gets the
// same permutation. With no backends every entry is -1.
func Maglev(names []string, weights []uint32, m uint32) []int {
	table := make([]int, m)
	for i := range table {
		table[i] = -1
	}
	n := len(names)
	if n == 0 || m == 0 {
		return table
	}
	quota := quotas(weights, m)
	offset := make([]uint64, n)
	skip := make([]uint64, n)
	for i, name := range names {
		offset[i] = hash64(name, 0x5bd1e995) % uint64(m)
		skip[i] = hash64(name, 0x27d4eb2f)%uint64(m-1) + 1
	}
	next := make([]uint64, n)
	count := make([]uint32, n)
	filled := uint32(0)
	for filled < m {
		for i := 0; i < n && filled < m; i++ {
			if count[i] >= quota[i] {
				continue
			}
			c := (offset[i] + next[i]*skip[i]) % uint64(m)
			for table[c] >= 0 {
				next[i]++
				c = (offset[i] + next[i]*skip[i]) % uint64(m)
			}
			table[c] = i
			next[i]++
			count[i]++
			filled++
		}
	}
	return table
}

// quotas splits m entries by weight (largest remainder method; ties go to
// the lower index).
func quotas(weights []uint32, m uint32) []uint32 {
	var total uint64
	for _, w := range weights {
		total += uint64(w)
	}
	q := make([]uint32, len(weights))
	if total == 0 {
		return q
	}
	type rem struct {
		i int
		r float64
	}
	rems := make([]rem, len(weights))
	var used uint32
	for i, w := range weights {
		exact := float64(m) * float64(w) / float64(total)
		q[i] = uint32(math.Floor(exact))
		used += q[i]
		rems[i] = rem{i, exact - math.Floor(exact)}
	}
	sort.SliceStable(rems, func(a, b int) bool { return rems[a].r > rems[b].r })
	for k := 0; used < m; k++ {
		q[rems[k%len(rems)].i]++
		used++
	}
	return q
}

func hash64(s string, seed uint32) uint64 {
	h := fnv.New64a()
	var b [4]byte
	b[0], b[1], b[2], b[3] = byte(seed), byte(seed>>8), byte(seed>>16), byte(seed>>24)
	h.Write(b[:])
	h.Write([]byte(s))
	x := h.Sum64()
	// fnv's low bits mix poorly for short inputs: finish with a mixer.
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// IsPrime reports whether n is prime (n < 2^32).
func IsPrime(n uint32) bool {
	if n < 2 {
		return false
	}
	if n%2 == 0 {
		return n == 2
	}
	for d := uint32(3); uint64(d)*uint64(d) <= uint64(n); d += 2 {
		if n%d == 0 {
			return false
		}
	}
	return true
}
