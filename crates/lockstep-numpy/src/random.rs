//! numpy's legacy random stream: `numpy.random.seed(n)` then
//! `numpy.random.rand(...)`. torch_ops inputs are defined by it, so it must
//! be bit-exact: MT19937 seeded with `init_genrand(n)` (numpy's legacy
//! seeding of an integer), each double made from two 32-bit outputs `a`, `b`
//! as `((a >> 5) * 2^26 + (b >> 6)) / 2^53`.

const N: usize = 624;
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UPPER_MASK: u32 = 0x8000_0000;
const LOWER_MASK: u32 = 0x7fff_ffff;

/// The state of numpy's legacy `RandomState` after `seed(n)`.
#[derive(Clone)]
pub struct LegacyRandom {
    state: [u32; N],
    index: usize,
}

impl LegacyRandom {
    /// `numpy.random.seed(seed)` for an integer seed (numpy accepts 0 to
    /// 2^32 - 1, which `u32` holds).
    pub fn seed(seed: u32) -> LegacyRandom {
        let mut state = [0u32; N];
        state[0] = seed;
        for i in 1..N {
            let prev = state[i - 1];
            state[i] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(i as u32);
        }
        LegacyRandom { state, index: N }
    }

    /// The next 32-bit output of MT19937.
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            self.twist();
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^= y >> 18;
        y
    }

    /// The next `numpy.random.rand()` value, in [0, 1).
    pub fn next_double(&mut self) -> f64 {
        let a = f64::from(self.next_u32() >> 5);
        let b = f64::from(self.next_u32() >> 6);
        (a * 67_108_864.0 + b) / 9_007_199_254_740_992.0
    }

    fn twist(&mut self) {
        for i in 0..N {
            let y = (self.state[i] & UPPER_MASK) | (self.state[(i + 1) % N] & LOWER_MASK);
            let mut next = self.state[(i + M) % N] ^ (y >> 1);
            if y & 1 != 0 {
                next ^= MATRIX_A;
            }
            self.state[i] = next;
        }
        self.index = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_is_mt19937_as_published() {
        // The reference implementation (mt19937ar.c) seeded with
        // init_genrand(5489) starts 3499211612, 581869302, 3890346734.
        let mut r = LegacyRandom::seed(5489);
        assert_eq!(
            [r.next_u32(), r.next_u32(), r.next_u32()],
            [3_499_211_612, 581_869_302, 3_890_346_734]
        );
    }

    #[test]
    fn doubles_are_numpys_for_seed_zero() {
        // numpy.random.seed(0); numpy.random.rand(2)
        let mut r = LegacyRandom::seed(0);
        assert_eq!(r.next_double(), 0.548_813_503_927_324_8);
        assert_eq!(r.next_double(), 0.715_189_366_372_419_5);
    }
}
