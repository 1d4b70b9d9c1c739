// @ts-check
// JavaScript / TypeScript recipe of spec/arithmetic.md#recipes-by-language,
// checked by tools/recipes/check.sh against tools/recipes/expected.txt (run
// by node; type-checked by tsc --checkJs when tsc is available).
// - 64-bit: BigInt, masked with BigInt.asUintN(64, x) after every *, + and <<
//   (>> of a value already in range needs no mask). A Number holds integers
//   exactly only up to 2^53. Math.imul gives the low 32 bits of a product;
//   mix64Halves below does the trace's hash in 32-bit halves, which is
//   several times faster than BigInt, and is checked against the BigInt one.
// - Integer division: Math.floor(a / b), exact for the spec's operands (all
//   below 2^53); never `x | 0` or `x >>> 0` on values that may reach 2^31.
// - Presence: undefined (absent) vs 0, tested with `=== undefined` or `??`,
//   never `||` (which turns a present 0 into the default).
// - exp and log (spec/elementary.md): fdlibm 5.3's algorithms written out from
//   the spec's steps (Numbers are binary64, never fused); Math.exp and
//   Math.log are not pinned by ECMAScript, never used. The 64 bits move
//   through a DataView: getInt32(0) is the signed high word.

const M64 = (1n << 64n) - 1n;
const u64 = (/** @type {bigint} */ x) => BigInt.asUintN(64, x);
const hex64 = (/** @type {bigint} */ x) => "0x" + x.toString(16).padStart(16, "0");

/** @param {bigint} z */
function mix64(z) {
  z = u64((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n);
  z = u64((z ^ (z >> 27n)) * 0x94d049bb133111ebn);
  return z ^ (z >> 31n);
}

// The same hash on [hi, lo] pairs of uint32 Numbers, without BigInt.
/** @param {number} ah @param {number} al @param {number} bh @param {number} bl
 *  @returns {[number, number]} the low 64 bits of a * b */
function mul64(ah, al, bh, bl) {
  const a1 = al >>> 16, a0 = al & 0xffff, b1 = bl >>> 16, b0 = bl & 0xffff;
  const mid = a1 * b0 + a0 * b1 + ((a0 * b0) >>> 16); // < 2^34: exact
  const carry = a1 * b1 + Math.floor(mid / 65536); // high 32 bits of al * bl
  const hi = (carry + Math.imul(ah, bl) + Math.imul(al, bh)) >>> 0;
  return [hi, Math.imul(al, bl) >>> 0];
}
/** @param {number} h @param {number} l @param {number} k 0 < k < 32
 *  @returns {[number, number]} */
function xorShr(h, l, k) {
  return [(h ^ (h >>> k)) >>> 0, (l ^ ((l >>> k) | (h << (32 - k)))) >>> 0];
}
/** @param {number} h @param {number} l @returns {[number, number]} */
function mix64Halves(h, l) {
  [h, l] = xorShr(h, l, 30);
  [h, l] = mul64(h, l, 0xbf58476d, 0x1ce4e5b9);
  [h, l] = xorShr(h, l, 27);
  [h, l] = mul64(h, l, 0x94d049bb, 0x133111eb);
  return xorShr(h, l, 31);
}

/** @param {bigint} x @param {bigint} k */
const rotl = (x, k) => u64(x << k) | (x >> (64n - k));

class Rng {
  /** @param {bigint} seed */
  constructor(seed) {
    let state = seed;
    /** @type {bigint[]} */
    this.s = [];
    for (let i = 0; i < 4; i++) {
      state = u64(state + 0x9e3779b97f4a7c15n);
      this.s.push(mix64(state));
    }
  }
  next() {
    const s = this.s;
    const result = u64(rotl(u64(s[1] * 5n), 7n) * 9n);
    const t = u64(s[1] << 17n);
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45n);
    return result;
  }
  /** @param {bigint} n */
  uniform(n) {
    if (n === 1n) return 0n;
    const bits = BigInt((n - 1n).toString(2).length);
    for (;;) {
      const candidate = this.next() >> (64n - bits);
      if (candidate < n) return candidate;
    }
  }
}

/** @param {number} n @param {number} ppm */
function ratioBudget(n, ppm) {
  const r = ppm / 1000000;
  const t = 1 - r;
  const u = n * t;
  return Math.max(1, Math.floor(u));
}

/** @param {number} budget @param {number} permille */
function floorOf(budget, permille) {
  const f = Math.floor((budget * permille) / 1000); // product < 2^43: exact
  return f === 0 && permille > 0 ? 1 : f;
}

/** @param {number | undefined} field */
const effectiveHeads = (field) => field ?? 1;

// spec/elementary.md#bits-and-words: exact moves of the 64 bits, big-endian
// (offset 0 is the high word).
const scratch = new DataView(new ArrayBuffer(8));
/** @param {number} x @returns {bigint} */
const bitsOf = (x) => {
  scratch.setFloat64(0, x);
  return scratch.getBigUint64(0);
};
/** @param {bigint} b @returns {number} */
const fromBits = (b) => {
  scratch.setBigUint64(0, b);
  return scratch.getFloat64(0);
};
/** The high word, signed: negative exactly when the sign bit is set.
 *  @param {number} x @returns {number} */
const highWord = (x) => {
  scratch.setFloat64(0, x);
  return scratch.getInt32(0);
};
/** @param {number} x @returns {number} the low word, unsigned */
const lowWord = (x) => {
  scratch.setFloat64(0, x);
  return scratch.getUint32(4);
};
/** words(h, l) @param {number} h @param {number} l @returns {number} */
const fromWords = (h, l) => {
  scratch.setInt32(0, h);
  scratch.setUint32(4, l);
  return scratch.getFloat64(0);
};

// spec/elementary.md#constants, from their bits.
const LN2_HI = fromBits(0x3fe62e42fee00000n);
const LN2_LO = fromBits(0x3dea39ef35793c76n);
const INV_LN2 = fromBits(0x3ff71547652b82fen);
const O_THRESHOLD = fromBits(0x40862e42fefa39efn);
const U_THRESHOLD = fromBits(0xc0874910d52d3051n);
const P1 = fromBits(0x3fc555555555553en);
const P2 = fromBits(0xbf66c16c16bebd93n);
const P3 = fromBits(0x3f11566aaf25de2cn);
const P4 = fromBits(0xbebbbd41c5d26bf1n);
const P5 = fromBits(0x3e66376972bea4d0n);
const LG1 = fromBits(0x3fe5555555555593n);
const LG2 = fromBits(0x3fd999999997fa04n);
const LG3 = fromBits(0x3fd2492494229359n);
const LG4 = fromBits(0x3fcc71c51d8e78afn);
const LG5 = fromBits(0x3fc7466496cb03den);
const LG6 = fromBits(0x3fc39a09d078c69fn);
const LG7 = fromBits(0x3fc2f112df3e5244n);
const THIRD = fromBits(0x3fd5555555555555n);
const TWO54 = fromBits(0x4350000000000000n);
const TWOM1000 = fromBits(0x0170000000000000n);

/** spec/elementary.md#scaling: the bits of y plus j * 2^52, modulo 2^64.
 *  @param {number} y @param {number} j */
const addToExponent = (y, j) => fromBits(u64(bitsOf(y) + (BigInt(j) << 52n)));

/** spec/elementary.md#exp. @param {number} x @returns {number} */
function exp(x) {
  const negative = highWord(x) < 0;
  const h = highWord(x) & 0x7fffffff; // of |x|
  // Step 1: special values.
  if (Number.isNaN(x)) return x;
  if (x === Infinity || x === -Infinity) return negative ? 0 : x;
  if (x > O_THRESHOLD) return Infinity;
  if (x < U_THRESHOLD) return 0;
  // Step 2: reduction, x = k ln2 + r with r = hi - lo.
  let k = 0, hi = 0, lo = 0, r = x;
  if (h > 0x3fd62e42) {
    if (h < 0x3ff0a2b2) {
      k = negative ? -1 : 1;
      hi = negative ? x + LN2_HI : x - LN2_HI;
      lo = negative ? -LN2_LO : LN2_LO;
    } else {
      k = Math.trunc(negative ? INV_LN2 * x - 0.5 : INV_LN2 * x + 0.5); // toward zero
      hi = x - k * LN2_HI; // k, an integer Number, is its own binary64 value t
      lo = k * LN2_LO;
    }
    r = hi - lo;
  } else if (h < 0x3e300000) {
    return 1 + x; // |x| < 2^-28
  }
  // Step 3: approximation.
  const t = r * r;
  const c = r - t * (P1 + t * (P2 + t * (P3 + t * (P4 + t * P5))));
  if (k === 0) return 1 - ((r * c) / (c - 2) - r);
  const y = 1 - ((lo - (r * c) / (2 - c)) - hi);
  // Step 4: scaling by 2^k; below 2^-1021 one rounding, by the multiplication.
  return k >= -1021 ? addToExponent(y, k) : addToExponent(y, k + 1000) * TWOM1000;
}

/** spec/elementary.md#log. @param {number} x @returns {number} */
function log(x) {
  let h = highWord(x);
  const l = lowWord(x);
  let k = 0;
  // Step 1: zero, negatives, subnormals, then +inf and NaN.
  if (h < 0x00100000) {
    if (((h & 0x7fffffff) | l) === 0) return -Infinity; // | is int32: 0 iff both 0
    if (h < 0) return NaN;
    k = -54;
    x = x * TWO54; // exact
    h = highWord(x);
  }
  if (h >= 0x7ff00000) return x + x;
  // Step 2: reduction, x = 2^k (1 + f). `>>` is the int32 (sign-copying)
  // shift, and h >= 0 here, so `h >> 20` is a plain shift.
  k += (h >> 20) - 1023;
  const m = h & 0x000fffff;
  const i = (m + 0x95f64) & 0x100000;
  x = fromWords(m | (i ^ 0x3ff00000), lowWord(x));
  k += i >> 20;
  const f = x - 1;
  const dk = k; // a Number: already its binary64 value
  // Step 3: near 1, |f| < 2^-20.
  if (((2 + m) & 0x000fffff) < 3) {
    if (f === 0) return k === 0 ? 0 : dk * LN2_HI + dk * LN2_LO;
    const r = f * f * (0.5 - THIRD * f);
    return k === 0 ? f - r : dk * LN2_HI - ((r - dk * LN2_LO) - f);
  }
  // Step 4: approximation.
  const s = f / (2 + f);
  const z = s * s;
  const w = z * z;
  const t1 = w * (LG2 + w * (LG4 + w * LG6));
  const t2 = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7)));
  const r = t2 + t1;
  if (m >= 0x6147a && m <= 0x6b851) {
    const hfsq = 0.5 * f * f;
    if (k === 0) return f - (hfsq - s * (hfsq + r));
    return dk * LN2_HI - ((hfsq - (s * (hfsq + r) + dk * LN2_LO)) - f);
  }
  if (k === 0) return f - s * (f - r);
  return dk * LN2_HI - ((s * (f - r) - dk * LN2_LO) - f);
}

/** (u >> 11) - 2^52, in [-2^52, 2^52): exact as a Number. @param {bigint} u */
const centered = (u) => Number((u >> 11n) - 2n ** 52n);
/** 2^e for a normal power of two, from its bits. @param {number} e */
const twoTo = (e) => fromBits(BigInt(1023 + e) << 52n);

/** @type {string[]} */
const problems = [];
const check = (/** @type {boolean} */ ok, /** @type {string} */ what) => {
  if (!ok) problems.push(what);
};

let state = 0n;
/** @type {string[]} */
const sm = [];
for (let i = 0; i < 3; i++) {
  state = u64(state + 0x9e3779b97f4a7c15n);
  const [h, l] = mix64Halves(Number(state >> 32n), Number(state & 0xffffffffn));
  const halves = (BigInt(h) << 32n) | BigInt(l);
  check(halves === mix64(state), `mix64 in halves differs at ${hex64(state)}`);
  sm.push(hex64(halves));
}
for (const x of [0n, 1n, M64, 0x123456789abcdef0n, 0x8000000000000000n]) {
  const [h, l] = mix64Halves(Number(x >> 32n), Number(x & 0xffffffffn));
  check(((BigInt(h) << 32n) | BigInt(l)) === mix64(x), `mix64 in halves differs at ${hex64(x)}`);
}
console.log("splitmix64 state=0: " + sm.join(" "));
for (const seed of [0n, 42n, M64]) {
  const rng = new Rng(seed);
  const out = [];
  for (let i = 0; i < 5; i++) out.push(hex64(rng.next()));
  console.log(`next seed=${seed}: ${out.join(" ")}`);
}
let rng = new Rng(42n);
console.log("uniform(10) seed=42: " + Array.from({ length: 10 }, () => rng.uniform(10n)).join(" "));
rng = new Rng(42n);
console.log("uniform(1000) seed=42: " + Array.from({ length: 5 }, () => rng.uniform(1000n)).join(" "));
rng = new Rng(7n);
console.log("uniform(2^63+1) seed=7: " +
  Array.from({ length: 3 }, () => hex64(rng.uniform((1n << 63n) + 1n))).join(" "));

// The trace's head seeds, in 32-bit halves (seed 1: high half 0, low half 1).
console.log("trace head seeds seed=1: " + [1, 2, 3].map((h) => {
  const [hi, lo] = mix64Halves((0 ^ 0x3c6ef372) >>> 0, (1 ^ 0xfe94f82b ^ h) >>> 0);
  const v = (BigInt(hi) << 32n) | BigInt(lo);
  check(v === mix64(1n ^ 0x3c6ef372fe94f82bn ^ BigInt(h)), `head seed ${h}`);
  return `h=${h} ${hex64(v)}`;
}).join("; "));

const m = BigInt("18446744073709551615");
console.log(`u64 parse 18446744073709551615: ${m} ${hex64(m)}`);
console.log(`u64 2^64-1 > 2^63: ${m > 1n << 63n}`);
console.log(`u64 (2^64-1) / 3: ${m / 3n} rem ${m % 3n}`); // BigInt `/` truncates
console.log(`u64 (2^64-1) % 10: ${m % 10n}`);
// Why a Number cannot carry a seed: 2^64 - 1 becomes 2^64.
check(2 ** 64 - 1 === 2 ** 64 && BigInt(Number(m)) !== m, "Number kept 2^64-1");
check(Number(m) === Number.parseInt("18446744073709551615", 10), "parseInt");
console.log(`u64 2^64-1 as binary64: ${BigInt(Number(m))}`);
console.log(`u64 2^53+1 as binary64: ${BigInt(Number((1n << 53n) + 1n))}`);
check(!Number.isSafeInteger(2 ** 53 + 1), "2^53+1 safe");

console.log("kv head h / (Hq / Hkv): " + [[32, 8, 31], [6, 3, 5], [1024, 1, 1023], [1024, 1024, 1023]]
  .map(([q, k, h]) => `Hq=${q} Hkv=${k} h=${h} -> ${Math.floor(h / Math.floor(q / k))}`).join("; "));
console.log("adakv floor: " + [[2, 200], [512, 200], [100, 290], [7, 0], [4294967295, 999], [4294967295, 1000]]
  .map(([b, p]) => `budget=${b} permille=${p} -> ${floorOf(b, p)}`).join("; "));
check((4294967295 | 0) === -1, "| 0 on 2^32 - 1"); // the trap: | 0 is int32
console.log("trace epoch t / epoch_length: " + [[1300, 512], [2147483647, 2147483647], [511, 512]]
  .map(([t, l]) => `t=${t} L=${l} -> ${Math.floor(t / l)}`).join("; "));
console.log("trace role (h - 1) mod 3: " + [1, 4, 5, 9].map((h) => `h=${h} -> ${(h - 1) % 3}`).join("; "));
console.log("trace recent start max(sinks, t - recent_length), t - recent_length stopping at 0: " +
  [[3, 0, 8], [1300, 4, 8], [5, 4, 8]]
    .map(([t, s, r]) => `t=${t} sinks=${s} R=${r} -> ${Math.max(s, Math.max(0, t - r))}`).join("; "));
console.log(`snapkv (pool_kernel - 1) / 2: 5 -> ${Math.floor((5 - 1) / 2)}; 65535 -> ${Math.floor((65535 - 1) / 2)}`);

for (const [n, ppm] of [[20, 900000], [10, 800000], [90, 300000], [1000, 500000], [7, 999999],
  [4294967295, 1], [4294967295, 999999]]) {
  const exact = BigInt(n) * BigInt(1000000 - ppm) / 1000000n; // exact integers
  console.log(`ratio budget n=${n} ppm=${ppm}: binary64 ${ratioBudget(n, ppm)} exact ${exact < 1n ? 1n : exact}`);
}
console.log(`kvpress int(100 * 0.29): ${Math.trunc(100 * 0.29)} exact ${Math.floor((100 * 290) / 1000)}`);
check((0 || 1) === 1, "|| keeps 0"); // why `??`: `0 || 1` is 1, a present 0 lost
console.log(`presence query_heads: absent -> ${effectiveHeads(undefined)}; present 0 -> ${effectiveHeads(0)}; present 4 -> ${effectiveHeads(4)}`);

// uint32 fields: protobufjs gives an unsigned Number (`>>> 0`), up to 2^32 - 1.
const admit = 0xffffffff >>> 0;
console.log(`u32 field 4294967295: ${admit}; 2^31 > 1 as u32: ${2 ** 31 > 1}`);
// The sign bit: the top bit of the binary64 (or Object.is(x, -0)), never
// === or < (-0 === 0 is true).
const signBit = (/** @type {number} */ x) => {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  return view.getUint32(0) >>> 31;
};
const weight = new Float32Array(new Uint32Array([0x80000000]).buffer)[0]; // binary32 bits
check(Object.is(weight, -0), "binary32 -0 read as -0");
console.log(`sign bit: +0.0 -> ${signBit(0)}; -0.0 -> ${signBit(-0)}; binary32 -0.0 -> ${signBit(weight)}; -0.0 == +0.0: ${-0 === 0}`);

// spec/elementary.md#golden-values: the inputs' bits; the results computed.
const expInputs = [
  0x3ff0000000000000n, 0xbff0000000000000n, 0x3fe0000000000000n, 0x3ddb7cdfd9d7bdbbn,
  0x39b4484bfeebc2a0n, 0x4024000000000000n, 0xc034800000000000n, 0x40862e3d70a3d70an,
  0x4086300000000000n, 0xc086240000000000n, 0xc087480000000000n, 0xc087500000000000n];
const logInputs = [
  0x4000000000000000n, 0x4024000000000000n, 0x3fe0000000000000n, 0x3ff000001ad7f29bn,
  0x3ff6666666666666n, 0x3fe6666666666666n, 0x0000000000000001n, 0x7fefffffffffffffn,
  0x0000000000000000n, 0x7ff0000000000000n];
for (const b of expInputs) console.log(`exp ${hex64(b)} -> ${hex64(bitsOf(exp(fromBits(b))))}`);
for (const b of logInputs) console.log(`log ${hex64(b)} -> ${hex64(bitsOf(log(fromBits(b))))}`);
// Spot checks: one generator across the families, in order.
/** @type {[string, (x: number) => number, (u: bigint) => number][]} */
const spotFamilies = [
  ["exp wide", exp, (u) => centered(u) * twoTo(-42)],
  ["exp near 0", exp, (u) => centered(u) * twoTo(-51)],
  ["exp tiny", exp, (u) => centered(u) * twoTo(-80)],
  ["log wide", log, (u) => fromBits(u % 0x7ff0000000000000n)],
  ["log near 1", log, (u) => 1 + centered(u) * twoTo(-75)],
  ["log small", log, (u) => Number(u >> 11n) * twoTo(-50)],
];
const spot = new Rng(2026n);
for (const [name, fn, input] of spotFamilies) {
  let d = 0xcbf29ce484222325n;
  for (let i = 0; i < 1000; i++) d = u64((d ^ bitsOf(fn(input(spot.next())))) * 0x100000001b3n);
  console.log(`spot ${name}: ${hex64(d)}`);
}

if (problems.length > 0) throw new Error("PROBLEMS: " + problems.join("; "));
