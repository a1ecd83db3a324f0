//! The kernels of gravity.cu as one typed table: each launch names what it runs by a
//! [`Kernel`], whose [`Kernel::name`] is the one place the exported names are spelled,
//! and passes counts through [`count`], which refuses what a kernel's `int` cannot hold
//! (a count past 2^31 would otherwise wrap into a negative length on the device).

use crate::tuning::LaunchConfig;
use nbody_core::Error;

/// The arithmetic a kernel runs in: the f32 and f64 kernels, and the mixed kernels
/// (f64 particles and sums, each interaction in f32 on double-single separations) that
/// a [`crate::CudaMixedExecutor`] runs for f64 calls. Its [`Family::tag`] is the part of
/// every kernel name that says which.
///
/// ```
/// use nbody_cuda::{DeviceReal, Family};
/// assert_eq!(Family::Mixed.tag(), "mixed");
/// assert_eq!(<f32 as DeviceReal>::FAMILY, Family::F32);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// f32 particles, f32 arithmetic.
    F32,
    /// f64 particles, f64 arithmetic.
    F64,
    /// f64 particles and sums, f32 interactions.
    Mixed,
}

impl Family {
    /// The name gravity.cu's kernels carry for this family.
    pub const fn tag(self) -> &'static str {
        match self {
            Family::F32 => "f32",
            Family::F64 => "f64",
            Family::Mixed => "mixed",
        }
    }
}

impl core::fmt::Display for Family {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.tag())
    }
}

/// The softened kernel a launch runs (common.cuh's `SOFT_*`, `2 k` for kernel `k` of
/// [`nbody_core::Softening`] with one length, `2 k + 1` with one per particle): Plummer
/// with one ε (the tuned path) or a length per particle, the spline with one support or
/// one per particle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Soft {
    Plummer = 0,
    PlummerEach = 1,
    Spline = 2,
    SplineEach = 3,
}

impl Soft {
    /// The kernels of `softening`: with one length for every particle, or one each. The
    /// one place a softening kernel maps to its device kernels; a new one fails to
    /// compile here until it has them.
    pub(crate) fn of(softening: nbody_core::Softening, each: bool) -> Soft {
        match (softening, each) {
            (nbody_core::Softening::Plummer, false) => Soft::Plummer,
            (nbody_core::Softening::Plummer, true) => Soft::PlummerEach,
            (nbody_core::Softening::Spline, false) => Soft::Spline,
            (nbody_core::Softening::Spline, true) => Soft::SplineEach,
        }
    }

    /// The mask flag a kernel's name carries: the spline's kernels mask for themselves
    /// and exist only as `m1`.
    pub(crate) fn masked(self, masked: bool) -> bool {
        match self {
            Soft::Plummer | Soft::PlummerEach => masked,
            Soft::Spline | Soft::SplineEach => true,
        }
    }

    /// The length a padding source carries in the per-particle kernels: massless, it
    /// must keep a Plummer pair finite (a length of 1) and never decide the spline's
    /// larger support (0).
    pub(crate) fn padding_length<T: nbody_core::Real>(self) -> T {
        match self {
            Soft::Plummer | Soft::PlummerEach => T::one(),
            Soft::Spline | Soft::SplineEach => T::zero(),
        }
    }
}

/// The device tree's kernels (kernels/tree.cuh), in the order a force runs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum TreeStep {
    Reset,
    Bounds,
    Keys,
    Gather,
    Split,
    Moments,
    Supers,
    Groups,
    SuperWalk,
    Count,
    Totals,
    Fill,
    Once,
    Local,
    Scatter,
}

impl TreeStep {
    /// Its part of the exported name.
    const fn name(self) -> &'static str {
        match self {
            TreeStep::Reset => "reset",
            TreeStep::Bounds => "bounds",
            TreeStep::Keys => "keys",
            TreeStep::Gather => "gather",
            TreeStep::Split => "split",
            TreeStep::Moments => "moments",
            TreeStep::Supers => "supers",
            TreeStep::Groups => "groups",
            TreeStep::SuperWalk => "super_walk",
            TreeStep::Count => "count",
            TreeStep::Totals => "totals",
            TreeStep::Fill => "fill",
            TreeStep::Once => "once",
            TreeStep::Local => "local",
            TreeStep::Scatter => "scatter",
        }
    }
}

/// A kernel of the module. `tag` is the precision [`Family`];
/// `potential` and `masked` pick the instantiation (potential summed; zero-distance
/// pairs masked, for eps = 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kernel {
    /// The tiled acceleration kernel of one launch configuration.
    Tiled { config: LaunchConfig, tag: Family, potential: bool, masked: bool, soft: Soft },
    /// Adds a source-split tiled launch's partial sums in order.
    TiledReduce { tag: Family, potential: bool, masked: bool, soft: Soft },
    /// Sums the targets a mixed reduction listed again in f64, in runs of the sources.
    MixedRedo { potential: bool, masked: bool },
    /// Adds the runs of [`Kernel::MixedRedo`] in order and finishes the targets.
    MixedRedoFinish { potential: bool, masked: bool },
    /// The warp-shuffle variant with `targets_per_thread` targets per thread.
    Shuffle { tag: Family, targets_per_thread: usize, potential: bool, masked: bool },
    /// The batched (interaction list) kernel under a softened kernel.
    Batch { tag: Family, potential: bool, masked: bool, soft: Soft },
    /// Removes the self terms a batched launch counted.
    SelfPotential { tag: Family, soft: Soft },
    /// Adds the partial sums of target groups a batched or cell launch cut into several
    /// items, in order.
    BatchReduce { tag: Family },
    /// The batched cell kernel (far cells with a quadrupole as sources); `indexed`: the
    /// list holds cell indices, not spans (the device tree's).
    Cells { tag: Family, potential: bool, indexed: bool },
    /// Density map deposit.
    Project { tag: Family },
    /// A resident system's diagnostic sums, a row per block.
    Sums { tag: Family },
    /// The gradients' pass over the sources of each target: the field and tidal tensor
    /// (`gradient: false`) or each target's gradient (`true`). `soft` is
    /// [`Soft::Plummer`] or [`Soft::Spline`]; the spline never masks.
    GradTargets { tag: Family, soft: Soft, masked: bool, gradient: bool },
    /// The vector-Jacobian product's pass over the targets of each source.
    GradSources { tag: Family, soft: Soft, masked: bool },
    /// The whole product of a system on itself in one pass.
    GradFused { tag: Family, soft: Soft, masked: bool },
    /// Adds a source-split [`Kernel::GradFused`] launch's rows and finishes.
    GradFusedReduce { tag: Family },
    /// The whole product of a system on itself, each pair once for both particles, over
    /// a band of tile diagonals (`potential`: with potential cotangents).
    GradPairs { tag: Family, soft: Soft, masked: bool, potential: bool },
    /// Adds a [`Kernel::GradPairs`] band's slot rows; the last band's finishes.
    GradPairsReduce { tag: Family },
    /// `v += a h` on resident particles.
    Kick { tag: Family },
    /// `x += v h` on resident particles.
    Drift { tag: Family },
    /// Rows of positions and a column of masses packed into records on the device.
    PackColumns { tag: Family },
    /// Records unpacked into rows of accelerations and a column of potentials.
    UnpackColumns { tag: Family },
    /// The jerk kernel (with the nearest neighbour and lists when `neighbours`).
    Jerk {
        tag: Family,
        threads_per_target: usize,
        targets_per_thread: usize,
        potential: bool,
        masked: bool,
        neighbours: bool,
    },
    /// Adds a source-split jerk launch's partial sums in order.
    JerkReduce { tag: Family, potential: bool, masked: bool, neighbours: bool },
    /// Hermite: every particle predicted to a time.
    HermitePredict { tag: Family },
    /// Hermite: the active particles' predicted states gathered as targets.
    HermiteGather { tag: Family },
    /// Hermite: the active particles corrected and given new steps.
    HermiteCorrect { tag: Family },
    /// GRAPE-6 j-memory: updated records scattered to their addresses.
    JmemScatter,
    /// GRAPE-6 j-memory: i-particles placed at the positions the code passed.
    JmemPlace,
    /// Packs a jerk launch's neighbour lists end to end.
    CompactLists,
    /// One step of the device tree ([`crate::tree`]).
    Tree { tag: Family, step: TreeStep },
    /// Writes every argument struct's layout (see [`crate::args`]).
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    ProbeLayouts,
}

impl Kernel {
    /// The name gravity.cu exports it under.
    ///
    /// ```ignore
    /// assert_eq!(Kernel::Kick { tag: Family::F32 }.name(), "nbody_kick_f32");
    /// ```
    pub(crate) fn name(&self) -> String {
        let b = |x: bool| x as u8;
        match *self {
            Kernel::Tiled { config, tag, potential, masked, soft } => match soft {
                Soft::Plummer => config.kernel_name(tag, potential, masked),
                _ => format!("{}_s{}", config.kernel_name(tag, potential, soft.masked(masked)), soft as u8),
            },
            Kernel::TiledReduce { tag, potential, masked, soft } => match soft {
                Soft::Plummer => format!("nbody_tiled_reduce_{tag}_p{}_m{}", b(potential), b(masked)),
                _ => format!("nbody_tiled_reduce_{tag}_p{}_m{}_s{}", b(potential), b(soft.masked(masked)), soft as u8),
            },
            Kernel::MixedRedo { potential, masked } => format!("nbody_mixed_redo_p{}_m{}", b(potential), b(masked)),
            Kernel::MixedRedoFinish { potential, masked } => {
                format!("nbody_mixed_redo_finish_p{}_m{}", b(potential), b(masked))
            }
            Kernel::Shuffle { tag, targets_per_thread, potential, masked } => {
                format!("nbody_shuffle_{tag}_ni{targets_per_thread}_p{}_m{}", b(potential), b(masked))
            }
            Kernel::Batch { tag, potential, masked, soft } => {
                format!("nbody_batch_{tag}_p{}_m{}_s{}", b(potential), b(soft.masked(masked)), soft as u8)
            }
            Kernel::SelfPotential { tag, soft } => format!("nbody_self_potential_{tag}_s{}", soft as u8),
            Kernel::BatchReduce { tag } => format!("nbody_batch_reduce_{tag}"),
            Kernel::Cells { tag, potential, indexed: false } => format!("nbody_cells_{tag}_p{}", b(potential)),
            Kernel::Cells { tag, potential, indexed: true } => format!("nbody_cells_{tag}_p{}_indexed", b(potential)),
            Kernel::Project { tag } => format!("nbody_project_{tag}"),
            Kernel::Sums { tag } => format!("nbody_sums_{tag}"),
            Kernel::GradTargets { tag, soft, masked, gradient } => {
                format!("nbody_grad_targets_{tag}_s{}_m{}_k{}", soft as u8, b(masked), b(gradient))
            }
            Kernel::GradSources { tag, soft, masked } => {
                format!("nbody_grad_sources_{tag}_s{}_m{}", soft as u8, b(masked))
            }
            Kernel::GradFused { tag, soft, masked } => {
                format!("nbody_grad_fused_{tag}_s{}_m{}", soft as u8, b(masked))
            }
            Kernel::GradFusedReduce { tag } => format!("nbody_grad_fused_reduce_{tag}"),
            Kernel::GradPairs { tag, soft, masked, potential } => {
                format!("nbody_grad_pairs_{tag}_s{}_m{}_p{}", soft as u8, b(masked), b(potential))
            }
            Kernel::GradPairsReduce { tag } => format!("nbody_grad_pairs_reduce_{tag}"),
            Kernel::Kick { tag } => format!("nbody_kick_{tag}"),
            Kernel::Drift { tag } => format!("nbody_drift_{tag}"),
            Kernel::PackColumns { tag } => format!("nbody_columns_pack_{tag}"),
            Kernel::UnpackColumns { tag } => format!("nbody_columns_unpack_{tag}"),
            Kernel::Jerk { tag, threads_per_target, targets_per_thread, potential, masked, neighbours } => format!(
                "nbody_jerk_{tag}_tp{threads_per_target}_ni{targets_per_thread}_p{}_m{}_n{}",
                b(potential),
                b(masked),
                b(neighbours)
            ),
            Kernel::JerkReduce { tag, potential, masked, neighbours } => {
                format!("nbody_jerk_reduce_{tag}_p{}_m{}_n{}", b(potential), b(masked), b(neighbours))
            }
            Kernel::HermitePredict { tag } => format!("nbody_hermite_predict_{tag}"),
            Kernel::HermiteGather { tag } => format!("nbody_hermite_gather_{tag}"),
            Kernel::HermiteCorrect { tag } => format!("nbody_hermite_correct_{tag}"),
            Kernel::JmemScatter => "nbody_jmem_scatter".into(),
            Kernel::JmemPlace => "nbody_jmem_place".into(),
            Kernel::CompactLists => "nbody_compact_lists".into(),
            Kernel::Tree { tag, step } => format!("nbody_tree_{}_{tag}", step.name()),
            Kernel::ProbeLayouts => "nbody_probe_layouts".into(),
        }
    }

    /// The argument struct the kernel takes (its name in kernels/args.h; the probe
    /// takes a pointer and a count instead).
    pub(crate) fn args(&self) -> &'static str {
        match self {
            Kernel::Tiled { .. }
            | Kernel::TiledReduce { .. }
            | Kernel::MixedRedo { .. }
            | Kernel::MixedRedoFinish { .. }
            | Kernel::Shuffle { .. } => "TiledArgs",
            Kernel::Batch { .. } | Kernel::SelfPotential { .. } | Kernel::BatchReduce { .. } => "BatchArgs",
            Kernel::Cells { .. } => "CellArgs",
            Kernel::Project { .. } => "ProjectArgs",
            Kernel::Sums { .. } => "SumsArgs",
            Kernel::GradTargets { .. }
            | Kernel::GradSources { .. }
            | Kernel::GradFused { .. }
            | Kernel::GradFusedReduce { .. }
            | Kernel::GradPairs { .. }
            | Kernel::GradPairsReduce { .. } => "GradArgs",
            Kernel::Kick { .. } | Kernel::Drift { .. } => "StepArgs",
            Kernel::PackColumns { .. } | Kernel::UnpackColumns { .. } => "ColumnsArgs",
            Kernel::Jerk { .. } | Kernel::JerkReduce { .. } => "JerkArgs",
            Kernel::HermitePredict { .. } | Kernel::HermiteGather { .. } | Kernel::HermiteCorrect { .. } => {
                "HermiteArgs"
            }
            Kernel::JmemScatter | Kernel::JmemPlace => "JmemArgs",
            Kernel::CompactLists => "ListsArgs",
            Kernel::Tree { .. } => "TreeArgs",
            Kernel::ProbeLayouts => "long",
        }
    }

    /// One kernel of every kind (for the tests that the names and arguments are those
    /// gravity.cu exports).
    #[cfg(test)]
    pub(crate) fn samples() -> Vec<Kernel> {
        use Family::{F32, F64, Mixed};
        let config = crate::tuning::CANDIDATES[0];
        let (potential, masked) = (true, false);
        vec![
            Kernel::Tiled { config, tag: Mixed, potential, masked, soft: Soft::Plummer },
            Kernel::Tiled { config: crate::tuning::LADDER[0], tag: F32, potential, masked, soft: Soft::PlummerEach },
            Kernel::Tiled { config: crate::tuning::LADDER[4], tag: F64, potential, masked, soft: Soft::SplineEach },
            Kernel::TiledReduce { tag: F32, potential, masked, soft: Soft::Plummer },
            Kernel::TiledReduce { tag: F64, potential: false, masked: true, soft: Soft::Spline },
            Kernel::MixedRedo { potential, masked },
            Kernel::MixedRedoFinish { potential: false, masked: true },
            Kernel::Shuffle { tag: F64, targets_per_thread: 2, potential, masked },
            Kernel::Batch { tag: Mixed, potential, masked, soft: Soft::Plummer },
            Kernel::Batch { tag: F32, potential, masked, soft: Soft::PlummerEach },
            Kernel::Batch { tag: F64, potential: false, masked, soft: Soft::SplineEach },
            Kernel::Batch { tag: Mixed, potential, masked: true, soft: Soft::Spline },
            Kernel::SelfPotential { tag: F32, soft: Soft::Plummer },
            Kernel::SelfPotential { tag: Mixed, soft: Soft::SplineEach },
            Kernel::BatchReduce { tag: F64 },
            Kernel::Cells { tag: Mixed, potential, indexed: false },
            Kernel::Cells { tag: F32, potential, indexed: true },
            Kernel::Project { tag: F64 },
            Kernel::Sums { tag: F32 },
            Kernel::Sums { tag: F64 },
            Kernel::GradTargets { tag: F32, soft: Soft::Plummer, masked: true, gradient: false },
            Kernel::GradTargets { tag: F64, soft: Soft::Spline, masked: false, gradient: true },
            Kernel::GradSources { tag: F32, soft: Soft::Spline, masked: false },
            Kernel::GradSources { tag: F64, soft: Soft::Plummer, masked: true },
            Kernel::GradFused { tag: F32, soft: Soft::Plummer, masked: false },
            Kernel::GradFused { tag: F64, soft: Soft::Spline, masked: false },
            Kernel::GradFusedReduce { tag: F32 },
            Kernel::GradPairs { tag: F32, soft: Soft::Plummer, masked: true, potential: true },
            Kernel::GradPairs { tag: F64, soft: Soft::Spline, masked: false, potential: false },
            Kernel::GradPairsReduce { tag: F64 },
            Kernel::Kick { tag: F32 },
            Kernel::Drift { tag: F64 },
            Kernel::PackColumns { tag: F32 },
            Kernel::UnpackColumns { tag: F64 },
            Kernel::Jerk {
                tag: F64,
                threads_per_target: 4,
                targets_per_thread: 1,
                potential,
                masked,
                neighbours: true,
            },
            Kernel::JerkReduce { tag: Mixed, potential, masked, neighbours: false },
            Kernel::HermitePredict { tag: F32 },
            Kernel::HermiteGather { tag: F64 },
            Kernel::HermiteCorrect { tag: F64 },
            Kernel::JmemScatter,
            Kernel::JmemPlace,
            Kernel::CompactLists,
            Kernel::Tree { tag: F32, step: TreeStep::Split },
            Kernel::Tree { tag: F64, step: TreeStep::Fill },
            Kernel::Tree { tag: F32, step: TreeStep::Local },
            Kernel::Tree { tag: F64, step: TreeStep::SuperWalk },
            Kernel::ProbeLayouts,
        ]
    }
}

/// `n` as a kernel's `int` argument, or an error where it does not fit.
pub(crate) fn count(n: usize) -> Result<i32, Error> {
    i32::try_from(n).map_err(|_| Error::InvalidParameter { name: "count", requirement: "below 2^31 per kernel launch" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_exported_ones() {
        assert_eq!(Kernel::Kick { tag: Family::F32 }.name(), "nbody_kick_f32");
        assert_eq!(
            Kernel::Jerk {
                tag: Family::F64,
                threads_per_target: 4,
                targets_per_thread: 2,
                potential: true,
                masked: false,
                neighbours: true
            }
            .name(),
            "nbody_jerk_f64_tp4_ni2_p1_m0_n1"
        );
        assert_eq!(
            Kernel::TiledReduce { tag: Family::Mixed, potential: false, masked: true, soft: Soft::Plummer }.name(),
            "nbody_tiled_reduce_mixed_p0_m1"
        );
        assert_eq!(Kernel::JmemPlace.name(), "nbody_jmem_place");
    }

    #[test]
    fn each_kernel_has_its_two_device_values_in_registry_order() {
        for (k, &softening) in nbody_core::Softening::ALL.iter().enumerate() {
            assert_eq!(Soft::of(softening, false) as usize, 2 * k, "{softening}");
            assert_eq!(Soft::of(softening, true) as usize, 2 * k + 1, "{softening}");
        }
    }

    #[test]
    fn counts_past_an_int_are_refused() {
        assert_eq!(count(7), Ok(7));
        assert_eq!(count(i32::MAX as usize), Ok(i32::MAX));
        assert!(count(i32::MAX as usize + 1).is_err());
    }
}
