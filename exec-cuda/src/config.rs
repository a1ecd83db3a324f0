//! Launch configurations of the tiled kernel and how one is chosen.

/// One compiled variant of the tiled kernel: `block` threads, each target shared by
/// `threads_per_target` threads (their partial sums combined with warp shuffles), each
/// thread holding `targets_per_thread` targets (so each shared-memory load serves that
/// many interactions).
///
/// ```
/// use nbody_cuda::LaunchConfig;
/// let c = LaunchConfig { block: 128, threads_per_target: 8, targets_per_thread: 2 };
/// assert_eq!(c.targets_per_block(), 32);
/// assert_eq!(c.blocks(1000), 32);
/// assert!(nbody_cuda::CANDIDATES.contains(&c));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchConfig {
    /// Threads per block.
    pub block: u32,
    /// Threads sharing one target (1, 2, 4, 8, 16 or 32).
    pub threads_per_target: u32,
    /// Targets per thread (1, 2 or 4).
    pub targets_per_thread: u32,
}

const fn cfg(block: u32, threads_per_target: u32, targets_per_thread: u32) -> LaunchConfig {
    LaunchConfig { block, threads_per_target, targets_per_thread }
}

/// The variants compiled into the fatbin, from most work per thread to least.
pub const CANDIDATES: [LaunchConfig; 11] = [
    cfg(256, 1, 4),
    cfg(128, 1, 4),
    cfg(128, 1, 2),
    cfg(128, 1, 1),
    cfg(128, 2, 4),
    cfg(128, 4, 4),
    cfg(128, 8, 4),
    cfg(128, 8, 2),
    cfg(128, 16, 2),
    cfg(128, 16, 1),
    cfg(128, 32, 1),
];

/// Sources are padded with massless particles to a multiple of this (the largest block),
/// so no variant needs a bounds test in its inner loop.
pub const SOURCE_PAD: usize = 256;

impl LaunchConfig {
    /// Targets one block computes.
    pub fn targets_per_block(&self) -> u32 {
        self.block / self.threads_per_target * self.targets_per_thread
    }

    /// Blocks needed for `n_targets`.
    pub fn blocks(&self, n_targets: usize) -> u32 {
        n_targets.div_ceil(self.targets_per_block() as usize) as u32
    }

    /// The kernel's symbol in the fatbin.
    pub(crate) fn kernel_name(&self, precision: &str, potential: bool, masked: bool) -> String {
        format!(
            "nbody_tiled_{precision}_b{}_tp{}_ni{}_p{}_m{}",
            self.block, self.threads_per_target, self.targets_per_thread, potential as u8, masked as u8
        )
    }

    /// The heuristic choice for `n_targets` on a GPU with `sm_count` multiprocessors:
    /// the variant with the most work per thread that still gives every SM
    /// `warps_per_sm` resident warps; at small N that means several threads per target.
    pub fn choose(n_targets: usize, sm_count: u32, warps_per_sm: u32) -> LaunchConfig {
        let wanted_warps = (sm_count * warps_per_sm) as usize;
        CANDIDATES
            .iter()
            .filter(|c| c.block == 128)
            .find(|c| c.blocks(n_targets) as usize * (c.block as usize / 32) >= wanted_warps)
            .copied()
            .unwrap_or(CANDIDATES[CANDIDATES.len() - 1])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_n_uses_many_threads_per_target_and_large_n_one() {
        assert_eq!(LaunchConfig::choose(1 << 20, 132, 32).threads_per_target, 1);
        assert_eq!(LaunchConfig::choose(1024, 132, 32).threads_per_target, 32);
        let mid = LaunchConfig::choose(1 << 14, 132, 32);
        assert!(mid.threads_per_target > 1 && mid.threads_per_target < 32, "{mid:?}");
    }

    #[test]
    fn padding_covers_every_block() {
        assert!(CANDIDATES.iter().all(|c| SOURCE_PAD % c.block as usize == 0));
    }
}
