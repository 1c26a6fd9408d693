//! Host-side buffer contents: the seeded fill, element encoding, output
//! checksums and the tolerance comparison. Pure functions, no GPU.

use crate::job::{BufferComparison, Checksum, Mismatch};
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

/// The initial contents of buffer number `index` of a launch with `seed`.
/// Each buffer gets its own stream so adding a buffer leaves the others unchanged.
pub fn fill(buf: &BufferArg, seed: u64, index: usize) -> Vec<u8> {
    let n = buf.count as usize;
    if buf.dir == Dir::Out {
        return if buf.elem.is_float() {
            let mut out = Vec::with_capacity(n * buf.elem.size_bytes() as usize);
            (0..n).for_each(|_| push(&mut out, buf.elem, f64::NAN));
            out
        } else {
            vec![INT_SENTINEL_BYTE; n * buf.elem.size_bytes() as usize]
        };
    }
    let mut rng = SplitMix64::new(seed ^ (index as u64 + 1).wrapping_mul(0xd1b5_4a32_d192_ed03));
    let mut out = Vec::with_capacity(n * buf.elem.size_bytes() as usize);
    for i in 0..n {
        let v = match buf.init {
            Init::Uniform { lo, hi } => lo + (hi - lo) * rng.next_f64(),
            Init::Randint { lo, hi } => rng.next_in(lo, hi) as f64,
            Init::Zeros => 0.0,
            Init::Ones => 1.0,
            Init::Iota => i as f64,
            Init::Fill { value } => value,
        };
        push(&mut out, buf.elem, v);
    }
    out
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0100_0000_01b3;

pub fn checksum(buf: &BufferArg, bytes: &[u8]) -> Checksum {
    let (mut sum, mut abs_sum, mut unwritten) = (0.0, 0.0, 0);
    for i in 0..buf.count as usize {
        if is_unwritten(bytes, buf.elem, i) {
            unwritten += 1;
            continue;
        }
        let v = element(bytes, buf.elem, i);
        sum += v;
        abs_sum += v.abs();
    }
    let hash = bytes.iter().fold(FNV_OFFSET, |h, b| (h ^ *b as u64).wrapping_mul(FNV_PRIME));
    Checksum { name: buf.name.clone(), sum, abs_sum, unwritten, fnv1a: format!("{hash:016x}") }
}

/// Compares `got` against `reference` element by element. Both NaN counts as equal.
pub fn compare(buf: &BufferArg, tol: Tolerance, reference: &[u8], got: &[u8]) -> BufferComparison {
    let (mut bad, mut worst, mut worst_excess) = (0u64, None, f64::NEG_INFINITY);
    for i in 0..buf.count as usize {
        let (want, have) = (element(reference, buf.elem, i), element(got, buf.elem, i));
        if (want.is_nan() && have.is_nan()) || tol.accepts(want, have) {
            continue;
        }
        bad += 1;
        let excess = if have.is_nan() || want.is_nan() { f64::INFINITY } else { (have - want).abs() - tol.atol - tol.rtol * want.abs() };
        if excess > worst_excess {
            worst_excess = excess;
            worst = Some(Mismatch { index: i as u64, reference: want, got: have });
        }
    }
    BufferComparison { name: buf.name.clone(), rtol: tol.rtol, atol: tol.atol, bad, count: buf.count, worst }
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
        for (x, bits) in [(1.0f32, 0x3c00u16), (-2.0, 0xc000), (65504.0, 0x7bff), (1e6, 0x7c00), (5.960_464_5e-8, 0x0001), (0.1, 0x2e66)] {
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
