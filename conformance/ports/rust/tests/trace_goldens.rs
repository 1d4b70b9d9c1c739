//! The golden rows of spec/trace.md#golden-rows, checked bit for bit. The
//! last eight canonical positions are ones a fused multiply-add in the noise
//! factor would change (spec/arithmetic.md#operations).
use kvspec_port::trace::{TraceGenerator, TraceParams};

fn generator_at(p: TraceParams, step: u64) -> TraceGenerator {
    let mut g = TraceGenerator::new(p);
    for t in 0..=step {
        g.begin_step(t);
    }
    g
}

#[test]
fn small_trace_rows() {
    let expected: [&[u32]; 5] = [
        &[0x3f80337b],
        &[0x3ee92879, 0x3f100ab3],
        &[0x3e909d2a, 0x3ea55833, 0x3ed23d8f],
        &[0x3e8a27d7, 0x3e9ada58, 0x3e9d87d2, 0x3de90157],
        &[0x3e8d89ed, 0x3e96f687, 0x3e883fa5, 0x3d9e2020, 0x3dc37c42],
    ];
    for (i, want) in expected.iter().enumerate() {
        let step = i as u64 + 1;
        let mut p = TraceParams::canonical(6);
        p.sinks = 2;
        p.recent_length = 2;
        p.heavy_count = 2;
        p.epoch_length = 3;
        let g = generator_at(p, step);
        let got: Vec<u32> = g.row().iter().map(|w| w.to_bits()).collect();
        assert_eq!(&got[..], *want, "step {step}");
    }
}

#[test]
fn canonical_trace_at_step_1300() {
    let g = generator_at(TraceParams::canonical(1301), 1300);
    let expected: [(u64, u32); 24] = [
        (0, 0x3e001701), (1, 0x3e002ce5), (2, 0x3e00176a), (3, 0x3e002e36),
        (4, 0x38628a17), (5, 0x38d2ba71), (1290, 0x392349ab), (1291, 0x390aea48),
        (1292, 0x3a2e3ab0), (1293, 0x3a929f26), (1294, 0x3b058d42), (1295, 0x3b83f4fa),
        (1296, 0x3c02c75c), (1297, 0x3c81abde), (1298, 0x3d00e8d0), (1299, 0x3d80dd21),
        // Changed by a fused multiply-add in 1 + noise * jit.
        (22, 0x39636b7d), (34, 0x38c98c58), (46, 0x3783b804), (51, 0x38e63677),
        (58, 0x391b83ff), (61, 0x39239443), (74, 0x38fb76f2), (92, 0x38d2f1f8),
    ];
    for (position, bits) in expected {
        assert_eq!(g.weight(position).to_bits(), bits, "position {position}");
    }
}

/// spec/trace.md#golden-rows-of-several-heads (printed by
/// `tools/goldens/trace_goldens.py --heads`): query heads 0..3 (the trace itself,
/// then roles 0, 1, 2) of a small trace at steps 3 and 9, each head's
/// generator built from `for_head` as the harness builds it.
#[test]
fn several_heads_rows() {
    let mut base = TraceParams::canonical(10);
    base.sinks = 2;
    base.recent_length = 2;
    base.heavy_count = 2;
    base.epoch_length = 4;
    // (seed, step 3's row, step 9's row) per head.
    let heads: [(u64, [u32; 3], [u32; 9]); 4] = [
        (
            1,
            [0x3ec0d18d, 0x3edc759a, 0x3e5b4ed2],
            [0x3e852e45, 0x3e8d93b5, 0x3e84c912, 0x3cbe528d, 0x3bf16d8a, 0x3c25aabb, 0x3c47443c, 0x3d4d64ae, 0x3dce5d50],
        ),
        (
            0xbeeb8da1658eec67,
            [0x3ef4c260, 0x3ee4d22d, 0x3da7a3cf],
            [0x3ecf8888, 0x3ecd0530, 0x3b944fb2, 0x3b908556, 0x3c10c70f, 0x3d61661c, 0x3bc2be15, 0x3da08f6e, 0x3d29a994],
        ),
        (
            0xba56949915dcf9e9,
            [0x3e7be722, 0x3e8a6fec, 0x3ef60395],
            [0x3e4241b0, 0x3e4bfc73, 0x3de979a0, 0x3b810afc, 0x3b8675e3, 0x3c02a819, 0x3b72aaa6, 0x3e5fd592, 0x3e85ae61],
        ),
        (
            0xe99ff867dbf682c9,
            [0x3ed02272, 0x3ec253f2, 0x3e63a317],
            [0x3e1bc352, 0x3e17090b, 0x3c19a7b7, 0x3e9761a6, 0x3e92f5d8, 0x3c3d683e, 0x3c603e18, 0x3cd6dbca, 0x3d6dc910],
        ),
    ];
    for (h, (seed, step3, step9)) in heads.iter().enumerate() {
        let p = base.for_head(h as u32);
        assert_eq!(p.seed, *seed, "head {h}");
        let mut g = TraceGenerator::new(p);
        for t in 0..10u64 {
            g.begin_step(t);
            let got: Vec<u32> = g.row().iter().map(|w| w.to_bits()).collect();
            if t == 3 {
                assert_eq!(&got[..], &step3[..], "head {h} step 3");
            }
            if t == 9 {
                assert_eq!(&got[..], &step9[..], "head {h} step 9");
            }
        }
    }
}
