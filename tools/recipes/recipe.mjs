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

if (problems.length > 0) throw new Error("PROBLEMS: " + problems.join("; "));
