// Java recipe of spec/arithmetic.md#recipes-by-language, checked by
// tools/recipes/check.sh against tools/recipes/expected.txt (Java 17+).
// Java has no unsigned long: + - * ^ << are the same bits as uint64, but
// shifts must be >>> (>> copies the sign bit), and comparison, division,
// remainder, parsing and printing go through Long's *Unsigned methods.
// int * int overflows at 2^31: widen to long first. Presence: a nullable
// Integer here; generated protobuf code has hasQueryHeads(). uint32 fields
// are ints (Integer.toUnsignedLong, Integer.compareUnsigned); the sign bit
// is tested on the bits or with Math.copySign, never with == or <.
// exp and log (spec/elementary.md): StrictMath.exp and StrictMath.log, which
// Java specifies to be fdlibm's results bit for bit, called directly. They are
// the independent check that the spec's steps, written out in the other
// recipes, are fdlibm: this program does not write the algorithms out.
// (Math.exp and Math.log may be intrinsics, not fdlibm; never use them.)
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.function.DoubleUnaryOperator;
import java.util.function.LongToDoubleFunction;

public final class Recipe {
  static long mix64(long z) {
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
    return z ^ (z >>> 31);
  }

  static final class Rng {
    final long[] s = new long[4];

    Rng(long seed) {
      long state = seed;
      for (int i = 0; i < 4; i++) {
        state += 0x9e3779b97f4a7c15L;
        s[i] = mix64(state);
      }
    }

    long next() {
      long result = Long.rotateLeft(s[1] * 5, 7) * 9;
      long t = s[1] << 17;
      s[2] ^= s[0];
      s[3] ^= s[1];
      s[1] ^= s[2];
      s[0] ^= s[3];
      s[2] ^= t;
      s[3] = Long.rotateLeft(s[3], 45);
      return result;
    }

    long uniform(long n) { // n is unsigned: 2^63 + 1 is negative as a long
      if (n == 1) return 0;
      int bits = 64 - Long.numberOfLeadingZeros(n - 1);
      for (;;) {
        long candidate = next() >>> (64 - bits);
        if (Long.compareUnsigned(candidate, n) < 0) return candidate;
      }
    }
  }

  static long ratioBudget(long n, long ppm) {
    double r = (double) ppm / 1000000.0;
    double t = 1.0 - r;
    double u = (double) n * t;
    double f = Math.floor(u);
    return f < 1.0 ? 1 : (long) f;
  }

  static long floorOf(long budget, long permille) {
    long f = budget * permille / 1000;
    return f == 0 && permille > 0 ? 1 : f;
  }

  static int effectiveHeads(Integer field) {
    return field == null ? 1 : field;
  }

  static String hex(long x) {
    return String.format("0x%016x", x);
  }

  static String hexList(long[] xs) {
    List<String> parts = new ArrayList<>();
    for (long x : xs) parts.add(hex(x));
    return String.join(" ", parts);
  }

  // spec/elementary.md#spot-checks: name, function, input from one draw u.
  record SpotFamily(String name, DoubleUnaryOperator function, LongToDoubleFunction input) {}

  // (u >>> 11) - 2^52, in [-2^52, 2^52): exact as a binary64.
  static double centered(long u) {
    return (double) ((u >>> 11) - (1L << 52));
  }

  public static void main(String[] args) {
    long state = 0;
    long[] sm = new long[3];
    for (int i = 0; i < 3; i++) {
      state += 0x9e3779b97f4a7c15L;
      sm[i] = mix64(state);
    }
    System.out.println("splitmix64 state=0: " + hexList(sm));
    for (long seed : new long[] {0, 42, -1L}) {
      Rng rng = new Rng(seed);
      long[] out = new long[5];
      for (int i = 0; i < 5; i++) out[i] = rng.next();
      System.out.println("next seed=" + Long.toUnsignedString(seed) + ": " + hexList(out));
    }
    Rng rng = new Rng(42);
    List<String> parts = new ArrayList<>();
    for (int i = 0; i < 10; i++) parts.add(Long.toUnsignedString(rng.uniform(10)));
    System.out.println("uniform(10) seed=42: " + String.join(" ", parts));
    rng = new Rng(42);
    parts.clear();
    for (int i = 0; i < 5; i++) parts.add(Long.toUnsignedString(rng.uniform(1000)));
    System.out.println("uniform(1000) seed=42: " + String.join(" ", parts));
    rng = new Rng(7);
    long[] big = new long[3];
    for (int i = 0; i < 3; i++) big[i] = rng.uniform((1L << 63) + 1);
    System.out.println("uniform(2^63+1) seed=7: " + hexList(big));

    parts.clear();
    for (long h = 1; h <= 3; h++) parts.add("h=" + h + " " + hex(mix64(1 ^ 0x3c6ef372fe94f82bL ^ h)));
    System.out.println("trace head seeds seed=1: " + String.join("; ", parts));

    long m = Long.parseUnsignedLong("18446744073709551615");
    System.out.println("u64 parse 18446744073709551615: " + Long.toUnsignedString(m) + " " + hex(m));
    System.out.println("u64 2^64-1 > 2^63: " + (Long.compareUnsigned(m, 1L << 63) > 0));
    System.out.println("u64 (2^64-1) / 3: " + Long.toUnsignedString(Long.divideUnsigned(m, 3))
        + " rem " + Long.toUnsignedString(Long.remainderUnsigned(m, 3)));
    System.out.println("u64 (2^64-1) % 10: " + Long.remainderUnsigned(m, 10));
    // (double) of a negative long is the signed value; an unsigned one needs
    // its top bit added back: here via BigDecimal of the unsigned string.
    double asDouble = new BigDecimal(Long.toUnsignedString(m)).doubleValue();
    System.out.println("u64 2^64-1 as binary64: " + new BigDecimal(asDouble).toPlainString());
    System.out.println("u64 2^53+1 as binary64: "
        + new BigDecimal((double) ((1L << 53) + 1)).toPlainString());

    long[][] heads = {{32, 8, 31}, {6, 3, 5}, {1024, 1, 1023}, {1024, 1024, 1023}};
    parts.clear();
    for (long[] c : heads) {
      parts.add("Hq=" + c[0] + " Hkv=" + c[1] + " h=" + c[2] + " -> " + c[2] / (c[0] / c[1]));
    }
    System.out.println("kv head h / (Hq / Hkv): " + String.join("; ", parts));
    long[][] floors = {{2, 200}, {512, 200}, {100, 290}, {7, 0}, {4294967295L, 999}, {4294967295L, 1000}};
    parts.clear();
    for (long[] c : floors) {
      parts.add("budget=" + c[0] + " permille=" + c[1] + " -> " + floorOf(c[0], c[1]));
    }
    System.out.println("adakv floor: " + String.join("; ", parts));
    long[][] epochs = {{1300, 512}, {2147483647, 2147483647}, {511, 512}};
    parts.clear();
    for (long[] c : epochs) parts.add("t=" + c[0] + " L=" + c[1] + " -> " + c[0] / c[1]);
    System.out.println("trace epoch t / epoch_length: " + String.join("; ", parts));
    parts.clear();
    for (long h : new long[] {1, 4, 5, 9}) parts.add("h=" + h + " -> " + (h - 1) % 3);
    System.out.println("trace role (h - 1) mod 3: " + String.join("; ", parts));
    long[][] recents = {{3, 0, 8}, {1300, 4, 8}, {5, 4, 8}};
    parts.clear();
    for (long[] c : recents) {
      long back = Math.max(0, c[0] - c[2]);
      parts.add("t=" + c[0] + " sinks=" + c[1] + " R=" + c[2] + " -> " + Math.max(c[1], back));
    }
    System.out.println("trace recent start max(sinks, t - recent_length), t - recent_length stopping at 0: "
        + String.join("; ", parts));
    System.out.println("snapkv (pool_kernel - 1) / 2: 5 -> " + (5 - 1) / 2 + "; 65535 -> " + (65535 - 1) / 2);

    long[][] ratios = {{20, 900000}, {10, 800000}, {90, 300000}, {1000, 500000}, {7, 999999},
        {4294967295L, 1}, {4294967295L, 999999}};
    for (long[] c : ratios) {
      long exact = Math.max(1, c[0] * (1000000 - c[1]) / 1000000);
      System.out.println("ratio budget n=" + c[0] + " ppm=" + c[1] + ": binary64 "
          + ratioBudget(c[0], c[1]) + " exact " + exact);
    }
    System.out.println("kvpress int(100 * 0.29): " + (long) (100 * 0.29) + " exact " + 100 * 290 / 1000);
    System.out.println("presence query_heads: absent -> " + effectiveHeads(null)
        + "; present 0 -> " + effectiveHeads(0) + "; present 4 -> " + effectiveHeads(4));

    // protobuf-java returns a uint32 field as an int: 4294967295 reads as -1
    // and 2^31 as Integer.MIN_VALUE. Widen with Integer.toUnsignedLong and
    // compare with Integer.compareUnsigned.
    int admit = (int) 4294967295L; // as step.getAdmit() returns it
    int half = (int) 2147483648L;
    System.out.println("u32 field 4294967295: " + Integer.toUnsignedLong(admit)
        + "; 2^31 > 1 as u32: " + (Integer.compareUnsigned(half, 1) > 0));
    // The sign bit: -0.0 == 0.0 is true and -0.0 < 0 is false, so test the
    // bits (Double.doubleToRawLongBits, Float.floatToRawIntBits) or
    // Math.copySign, never == or <.
    double positiveZero = 0.0, negativeZero = -0.0;
    float weight = Float.intBitsToFloat(0x80000000); // a binary32 weight's bits
    System.out.println("sign bit: +0.0 -> " + (Double.doubleToRawLongBits(positiveZero) >>> 63)
        + "; -0.0 -> " + (Double.doubleToRawLongBits(negativeZero) >>> 63)
        + "; binary32 -0.0 -> " + (Math.copySign(1.0f, weight) < 0 ? 1 : 0)
        + "; -0.0 == +0.0: " + (negativeZero == positiveZero));

    // spec/elementary.md#golden-values: the inputs' bits; the results computed.
    long[] expInputs = {
      0x3ff0000000000000L, 0xbff0000000000000L, 0x3fe0000000000000L, 0x3ddb7cdfd9d7bdbbL,
      0x39b4484bfeebc2a0L, 0x4024000000000000L, 0xc034800000000000L, 0x40862e3d70a3d70aL,
      0x4086300000000000L, 0xc086240000000000L, 0xc087480000000000L, 0xc087500000000000L};
    long[] logInputs = {
      0x4000000000000000L, 0x4024000000000000L, 0x3fe0000000000000L, 0x3ff000001ad7f29bL,
      0x3ff6666666666666L, 0x3fe6666666666666L, 0x0000000000000001L, 0x7fefffffffffffffL,
      0x0000000000000000L, 0x7ff0000000000000L};
    for (long b : expInputs) {
      double y = StrictMath.exp(Double.longBitsToDouble(b));
      System.out.println("exp " + hex(b) + " -> " + hex(Double.doubleToRawLongBits(y)));
    }
    for (long b : logInputs) {
      double y = StrictMath.log(Double.longBitsToDouble(b));
      System.out.println("log " + hex(b) + " -> " + hex(Double.doubleToRawLongBits(y)));
    }
    // Spot checks: one generator across the families, in order.
    SpotFamily[] families = {
      new SpotFamily("exp wide", StrictMath::exp, u -> centered(u) * 0x1p-42),
      new SpotFamily("exp near 0", StrictMath::exp, u -> centered(u) * 0x1p-51),
      new SpotFamily("exp tiny", StrictMath::exp, u -> centered(u) * 0x1p-80),
      new SpotFamily("log wide", StrictMath::log,
          u -> Double.longBitsToDouble(Long.remainderUnsigned(u, 0x7ff0000000000000L))),
      new SpotFamily("log near 1", StrictMath::log, u -> 1.0 + centered(u) * 0x1p-75),
      new SpotFamily("log small", StrictMath::log, u -> (double) (u >>> 11) * 0x1p-50),
    };
    Rng spot = new Rng(2026);
    for (SpotFamily family : families) {
      long d = 0xcbf29ce484222325L;
      for (int i = 0; i < 1000; i++) {
        double y = family.function().applyAsDouble(family.input().applyAsDouble(spot.next()));
        d = (d ^ Double.doubleToRawLongBits(y)) * 0x100000001b3L;
      }
      System.out.println("spot " + family.name() + ": " + hex(d));
    }
  }
}
