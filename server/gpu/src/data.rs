//! Buffer contents: the seeded fill, element encoding, output checksums and
//! the tolerance comparison, defined here on the host. The worker does the
//! same on the device (device.cu mirrors these functions; the GPU tests
//! check that the results are identical). Pure functions, no GPU.

use crate::job::{BufferComparison, Checksum, Mismatch};
use crate::verify::PairStats;
use kernelpro_spec::{BufferArg, Dir, ElemType, Init, Tolerance};

/// splitmix64: small, fast and good enough to fill test inputs.
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    /// Uniform integer in [lo, hi].
    pub fn next_in(&mut self, lo: i64, hi: i64) -> i64 {
        let span = (hi as i128 - lo as i128 + 1) as u128;
        (lo as i128 + (self.next_u64() as u128 % span) as i128) as i64
    }
}

/// f32 → IEEE half bits, rounding to nearest even.
pub fn f32_to_f16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let man = b & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rest = m & ((1 << shift) - 1);
        let mut r = m >> shift;
        if rest > half || (rest == half && r & 1 == 1) {
            r += 1;
        }
        return sign | r as u16;
    }
    let mut r = ((e as u32) << 10) | (man >> 13);
    let rest = man & 0x1fff;
    if rest > 0x1000 || (rest == 0x1000 && r & 1 == 1) {
        r += 1;
    }
    sign | r as u16
}

pub fn f16_bits_to_f32(h: u16) -> f32 {
    let sign = ((h & 0x8000) as u32) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    let bits = match exp {
        0 if man == 0 => sign,
        0 => {
            let value = man as f32 * (1.0 / (1 << 24) as f32);
            return if sign != 0 { -value } else { value };
        }
        0x1f => sign | 0x7f80_0000 | (man << 13),
        _ => sign | ((exp + 127 - 15) << 23) | (man << 13),
    };
    f32::from_bits(bits)
}

/// f32 → bfloat16 bits, rounding to nearest even.
pub fn f32_to_bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return 0x7fc0;
    }
    ((b + 0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

pub fn bf16_bits_to_f32(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

/// Appends one element of type `elem` with value `v` (NaN allowed for floats).
fn push(out: &mut Vec<u8>, elem: ElemType, v: f64) {
    match elem {
        ElemType::Float => out.extend((v as f32).to_le_bytes()),
        ElemType::Double => out.extend(v.to_le_bytes()),
        ElemType::Half => out.extend(f32_to_f16_bits(v as f32).to_le_bytes()),
        ElemType::Bfloat16 => out.extend(f32_to_bf16_bits(v as f32).to_le_bytes()),
        ElemType::Int => out.extend((v as i32).to_le_bytes()),
        ElemType::Unsigned => out.extend((v as u32).to_le_bytes()),
        ElemType::Int8 => out.push(v as i8 as u8),
        ElemType::Uint8 => out.push(v as u8),
        ElemType::Int64 => out.extend((v as i64).to_le_bytes()),
    }
}

/// The value of element `i` of a buffer of type `elem` held in `bytes`.
pub fn element(bytes: &[u8], elem: ElemType, i: usize) -> f64 {
    let n = elem.size_bytes() as usize;
    let b = &bytes[i * n..(i + 1) * n];
    match elem {
        ElemType::Float => f32::from_le_bytes(b.try_into().unwrap()) as f64,
        ElemType::Double => f64::from_le_bytes(b.try_into().unwrap()),
        ElemType::Half => f16_bits_to_f32(u16::from_le_bytes(b.try_into().unwrap())) as f64,
        ElemType::Bfloat16 => bf16_bits_to_f32(u16::from_le_bytes(b.try_into().unwrap())) as f64,
        ElemType::Int => i32::from_le_bytes(b.try_into().unwrap()) as f64,
        ElemType::Unsigned => u32::from_le_bytes(b.try_into().unwrap()) as f64,
        ElemType::Int8 => b[0] as i8 as f64,
        ElemType::Uint8 => b[0] as f64,
        ElemType::Int64 => i64::from_le_bytes(b.try_into().unwrap()) as f64,
    }
}

/// The byte that fills integer `out` buffers, so unwritten elements show.
pub const INT_SENTINEL_BYTE: u8 = 0x7f;

/// Whether element `i` still holds the fill of an `out` buffer.
fn is_unwritten(bytes: &[u8], elem: ElemType, i: usize) -> bool {
    if elem.is_float() {
        return element(bytes, elem, i).is_nan();
    }
    let n = elem.size_bytes() as usize;
    bytes[i * n..(i + 1) * n].iter().all(|b| *b == INT_SENTINEL_BYTE)
}

/// The code of an element type in device.cu.
pub fn elem_code(elem: ElemType) -> i32 {
    match elem {
        ElemType::Float => 0,
        ElemType::Double => 1,
        ElemType::Half => 2,
        ElemType::Bfloat16 => 3,
        ElemType::Int => 4,
        ElemType::Unsigned => 5,
        ElemType::Int8 => 6,
        ElemType::Uint8 => 7,
        ElemType::Int64 => 8,
    }
}

/// How a buffer's initial contents are generated: one definition for the
/// host ([`fill`]) and the device (`kp_fill` in device.cu, which mirrors
/// [`FillPlan::value`] and [`push`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FillPlan {
    /// Every element holds these bytes (little-endian, the element's size):
    /// constants, and the NaN or sentinel of `out` buffers.
    Pattern(u64),
    /// Element i is `lo + (hi - lo) * u_i`, u_i uniform in [0, 1) from the stream.
    Uniform { stream: u64, lo: f64, hi: f64 },
    /// Element i is uniform in [lo, hi] from the stream.
    Randint { stream: u64, lo: i64, hi: i64 },
    /// Element i is i.
    Iota,
}

/// splitmix64's state increment: the stream is counter-based, element i
/// draws the (i+1)-th output, so any element can be made on its own.
const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

impl FillPlan {
    /// The plan of buffer number `index` of a launch with `seed`. Each buffer
    /// gets its own stream so adding a buffer leaves the others unchanged.
    pub fn of(buf: &BufferArg, seed: u64, index: usize) -> FillPlan {
        let constant = |v: f64| {
            let mut bytes = Vec::with_capacity(8);
            push(&mut bytes, buf.elem, v);
            bytes.resize(8, 0);
            FillPlan::Pattern(u64::from_le_bytes(bytes.try_into().expect("8 bytes")))
        };
        if buf.dir == Dir::Out {
            return if buf.elem.is_float() {
                constant(f64::NAN)
            } else {
                FillPlan::Pattern(u64::from_le_bytes([INT_SENTINEL_BYTE; 8]))
            };
        }
        let stream = seed ^ (index as u64 + 1).wrapping_mul(0xd1b5_4a32_d192_ed03);
        match buf.init {
            Init::Uniform { lo, hi } => FillPlan::Uniform { stream, lo, hi },
            Init::Randint { lo, hi } => FillPlan::Randint { stream, lo, hi },
            Init::Zeros => constant(0.0),
            Init::Ones => constant(1.0),
            Init::Iota => FillPlan::Iota,
            Init::Fill { value } => constant(value),
        }
    }

    /// The value of element `i` (`None` for a byte pattern).
    pub fn value(&self, i: u64) -> Option<f64> {
        let draw = |stream: u64| SplitMix64::new(stream.wrapping_add(i.wrapping_mul(GAMMA))).next_u64();
        match *self {
            FillPlan::Pattern(_) => None,
            FillPlan::Uniform { stream, lo, hi } => {
                Some(lo + (hi - lo) * ((draw(stream) >> 11) as f64 * (1.0 / (1u64 << 53) as f64)))
            }
            FillPlan::Randint { stream, lo, hi } => {
                Some(SplitMix64::new(stream.wrapping_add(i.wrapping_mul(GAMMA))).next_in(lo, hi) as f64)
            }
            FillPlan::Iota => Some(i as f64),
        }
    }
}

/// The initial contents of buffer number `index` of a launch with `seed`, on
/// the host (the worker fills on the device: see [`FillPlan`]).
pub fn fill(buf: &BufferArg, seed: u64, index: usize) -> Vec<u8> {
    let size = buf.elem.size_bytes() as usize;
    let plan = FillPlan::of(buf, seed, index);
    let mut out = Vec::with_capacity(buf.count as usize * size);
    for i in 0..buf.count {
        match plan.value(i) {
            Some(v) => push(&mut out, buf.elem, v),
            None => out.extend_from_slice(
                &match plan {
                    FillPlan::Pattern(bits) => bits.to_le_bytes(),
                    _ => unreachable!("only patterns have no value"),
                }[..size],
            ),
        }
    }
    out
}

/// The mixing step of splitmix64, shared by the generator and the hash.
fn mix(z: u64) -> u64 {
    let z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The bits of element `i`, zero-extended.
fn raw(bytes: &[u8], elem: ElemType, i: usize) -> u64 {
    let n = elem.size_bytes() as usize;
    let mut b = [0u8; 8];
    b[..n].copy_from_slice(&bytes[i * n..(i + 1) * n]);
    u64::from_le_bytes(b)
}

/// An order-independent hash of a buffer's bits (a wrapping sum of one mixed
/// value per element and index), so that the device computes it in parallel.
fn element_hash(i: u64, bits: u64) -> u64 {
    mix(bits ^ mix((i + 1).wrapping_mul(GAMMA)))
}

/// The host definition of `kp_checksum` (the device adds in another order,
/// so its sums may differ in the last bits).
pub fn checksum(buf: &BufferArg, bytes: &[u8]) -> Checksum {
    let (mut sum, mut abs_sum, mut unwritten, mut hash) = (0.0, 0.0, 0, 0u64);
    for i in 0..buf.count as usize {
        hash = hash.wrapping_add(element_hash(i as u64, raw(bytes, buf.elem, i)));
        if is_unwritten(bytes, buf.elem, i) {
            unwritten += 1;
            continue;
        }
        let v = element(bytes, buf.elem, i);
        sum += v;
        abs_sum += v.abs();
    }
    Checksum { name: buf.name.clone(), sum, abs_sum, unwritten, hash: format!("{hash:016x}") }
}

/// The host definition of `kp_compare`: `got` against `want` element by
/// element with `tol` (both NaN counts as equal), and how far apart they are.
pub fn pair_stats(buf: &BufferArg, tol: Tolerance, want: &[u8], got: &[u8]) -> PairStats {
    let mut s = PairStats::default();
    let mut worst_excess = f64::NEG_INFINITY;
    for i in 0..buf.count as usize {
        let (w, g) = (element(want, buf.elem, i), element(got, buf.elem, i));
        if w.is_nan() && g.is_nan() {
            continue;
        }
        if raw(want, buf.elem, i) != raw(got, buf.elem, i) {
            s.differing += 1;
        }
        if w.is_finite() {
            s.max_abs = s.max_abs.max(w.abs());
        }
        if w.is_nan() != g.is_nan() {
            s.one_nan += 1;
        } else {
            s.max_abs_diff = s.max_abs_diff.max(if w == g { 0.0 } else { (g - w).abs() });
        }
        if tol.accepts(w, g) {
            continue;
        }
        s.bad += 1;
        let excess =
            if g.is_nan() || w.is_nan() { f64::INFINITY } else { (g - w).abs() - tol.atol - tol.rtol * w.abs() };
        if excess > worst_excess {
            worst_excess = excess;
            s.worst = Some(i as u64);
        }
    }
    s
}

/// Compares `got` against `reference` with `tol`, on the host.
pub fn compare(buf: &BufferArg, tol: Tolerance, reference: &[u8], got: &[u8]) -> BufferComparison {
    let stats = pair_stats(buf, tol, reference, got);
    let worst = stats.worst.map(|i| Mismatch {
        index: i,
        reference: element(reference, buf.elem, i as usize),
        got: element(got, buf.elem, i as usize),
    });
    BufferComparison::new(buf, tol, None, stats.bad, worst)
}

/// (median, min, max, population stddev) of samples; all 0 for none.
pub fn stats(samples: &[f64]) -> (f64, f64, f64, f64) {
    if samples.is_empty() {
        return (0.0, 0.0, 0.0, 0.0);
    }
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let median = if n % 2 == 1 { s[n / 2] } else { (s[n / 2 - 1] + s[n / 2]) / 2.0 };
    let mean = s.iter().sum::<f64>() / n as f64;
    let var = s.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
    (median, s[0], s[n - 1], var.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buffer(elem: ElemType, dir: Dir, count: u64, init: Init) -> BufferArg {
        BufferArg { name: "y".into(), dir, elem, count, init }
    }

    fn values(buf: &BufferArg, bytes: &[u8]) -> Vec<f64> {
        (0..buf.count as usize).map(|i| element(bytes, buf.elem, i)).collect()
    }

    #[test]
    fn fills_are_deterministic_and_in_range() {
        let b = buffer(ElemType::Float, Dir::In, 1000, Init::Uniform { lo: -2.0, hi: 2.0 });
        let (one, two) = (fill(&b, 7, 0), fill(&b, 7, 0));
        assert_eq!(one, two);
        assert_ne!(one, fill(&b, 8, 0));
        assert_ne!(one, fill(&b, 7, 1));
        let v = values(&b, &one);
        assert!(v.iter().all(|x| (-2.0..2.0).contains(x)));
        assert!(v.iter().any(|x| *x < -1.5) && v.iter().any(|x| *x > 1.5));

        let b = buffer(ElemType::Int8, Dir::Inout, 500, Init::Randint { lo: -3, hi: 3 });
        let v = values(&b, &fill(&b, 1, 0));
        assert_eq!(v.iter().cloned().fold(f64::INFINITY, f64::min), -3.0);
        assert_eq!(v.iter().cloned().fold(f64::NEG_INFINITY, f64::max), 3.0);

        let b = buffer(ElemType::Half, Dir::In, 4, Init::Iota);
        assert_eq!(values(&b, &fill(&b, 1, 0)), [0.0, 1.0, 2.0, 3.0]);
        let b = buffer(ElemType::Int64, Dir::In, 2, Init::Fill { value: -5.0 });
        assert_eq!(values(&b, &fill(&b, 1, 0)), [-5.0, -5.0]);
    }

    /// The device computes element i on its own (`kp_fill`): the plan's
    /// element i must be the i-th draw of the sequential generator.
    #[test]
    fn element_i_is_the_streams_i_th_draw() {
        let b = buffer(ElemType::Double, Dir::In, 1000, Init::Uniform { lo: -1.0, hi: 3.0 });
        let plan = FillPlan::of(&b, 42, 3);
        let FillPlan::Uniform { stream, .. } = plan else { panic!("{plan:?}") };
        let mut rng = SplitMix64::new(stream);
        for i in 0..1000 {
            assert_eq!(plan.value(i), Some(-1.0 + 4.0 * rng.next_f64()), "element {i}");
        }
        let b = buffer(ElemType::Int64, Dir::Inout, 1000, Init::Randint { lo: i64::MIN, hi: i64::MAX });
        let plan = FillPlan::of(&b, 7, 0);
        let FillPlan::Randint { stream, .. } = plan else { panic!("{plan:?}") };
        let mut rng = SplitMix64::new(stream);
        for i in 0..1000 {
            assert_eq!(plan.value(i), Some(rng.next_in(i64::MIN, i64::MAX) as f64), "element {i}");
        }
    }

    /// Known answers: the first elements of each type and init, the target of the device port.
    #[test]
    fn fills_of_every_type() {
        let mut out = String::new();
        for elem in [
            ElemType::Float,
            ElemType::Double,
            ElemType::Half,
            ElemType::Bfloat16,
            ElemType::Int,
            ElemType::Unsigned,
            ElemType::Int8,
            ElemType::Uint8,
            ElemType::Int64,
        ] {
            for (init, dir) in [
                (Init::Uniform { lo: -2.0, hi: 2.0 }, Dir::In),
                (Init::Randint { lo: -300, hi: 300 }, Dir::In),
                (Init::Iota, Dir::In),
                (Init::Fill { value: -1.5 }, Dir::Inout),
                (Init::Zeros, Dir::Out),
            ] {
                let b = buffer(elem, dir, 3, init);
                let bytes = fill(&b, 42, 1);
                out.push_str(&format!(
                    "{} {:?} {:?}: {:?} {}\n",
                    elem.spec_name(),
                    dir,
                    init,
                    values(&b, &bytes),
                    bytes.iter().map(|x| format!("{x:02x}")).collect::<String>()
                ));
            }
        }
        expect_test::expect![[r#"
            float In Uniform { lo: -2.0, hi: 2.0 }: [1.913665533065796, 1.443024754524231, -1.3844614028930664] fef2f43f09b5b83f0836b1bf
            float In Randint { lo: -300, hi: 300 }: [-53.0, -274.0, -53.0] 000054c2000089c3000054c2
            float In Iota: [0.0, 1.0, 2.0] 000000000000803f00000040
            float Inout Fill { value: -1.5 }: [-1.5, -1.5, -1.5] 0000c0bf0000c0bf0000c0bf
            float Out Zeros: [NaN, NaN, NaN] 0000c07f0000c07f0000c07f
            double In Uniform { lo: -2.0, hi: 2.0 }: [1.9136655367466413, 1.4430248082136905, -1.3844613974817674] 1ef2fcc05f9efe3ff682692ea116f73f6c238cfec026f6bf
            double In Randint { lo: -300, hi: 300 }: [-53.0, -274.0, -53.0] 0000000000804ac000000000002071c00000000000804ac0
            double In Iota: [0.0, 1.0, 2.0] 0000000000000000000000000000f03f0000000000000040
            double Inout Fill { value: -1.5 }: [-1.5, -1.5, -1.5] 000000000000f8bf000000000000f8bf000000000000f8bf
            double Out Zeros: [NaN, NaN, NaN] 000000000000f87f000000000000f87f000000000000f87f
            half In Uniform { lo: -2.0, hi: 2.0 }: [1.9140625, 1.443359375, -1.384765625] a83fc63d8abd
            half In Randint { lo: -300, hi: 300 }: [-53.0, -274.0, -53.0] a0d248dca0d2
            half In Iota: [0.0, 1.0, 2.0] 0000003c0040
            half Inout Fill { value: -1.5 }: [-1.5, -1.5, -1.5] 00be00be00be
            half Out Zeros: [NaN, NaN, NaN] 007e007e007e
            bfloat16 In Uniform { lo: -2.0, hi: 2.0 }: [1.9140625, 1.4453125, -1.3828125] f53fb93fb1bf
            bfloat16 In Randint { lo: -300, hi: 300 }: [-53.0, -274.0, -53.0] 54c289c354c2
            bfloat16 In Iota: [0.0, 1.0, 2.0] 0000803f0040
            bfloat16 Inout Fill { value: -1.5 }: [-1.5, -1.5, -1.5] c0bfc0bfc0bf
            bfloat16 Out Zeros: [NaN, NaN, NaN] c07fc07fc07f
            int In Uniform { lo: -2.0, hi: 2.0 }: [1.0, 1.0, -1.0] 0100000001000000ffffffff
            int In Randint { lo: -300, hi: 300 }: [-53.0, -274.0, -53.0] cbffffffeefeffffcbffffff
            int In Iota: [0.0, 1.0, 2.0] 000000000100000002000000
            int Inout Fill { value: -1.5 }: [-1.0, -1.0, -1.0] ffffffffffffffffffffffff
            int Out Zeros: [2139062143.0, 2139062143.0, 2139062143.0] 7f7f7f7f7f7f7f7f7f7f7f7f
            unsigned In Uniform { lo: -2.0, hi: 2.0 }: [1.0, 1.0, 0.0] 010000000100000000000000
            unsigned In Randint { lo: -300, hi: 300 }: [0.0, 0.0, 0.0] 000000000000000000000000
            unsigned In Iota: [0.0, 1.0, 2.0] 000000000100000002000000
            unsigned Inout Fill { value: -1.5 }: [0.0, 0.0, 0.0] 000000000000000000000000
            unsigned Out Zeros: [2139062143.0, 2139062143.0, 2139062143.0] 7f7f7f7f7f7f7f7f7f7f7f7f
            int8 In Uniform { lo: -2.0, hi: 2.0 }: [1.0, 1.0, -1.0] 0101ff
            int8 In Randint { lo: -300, hi: 300 }: [-53.0, -128.0, -53.0] cb80cb
            int8 In Iota: [0.0, 1.0, 2.0] 000102
            int8 Inout Fill { value: -1.5 }: [-1.0, -1.0, -1.0] ffffff
            int8 Out Zeros: [127.0, 127.0, 127.0] 7f7f7f
            uint8 In Uniform { lo: -2.0, hi: 2.0 }: [1.0, 1.0, 0.0] 010100
            uint8 In Randint { lo: -300, hi: 300 }: [0.0, 0.0, 0.0] 000000
            uint8 In Iota: [0.0, 1.0, 2.0] 000102
            uint8 Inout Fill { value: -1.5 }: [0.0, 0.0, 0.0] 000000
            uint8 Out Zeros: [127.0, 127.0, 127.0] 7f7f7f
            int64 In Uniform { lo: -2.0, hi: 2.0 }: [1.0, 1.0, -1.0] 01000000000000000100000000000000ffffffffffffffff
            int64 In Randint { lo: -300, hi: 300 }: [-53.0, -274.0, -53.0] cbffffffffffffffeefeffffffffffffcbffffffffffffff
            int64 In Iota: [0.0, 1.0, 2.0] 000000000000000001000000000000000200000000000000
            int64 Inout Fill { value: -1.5 }: [-1.0, -1.0, -1.0] ffffffffffffffffffffffffffffffffffffffffffffffff
            int64 Out Zeros: [9.187201950435738e18, 9.187201950435738e18, 9.187201950435738e18] 7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f
        "#]]
        .assert_eq(&out);
    }

    #[test]
    fn out_buffers_start_as_nan_or_sentinel() {
        let b = buffer(ElemType::Bfloat16, Dir::Out, 3, Init::Zeros);
        assert!(values(&b, &fill(&b, 1, 0)).iter().all(|x| x.is_nan()));
        let b = buffer(ElemType::Int, Dir::Out, 2, Init::Zeros);
        assert_eq!(fill(&b, 1, 0), vec![0x7f; 8]);
        assert_eq!(checksum(&b, &fill(&b, 1, 0)).unwritten, 2);
    }

    #[test]
    fn converts_half_and_bfloat16() {
        for (x, bits) in [
            (1.0f32, 0x3c00u16),
            (-2.0, 0xc000),
            (65504.0, 0x7bff),
            (1e6, 0x7c00),
            (5.960_464_5e-8, 0x0001),
            (0.1, 0x2e66),
        ] {
            assert_eq!(f32_to_f16_bits(x), bits, "{x}");
        }
        assert_eq!(f16_bits_to_f32(0x2e66), 0.099_975_586);
        assert_eq!(f16_bits_to_f32(0x0001), 5.960_464_5e-8);
        assert!(f16_bits_to_f32(f32_to_f16_bits(f32::NAN)).is_nan());
        assert_eq!(f32_to_bf16_bits(1.0), 0x3f80);
        assert_eq!(f32_to_bf16_bits(1.0 + 1.0 / 256.0), 0x3f80, "ties go to even");
        assert_eq!(f32_to_bf16_bits(1.0 + 3.0 / 256.0), 0x3f82, "ties go to even");
        assert_eq!(bf16_bits_to_f32(0xc040), -3.0);
    }

    fn floats(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn compare_reports_the_worst_element() {
        let b = buffer(ElemType::Float, Dir::Out, 5, Init::Zeros);
        let tol = Tolerance { rtol: 1e-3, atol: 0.0 };
        let reference = floats(&[1.0, 2.0, 3.0, f32::NAN, 100.0]);
        let c = compare(&b, tol, &reference, &floats(&[1.0005, 2.5, 3.0, f32::NAN, 101.0]));
        assert_eq!((c.bad, c.count), (2, 5));
        assert_eq!(c.worst, Some(Mismatch { index: 4, reference: 100.0, got: 101.0 }));

        let unwritten = compare(&b, tol, &reference, &floats(&[1.0, 2.0, f32::NAN, f32::NAN, 100.0]));
        let worst = unwritten.worst.expect("an unwritten element is a mismatch");
        assert_eq!((worst.index, worst.reference), (2, 3.0));
        assert!(worst.got.is_nan());

        let ok = compare(&b, tol, &reference, &reference);
        assert_eq!((ok.bad, ok.worst), (0, None));
    }

    #[test]
    fn summarises_samples() {
        assert_eq!(stats(&[3.0, 1.0, 2.0, 10.0]), (2.5, 1.0, 10.0, 3.5355339059327378));
        assert_eq!(stats(&[]), (0.0, 0.0, 0.0, 0.0));
    }
}
