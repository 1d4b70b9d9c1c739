// Go recipe of spec/arithmetic.md#recipes-by-language, checked by
// tools/recipes/check.sh against tools/recipes/expected.txt.
// uint64 arithmetic wraps modulo 2^64 by definition; uint32 * uint32 wraps at
// 2^32, so widen first; `/` truncates (= floor for the spec's operands);
// proto3 `optional` scalars are pointer fields in Go (nil: absent).
// exp and log (spec/elementary.md) are fdlibm 5.3's algorithms written out
// from the spec's steps; math.Exp and math.Log are not them, never used.
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

// spec/elementary.md#constants, from their bits.
var (
	ln2Hi      = math.Float64frombits(0x3fe62e42fee00000)
	ln2Lo      = math.Float64frombits(0x3dea39ef35793c76)
	invLn2     = math.Float64frombits(0x3ff71547652b82fe)
	oThreshold = math.Float64frombits(0x40862e42fefa39ef)
	uThreshold = math.Float64frombits(0xc0874910d52d3051)
	p1         = math.Float64frombits(0x3fc555555555553e)
	p2         = math.Float64frombits(0xbf66c16c16bebd93)
	p3         = math.Float64frombits(0x3f11566aaf25de2c)
	p4         = math.Float64frombits(0xbebbbd41c5d26bf1)
	p5         = math.Float64frombits(0x3e66376972bea4d0)
	lg1        = math.Float64frombits(0x3fe5555555555593)
	lg2        = math.Float64frombits(0x3fd999999997fa04)
	lg3        = math.Float64frombits(0x3fd2492494229359)
	lg4        = math.Float64frombits(0x3fcc71c51d8e78af)
	lg5        = math.Float64frombits(0x3fc7466496cb03de)
	lg6        = math.Float64frombits(0x3fc39a09d078c69f)
	lg7        = math.Float64frombits(0x3fc2f112df3e5244)
	third      = math.Float64frombits(0x3fd5555555555555)
	two54      = math.Float64frombits(0x4350000000000000)
	twoM1000   = math.Float64frombits(0x0170000000000000)
)

// No fused multiply-add (spec/arithmetic.md#recipes-by-language): Go may fuse
// x*y + z, even across statements, unless an explicit conversion stands
// between the product and the sum it feeds, so in exp, log and the spot
// checks' inputs every product is written float64(x*y).

// addToExponent is spec/elementary.md#scaling: the bits of y plus j * 2^52,
// modulo 2^64 (uint64 of a negative int64 is its value modulo 2^64).
func addToExponent(y float64, j int) float64 {
	return math.Float64frombits(math.Float64bits(y) + uint64(int64(j))<<52)
}

// exp is spec/elementary.md#exp.
func exp(x float64) float64 {
	negative := math.Float64bits(x)>>63 != 0
	h := uint32(math.Float64bits(x)>>32) & 0x7fffffff // of |x|
	// Step 1: special values.
	switch {
	case math.IsNaN(x):
		return x
	case math.IsInf(x, 0):
		if negative {
			return 0
		}
		return x
	case x > oThreshold:
		return math.Inf(1)
	case x < uThreshold:
		return 0
	}
	// Step 2: reduction, x = k ln2 + r with r = hi - lo.
	k := 0
	hi, lo, r := 0.0, 0.0, x
	if h > 0x3fd62e42 {
		if h < 0x3ff0a2b2 {
			if negative {
				k, hi, lo = -1, x+ln2Hi, -ln2Lo
			} else {
				k, hi, lo = 1, x-ln2Hi, ln2Lo
			}
		} else {
			// int() truncates toward zero (|x| < 746 here).
			if negative {
				k = int(float64(invLn2*x) - 0.5)
			} else {
				k = int(float64(invLn2*x) + 0.5)
			}
			t := float64(k)
			hi = x - float64(t*ln2Hi)
			lo = float64(t * ln2Lo)
		}
		r = hi - lo
	} else if h < 0x3e300000 {
		return 1 + x // |x| < 2^-28
	}
	// Step 3: approximation.
	t := float64(r * r)
	c := r - float64(t*(p1+float64(t*(p2+float64(t*(p3+float64(t*(p4+float64(t*p5)))))))))
	if k == 0 {
		return 1 - (float64(r*c)/(c-2) - r)
	}
	y := 1 - ((lo - float64(r*c)/(2-c)) - hi)
	// Step 4: scaling by 2^k; below 2^-1021 one rounding, by the multiplication.
	if k >= -1021 {
		return addToExponent(y, k)
	}
	return float64(addToExponent(y, k+1000) * twoM1000)
}

// highWord is the high word, signed: negative exactly when the sign bit is set.
func highWord(x float64) int32 {
	return int32(uint32(math.Float64bits(x) >> 32))
}

// log is spec/elementary.md#log.
func log(x float64) float64 {
	h := highWord(x)
	l := uint32(math.Float64bits(x))
	k := int32(0)
	// Step 1: zero, negatives, subnormals, then +inf and NaN.
	if h < 0x00100000 {
		if (uint32(h)&0x7fffffff)|l == 0 {
			return math.Inf(-1)
		}
		if h < 0 {
			return math.NaN()
		}
		k = -54
		x = float64(x * two54) // exact
		h = highWord(x)
	}
	if h >= 0x7ff00000 {
		return x + x
	}
	// Step 2: reduction, x = 2^k (1 + f). h >= 0 here, so >> is a plain shift.
	k += h>>20 - 1023
	m := h & 0x000fffff
	i := (m + 0x95f64) & 0x100000
	high := uint64(uint32(m | (i ^ 0x3ff00000)))
	x = math.Float64frombits(high<<32 | math.Float64bits(x)&0xffffffff)
	k += i >> 20
	f := x - 1
	dk := float64(k)
	// Step 3: near 1, |f| < 2^-20.
	if (2+m)&0x000fffff < 3 {
		if f == 0 {
			if k == 0 {
				return 0
			}
			return float64(dk*ln2Hi) + float64(dk*ln2Lo)
		}
		r := float64(float64(f*f) * (0.5 - float64(third*f)))
		if k == 0 {
			return f - r
		}
		return float64(dk*ln2Hi) - ((r - float64(dk*ln2Lo)) - f)
	}
	// Step 4: approximation.
	s := f / (2 + f)
	z := float64(s * s)
	w := float64(z * z)
	t1 := float64(w * (lg2 + float64(w*(lg4+float64(w*lg6)))))
	t2 := float64(z * (lg1 + float64(w*(lg3+float64(w*(lg5+float64(w*lg7)))))))
	r := t2 + t1
	if m >= 0x6147a && m <= 0x6b851 {
		hfsq := float64(float64(0.5*f) * f)
		if k == 0 {
			return f - (hfsq - float64(s*(hfsq+r)))
		}
		return float64(dk*ln2Hi) - ((hfsq - (float64(s*(hfsq+r)) + float64(dk*ln2Lo))) - f)
	}
	if k == 0 {
		return f - float64(s*(f-r))
	}
	return float64(dk*ln2Hi) - ((float64(s*(f-r)) - float64(dk*ln2Lo)) - f)
}

// centered is (u >> 11) - 2^52, in [-2^52, 2^52): exact as a binary64.
func centered(u uint64) float64 {
	return float64(int64(u>>11) - 1<<52)
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

	// spec/elementary.md#golden-values: the inputs' bits; the results computed.
	expInputs := []uint64{
		0x3ff0000000000000, 0xbff0000000000000, 0x3fe0000000000000, 0x3ddb7cdfd9d7bdbb,
		0x39b4484bfeebc2a0, 0x4024000000000000, 0xc034800000000000, 0x40862e3d70a3d70a,
		0x4086300000000000, 0xc086240000000000, 0xc087480000000000, 0xc087500000000000,
	}
	logInputs := []uint64{
		0x4000000000000000, 0x4024000000000000, 0x3fe0000000000000, 0x3ff000001ad7f29b,
		0x3ff6666666666666, 0x3fe6666666666666, 0x0000000000000001, 0x7fefffffffffffff,
		0x0000000000000000, 0x7ff0000000000000,
	}
	for _, b := range expInputs {
		fmt.Printf("exp 0x%016x -> 0x%016x\n", b, math.Float64bits(exp(math.Float64frombits(b))))
	}
	for _, b := range logInputs {
		fmt.Printf("log 0x%016x -> 0x%016x\n", b, math.Float64bits(log(math.Float64frombits(b))))
	}
	// Spot checks: one generator across the families, in order.
	families := []struct {
		name     string
		function func(float64) float64
		input    func(u uint64) float64
	}{
		{"exp wide", exp, func(u uint64) float64 { return float64(centered(u) * 0x1p-42) }},
		{"exp near 0", exp, func(u uint64) float64 { return float64(centered(u) * 0x1p-51) }},
		{"exp tiny", exp, func(u uint64) float64 { return float64(centered(u) * 0x1p-80) }},
		{"log wide", log, func(u uint64) float64 { return math.Float64frombits(u % 0x7ff0000000000000) }},
		{"log near 1", log, func(u uint64) float64 { return 1 + float64(centered(u)*0x1p-75) }},
		{"log small", log, func(u uint64) float64 { return float64(float64(u>>11) * 0x1p-50) }},
	}
	spot := newRng(2026)
	for _, family := range families {
		d := uint64(0xcbf29ce484222325)
		for i := 0; i < 1000; i++ {
			d = (d ^ math.Float64bits(family.function(family.input(spot.next())))) * 0x100000001b3
		}
		fmt.Printf("spot %s: 0x%016x\n", family.name, d)
	}
}
