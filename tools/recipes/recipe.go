// Go recipe of spec/arithmetic.md#recipes-by-language, checked by
// tools/recipes/check.sh against tools/recipes/expected.txt.
// uint64 arithmetic wraps modulo 2^64 by definition; uint32 * uint32 wraps at
// 2^32, so widen first; `/` truncates (= floor for the spec's operands);
// proto3 `optional` scalars are pointer fields in Go (nil: absent).
package main

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

type rng struct{ s [4]uint64 }

func newRng(seed uint64) *rng {
	r := &rng{}
	state := seed
	for i := range r.s {
		state += 0x9e3779b97f4a7c15
		r.s[i] = mix64(state)
	}
	return r
}

func (r *rng) next() uint64 {
	s := &r.s
	result := bits.RotateLeft64(s[1]*5, 7) * 9
	t := s[1] << 17
	s[2] ^= s[0]
	s[3] ^= s[1]
	s[1] ^= s[2]
	s[0] ^= s[3]
	s[2] ^= t
	s[3] = bits.RotateLeft64(s[3], 45)
	return result
}

func (r *rng) uniform(n uint64) uint64 {
	if n == 1 {
		return 0
	}
	b := bits.Len64(n - 1)
	for {
		candidate := r.next() >> (64 - b)
		if candidate < n {
			return candidate
		}
	}
}

func ratioBudget(n uint64, ppm int64) uint64 {
	r := float64(ppm) / 1000000.0
	t := 1.0 - r
	u := float64(n) * t
	f := math.Floor(u)
	if f < 1.0 {
		return 1
	}
	return uint64(f)
}

func floorOf(budget, permille uint32) uint64 {
	f := uint64(budget) * uint64(permille) / 1000
	if f == 0 && permille > 0 {
		return 1
	}
	return f
}

func effectiveHeads(field *uint32) uint32 { // generated code: Scenario.QueryHeads *uint32
	if field == nil {
		return 1
	}
	return *field
}

func hexList(xs []uint64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("0x%016x", x)
	}
	return strings.Join(parts, " ")
}

func main() {
	state := uint64(0)
	var sm []uint64
	for i := 0; i < 3; i++ {
		state += 0x9e3779b97f4a7c15
		sm = append(sm, mix64(state))
	}
	fmt.Println("splitmix64 state=0:", hexList(sm))
	for _, seed := range []uint64{0, 42, math.MaxUint64} {
		r := newRng(seed)
		var out []uint64
		for i := 0; i < 5; i++ {
			out = append(out, r.next())
		}
		fmt.Printf("next seed=%d: %s\n", seed, hexList(out))
	}
	r := newRng(42)
	var parts []string
	for i := 0; i < 10; i++ {
		parts = append(parts, strconv.FormatUint(r.uniform(10), 10))
	}
	fmt.Println("uniform(10) seed=42:", strings.Join(parts, " "))
	r = newRng(42)
	parts = nil
	for i := 0; i < 5; i++ {
		parts = append(parts, strconv.FormatUint(r.uniform(1000), 10))
	}
	fmt.Println("uniform(1000) seed=42:", strings.Join(parts, " "))
	r = newRng(7)
	var big []uint64
	for i := 0; i < 3; i++ {
		big = append(big, r.uniform(1<<63+1))
	}
	fmt.Println("uniform(2^63+1) seed=7:", hexList(big))

	parts = nil
	for h := uint64(1); h <= 3; h++ {
		parts = append(parts, fmt.Sprintf("h=%d 0x%016x", h, mix64(1^0x3c6ef372fe94f82b^h)))
	}
	fmt.Println("trace head seeds seed=1: " + strings.Join(parts, "; "))

	m, err := strconv.ParseUint("18446744073709551615", 10, 64)
	if err != nil {
		panic(err)
	}
	fmt.Printf("u64 parse 18446744073709551615: %d 0x%016x\n", m, m)
	fmt.Printf("u64 2^64-1 > 2^63: %t\n", m > 1<<63)
	fmt.Printf("u64 (2^64-1) / 3: %d rem %d\n", m/3, m%3)
	fmt.Printf("u64 (2^64-1) %% 10: %d\n", m%10)
	fmt.Printf("u64 2^64-1 as binary64: %s\n", strconv.FormatFloat(float64(m), 'f', 0, 64))
	fmt.Printf("u64 2^53+1 as binary64: %s\n", strconv.FormatFloat(float64(uint64(1<<53+1)), 'f', 0, 64))

	parts = nil
	for _, c := range [][3]uint32{{32, 8, 31}, {6, 3, 5}, {1024, 1, 1023}, {1024, 1024, 1023}} {
		q, k, h := c[0], c[1], c[2]
		parts = append(parts, fmt.Sprintf("Hq=%d Hkv=%d h=%d -> %d", q, k, h, h/(q/k)))
	}
	fmt.Println("kv head h / (Hq / Hkv): " + strings.Join(parts, "; "))
	parts = nil
	for _, c := range [][2]uint32{{2, 200}, {512, 200}, {100, 290}, {7, 0}, {4294967295, 999}, {4294967295, 1000}} {
		parts = append(parts, fmt.Sprintf("budget=%d permille=%d -> %d", c[0], c[1], floorOf(c[0], c[1])))
	}
	fmt.Println("adakv floor: " + strings.Join(parts, "; "))
	parts = nil
	for _, c := range [][2]uint32{{1300, 512}, {2147483647, 2147483647}, {511, 512}} {
		parts = append(parts, fmt.Sprintf("t=%d L=%d -> %d", c[0], c[1], c[0]/c[1]))
	}
	fmt.Println("trace epoch t / epoch_length: " + strings.Join(parts, "; "))
	parts = nil
	for _, h := range []uint64{1, 4, 5, 9} {
		parts = append(parts, fmt.Sprintf("h=%d -> %d", h, (h-1)%3))
	}
	fmt.Println("trace role (h - 1) mod 3: " + strings.Join(parts, "; "))
	parts = nil
	for _, c := range [][3]uint32{{3, 0, 8}, {1300, 4, 8}, {5, 4, 8}} {
		t, s, rl := c[0], c[1], c[2]
		back := uint32(0)
		if t > rl { // t - rl would wrap below 0
			back = t - rl
		}
		parts = append(parts, fmt.Sprintf("t=%d sinks=%d R=%d -> %d", t, s, rl, max(s, back)))
	}
	fmt.Println("trace recent start max(sinks, t - recent_length), t - recent_length stopping at 0: " + strings.Join(parts, "; "))
	k5, k65535 := uint32(5), uint32(65535)
	fmt.Printf("snapkv (pool_kernel - 1) / 2: 5 -> %d; 65535 -> %d\n", (k5-1)/2, (k65535-1)/2)

	for _, c := range [][2]uint64{{20, 900000}, {10, 800000}, {90, 300000}, {1000, 500000}, {7, 999999}, {4294967295, 1}, {4294967295, 999999}} {
		n, ppm := c[0], c[1]
		exact := max(1, n*(1000000-ppm)/1000000)
		fmt.Printf("ratio budget n=%d ppm=%d: binary64 %d exact %d\n", n, ppm, ratioBudget(n, int64(ppm)), exact)
	}
	hundred, alpha := 100.0, 0.29 // variables: Go folds constant expressions exactly
	fmt.Printf("kvpress int(100 * 0.29): %d exact %d\n", int64(math.Trunc(hundred*alpha)), 100*290/1000)
	zero, four := uint32(0), uint32(4)
	fmt.Printf("presence query_heads: absent -> %d; present 0 -> %d; present 4 -> %d\n",
		effectiveHeads(nil), effectiveHeads(&zero), effectiveHeads(&four))
	// uint32 fields (GetAdmit() uint32) hold every value up to 2^32 - 1.
	admit, half := uint32(4294967295), uint32(2147483648)
	fmt.Printf("u32 field 4294967295: %d; 2^31 > 1 as u32: %t\n", admit, half > 1)
	// The sign bit: math.Signbit, never == or < (-0.0 == 0.0 is true). The
	// constant -0.0 is +0 in Go (constants are exact): build -0 at run time.
	positiveZero, negativeZero := 0.0, math.Copysign(0, -1)
	weight := math.Float32frombits(0x80000000) // a binary32 weight's bits
	bit := func(negative bool) int {
		if negative {
			return 1
		}
		return 0
	}
	fmt.Printf("sign bit: +0.0 -> %d; -0.0 -> %d; binary32 -0.0 -> %d; -0.0 == +0.0: %t\n",
		bit(math.Signbit(positiveZero)), bit(math.Signbit(negativeZero)),
		bit(math.Signbit(float64(weight))), negativeZero == positiveZero)
}
