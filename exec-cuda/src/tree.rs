//! A Barnes–Hut tree that lives on the device: a force evaluation sorts, builds, sums
//! moments, walks and runs the leaf kernels without the particles or the lists leaving
//! the GPU (kernels/tree.cuh, CUB's sort and scan from kernels/sort.cu).
//!
//! 1. Morton keys over the particles' bounding box (21 bits per axis) and CUB's radix
//!    sort of (key, index); the particles gathered in key order.
//! 2. The octree, level by level: every node of more than `leaf_size` particles splits
//!    into its non-empty octants (a binary search per octant over the sorted keys), at
//!    most 21 levels deep, so coincident particles end in one leaf instead of an unbounded
//!    descent.
//! 3. Moments in f64 (one launch: a thread per leaf, then up the tree, each node taken
//!    by the last of its children to finish): mass,
//!    centre of mass, traceless quadrupole, and `b_max`
//!    (the farthest particle from the centre of mass), each node's cell record for the
//!    cell kernel and its opening radius.
//! 4. Target groups (runs of consecutive siblings packed up to `group_size` particles,
//!    so the batched kernel's items of 32 targets are mostly full), one warp walking
//!    each: a node is taken as a cell when it holds none of the group's particles and
//!    its centre of mass lies farther than `size / theta` from the group's box (size
//!    `2 b_max` or the node's side); leaves that are not are taken as particle spans.
//!    The first force's walk runs twice: it counts, CUB scans the counts into places,
//!    then it writes the lists in the batched kernels' item form (cells as a flat array
//!    of indices). Later forces walk once: each warp writes its group's list into its
//!    own scratch (sized from the longest lists so far), takes its places in the
//!    buffers the earlier walks sized with atomics, and copies it there; a list that
//!    does not fit sends the force back to the two passes.
//!    With local expansions ([`TreeSettings::local`]), a cell taken that is also far from
//!    the whole group goes to the end of the group's cell list, past the cells its items
//!    cover. Super-groups ([`TreeSettings::supers`]) walk before their groups: a warp per
//!    super-group sums the nodes far from its whole box straight into one expansion about
//!    its centre, and goes on only below nodes that every one of its groups opens; a
//!    group's walk meets those nodes by the same tests (rounded exactly as written, so
//!    the two kernels agree bit for bit) and leaves the super-group's out.
//!    A list longer than 4096 sources (2048 cells) is cut into pieces of about equal
//!    spans (cells), up to 16, each its own work item per 32 targets with its own block
//!    of partial sums, which a run per 32 targets adds in order after the kernel: a
//!    group's long list (a big box beside a dense region) would otherwise be one block's
//!    work, left running alone at the kernel's end. The cut depends on the list alone,
//!    so every walk mode writes the same items and the forces keep their bits.
//! 5. The batched particle and cell kernels over those lists; a warp per group sums its
//!    far cells into a fourth-order expansion about the group box's centre
//!    (kernels/local.cuh; a lane a cell, in registers) and evaluates it, and its
//!    super-group's, at the group's targets; then the results are added into the
//!    caller's order.
//!
//! The host reads back two handfuls of counters per force (the node count, to catch a
//! node array too small, and the list totals, to size the list buffers); nothing else
//! crosses the bus. Cells are appended in no fixed order, but a walk meets a node's
//! children in octant order, so the lists, and the forces, are the same run to run.
//!
//! ```no_run
//! use nbody_core::Params;
//! use nbody_cuda::{CudaExecutor, DeviceTree, TreeSettings};
//! let mut gpu = CudaExecutor::new()?;
//! let (bodies, _) = nbody_integrators::ics::plummer::<f32>(1 << 16, 1);
//! let set = gpu.upload(&bodies)?;
//! let mut out = gpu.zeroed_fields::<f32>(bodies.len())?;
//! let mut tree = DeviceTree::new();
//! let report = gpu.tree_forces(&mut tree, &set, &TreeSettings::new(0.5), &Params::softened(0.01), &mut out)?;
//! assert!(report.interactions < (1u64 << 32));
//! # Ok::<(), nbody_core::Error>(())
//! ```

use crate::args::{Ptr, TreeArgs, null};
use crate::batch::{Buffers, partial_bytes};
use crate::device::cuda;
use crate::kernels::{Kernel, TreeStep, count};
use crate::memory::{Scratch, download, ptr};
use crate::pipeline::driver;
use crate::{CudaExecutor, DeviceFields, DeviceParticles, DeviceReal};
use cust::event::{Event, EventFlags};
use nbody_core::cell::{Cell, Criterion};
use nbody_core::{Error, Field, Overlap, Params, Particle, Softening, validate};
use std::ffi::{c_int, c_void};

unsafe extern "C" {
    fn nbody_cub_sort_pairs(
        temp: *mut c_void,
        temp_bytes: *mut usize,
        keys_in: *const u64,
        keys_out: *mut u64,
        values_in: *const u32,
        values_out: *mut u32,
        n: c_int,
        end_bit: c_int,
        stream: *mut c_void,
    ) -> c_int;
    fn nbody_cub_exclusive_sum(
        temp: *mut c_void,
        temp_bytes: *mut usize,
        input: *const u64,
        output: *mut u64,
        n: c_int,
        stream: *mut c_void,
    ) -> c_int;
}

/// The u32 counters of tree.cuh (`TREE_*`) and how many there are.
const NODES: usize = 0;
const OVERFLOW: usize = 1;
const GROUPS: usize = 2;
const STACK_OVERFLOW: usize = 3;
const SPANS: usize = 4;
const CELLS: usize = 5;
const ITEMS: usize = 6;
const CELL_ITEMS: usize = 7;
const LIST_OVERFLOW: usize = 31;
const MOST_SPANS: usize = 32;
const MOST_CELLS: usize = 33;
/// Cut lists: their blocks of partial sums, their runs for the particle and the cell
/// kernel (TREE_SLOTS, TREE_RUNS, TREE_CELL_RUNS), then the most sources of one group's
/// particle list.
const SLOTS: usize = 39;
const RUNS: usize = 40;
const CELL_RUNS: usize = 41;
const MOST_SOURCES: usize = 42;
/// tree.cuh's counters: up to TREE_NEXT_GROUP (34) and its three walk modes, the
/// super-groups' two (TREE_SUPERS, TREE_NEXT_SUPER), the cut lists' four, then the
/// blocks done splitting each of the 21 levels (TREE_SPLIT_DONE).
const COUNTERS: usize = 64;
/// Sources (and cells) of a group's list past which the walk cuts it into pieces
/// (unless a tree says otherwise, [`DeviceTree::with_list_cut`]): about 32 (16) of the
/// kernels' tiles, a few times a Plummer sphere's mean list at theta 1.
const CUT_SOURCES: u32 = 4096;
const CUT_CELLS: u32 = 2048;
/// Levels 0 (the root) to 21: 21 bits of key per axis.
const DEPTH: i32 = 21;
/// f64 moments per node (tree.cuh's TREE_MOMENTS).
const MOMENTS: usize = 12;
/// The walk's 64-bit tallies (tree.cuh's TREE_TALLIES): interactions with particles and
/// cells, list spans and cells, cells translated into groups' expansions, then into
/// super-groups' (the last: the super-group walk's, which the group walks do not reset).
const TALLIES: usize = 6;
/// Entries of a group's local expansion record (local.cuh's LOCAL_RECORD).
const LOCAL_RECORD: usize = 8;
/// Entries of a super-group's record (local.cuh's SUPER_RECORD).
const SUPER_RECORD: usize = 48;
/// The most nodes a super-group hands down to its groups (its frontier), unless a tree
/// says otherwise ([`DeviceTree::with_front_capacity`]).
const SUPER_FRONT: usize = 2048;
/// tree.cuh's TREE_SUPERS: super-groups found.
const SUPERS: usize = 37;
/// List bytes per particle in [`DeviceTree::bytes_for`]'s estimate.
const LIST_BYTES: usize = 256;
/// Threads per block of the tree's kernels.
pub(crate) const THREADS: u32 = 256;
/// Stack entries of a walking warp (tree.cuh's TREE_WARP_STACK).
const WARP_STACK: usize = 4096;
/// Walking blocks (of 4 warps) per SM: the warps stride over the groups, each with its
/// own stack.
const WALK_BLOCKS_PER_SM: usize = 16;

/// How a device tree is built and walked.
///
/// ```
/// let s = nbody_cuda::TreeSettings::new(0.6);
/// assert_eq!((s.theta, s.leaf_size, s.group_size, s.side, s.quadrupole), (0.6, 40, 96, false, true));
/// assert_eq!(s.criterion, nbody_core::cell::Criterion::Geometric);
/// assert_eq!(s.local, 0.6 / 5.0);
/// assert_eq!(s.supers, 2048);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TreeSettings {
    /// Opening angle: a cell of size `s` at distance `d` from a group is taken whole
    /// when `s < theta d`.
    pub theta: f64,
    /// Most particles in a leaf.
    pub leaf_size: usize,
    /// Most targets sharing one walk (the batched kernel takes them 32 at a time).
    pub group_size: usize,
    /// The size is the node's side (Barnes & Hut) instead of `2 b_max`.
    pub side: bool,
    /// Cells carry their quadrupole (else their monopole only).
    pub quadrupole: bool,
    /// When a cell is taken whole: the geometric test with `theta`, or Gadget's relative
    /// test, which reads the previous field ([`CudaExecutor::tree_forces_after`]; without
    /// one it is the geometric test).
    pub criterion: Criterion,
    /// Local expansions: a cell the walk takes whose centre of mass lies at least
    /// `r / local` from the group's centre (`r` the group box's half diagonal) is
    /// translated once into the group's fourth-order expansion (the
    /// [`nbody_core::local`] series) instead of meeting each target;
    /// that adds about `local⁴` of the cell's field to its error. 0 turns them off.
    pub local: f64,
    /// Super-groups (with local expansions): the highest nodes of at most `supers`
    /// particles (more than `group_size`) walk first and translate the cells far from
    /// their whole box (by the same tests, with the super-group's box and centre) into one
    /// expansion that all their groups share; the groups' walks leave those cells out.
    /// Fewer translations for the same far field. At most `group_size` turns them off.
    pub supers: usize,
}

impl TreeSettings {
    /// Leaves of 40, groups of 96 (three full items of the batched kernels), the `2 b_max`
    /// size, quadrupole cells: a walk per group is cheap on the device, so small groups
    /// pay (fewer interactions per target); leaves of 40 are the best worst case over the
    /// Plummer sphere and the clustered set at the same error (docs/figures.md, Tree codes).
    /// Local expansions at `theta / 5`, at most 0.2, and super-groups of 2048: at theta 1
    /// they take the force at 2^23 on an H200 from 49 to 24 ms with the median and
    /// 99th-percentile errors within 3% of the cells' alone (docs/figures.md, Tree codes).
    pub const fn new(theta: f64) -> Self {
        Self {
            theta,
            leaf_size: 40,
            group_size: 96,
            side: false,
            quadrupole: true,
            criterion: Criterion::Geometric,
            local: Self::local_for(theta),
            supers: 2048,
        }
    }

    /// The same settings with the acceptance test `criterion`.
    ///
    /// ```
    /// use nbody_core::cell::Criterion;
    /// let s = nbody_cuda::TreeSettings::new(0.6).with_criterion(Criterion::Relative { alpha: 0.003 });
    /// assert_eq!(s.criterion, Criterion::Relative { alpha: 0.003 });
    /// ```
    pub const fn with_criterion(mut self, criterion: Criterion) -> Self {
        self.criterion = criterion;
        self
    }

    /// The local expansions [`TreeSettings::new`] takes at `theta`: `theta / 5`, at most
    /// 0.2 (their error, about `local⁴` of a far cell's field, stays below the cells'
    /// own, which falls as `theta³`).
    ///
    /// ```
    /// use nbody_cuda::TreeSettings;
    /// assert_eq!((TreeSettings::local_for(0.5), TreeSettings::local_for(1.5)), (0.1, 0.2));
    /// ```
    pub const fn local_for(theta: f64) -> f64 {
        let l = theta / 5.0;
        if l < 0.2 { l } else { 0.2 }
    }

    /// The same settings with local expansions at `local` (see [`TreeSettings::local`]).
    ///
    /// ```
    /// assert_eq!(nbody_cuda::TreeSettings::new(0.6).with_local(0.3).local, 0.3);
    /// ```
    pub const fn with_local(mut self, local: f64) -> Self {
        self.local = local;
        self
    }

    /// The same settings with super-groups of at most `supers` particles (see
    /// [`TreeSettings::supers`]; 0 for none).
    ///
    /// ```
    /// assert_eq!(nbody_cuda::TreeSettings::new(0.6).with_supers(0).supers, 0);
    /// ```
    pub const fn with_supers(mut self, supers: usize) -> Self {
        self.supers = supers;
        self
    }

    /// Whether these settings walk super-groups (local expansions on, and super-groups
    /// larger than groups).
    ///
    /// ```
    /// use nbody_cuda::TreeSettings;
    /// assert!(TreeSettings::new(0.6).super_groups());
    /// assert!(!TreeSettings::new(0.6).with_local(0.0).super_groups());
    /// ```
    pub const fn super_groups(&self) -> bool {
        self.local > 0.0 && self.supers > self.group_size
    }

    /// Checks the settings: theta finite and positive, leaves and groups of at least
    /// one particle, the criterion's alpha finite and positive, `local` in [0, 1).
    ///
    /// ```
    /// use nbody_cuda::TreeSettings;
    /// assert!(TreeSettings::new(f64::NAN).check().is_err());
    /// assert!(TreeSettings::new(0.5).with_local(1.0).check().is_err());
    /// assert!(TreeSettings::new(0.5).with_local(0.3).check().is_ok());
    /// ```
    pub fn check(&self) -> Result<(), Error> {
        if self.leaf_size == 0 || self.group_size == 0 {
            return Err(Error::InvalidParameter { name: "leaf_size and group_size", requirement: "at least 1" });
        }
        if !(0.0..1.0).contains(&self.local) {
            return Err(Error::InvalidParameter { name: "local", requirement: "in [0, 1): 0 for none" });
        }
        self.criterion.check_with(self.theta)
    }
}

/// GPU seconds of each phase of one device tree force (CUDA events).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TreeTimes {
    /// Bounding box, keys, CUB's sort and the gather.
    pub sort: f64,
    /// The octree, level by level.
    pub build: f64,
    /// Mass, centre of mass, quadrupole, opening radii.
    pub moments: f64,
    /// Groups, both walks and the scans between them.
    pub walk: f64,
    /// The batched particle and cell kernels and the scatter to the caller's order.
    pub kernels: f64,
}

impl TreeTimes {
    /// The whole force.
    pub fn total(&self) -> f64 {
        self.sort + self.build + self.moments + self.walk + self.kernels
    }
}

/// What one device tree force built and computed.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TreeReport {
    /// Nodes of the octree.
    pub nodes: usize,
    /// Target groups (walks).
    pub groups: usize,
    /// Particle spans and cell runs in the lists.
    pub spans: usize,
    /// Particle-particle interactions.
    pub interactions: u64,
    /// Particle-cell interactions.
    pub cell_interactions: u64,
    /// Cells translated into a group's local expansion (once per group each).
    pub local_cells: u64,
    /// Super-groups (walks before the groups').
    pub super_groups: usize,
    /// Cells translated into a super-group's expansion (once per super-group each).
    pub super_cells: u64,
    /// The leaf kernels' work items (up to 32 targets against a list chunk each): the
    /// particle kernel's and the cell kernel's. Their lists' lengths, not the
    /// interactions, are what the kernels pay for: a group of 33 targets costs two items.
    pub items: usize,
    /// The cell kernel's work items.
    pub cell_items: usize,
    /// The most sources of one group's particle list.
    pub longest_list: usize,
    /// Runs of 32 targets whose particle or cell list the walk cut into pieces (a list
    /// past 4096 sources or 2048 cells, or a tree's [`DeviceTree::with_list_cut`]): each
    /// piece is a work item of its own, and the run adds their partial sums in order, so
    /// one long list does not leave the kernel waiting on one block.
    pub cut_lists: usize,
    /// Traversals the walk made: 2 (count, then write) for a tree's first force, 1 once
    /// earlier walks sized its lists, 3 when a one-pass walk's lists did not fit.
    pub walks: u32,
    /// Where the time went.
    pub times: TreeTimes,
}

/// A device tree's buffers, grown as needed and kept across forces (a simulation's
/// next force reuses them). Made by [`DeviceTree::new`], used by
/// [`CudaExecutor::tree_forces`].
#[derive(Debug, Default)]
pub struct DeviceTree<T> {
    keys: Scratch,
    index: Scratch,
    sorted: Scratch,
    sorted_out: Scratch,
    bounds: Scratch,
    counters: Scratch,
    tally: Scratch,
    nodes: Scratch,
    parent: Scratch,
    arrivals: Scratch,
    moments: Scratch,
    cells: Scratch,
    opening: Scratch,
    counts: Scratch,
    item_counts: Scratch,
    span_at: Scratch,
    item_at: Scratch,
    items: Scratch,
    spans: Scratch,
    offset: Scratch,
    cell_items: Scratch,
    cell_index: Scratch,
    groups: Scratch,
    stack: Scratch,
    temp: Scratch,
    /// The one-pass walk's per-warp lists.
    scratch: Scratch,
    /// Each group's local expansion (LOCAL_RECORD entries).
    locals: Scratch,
    /// Each node's super-group index (where it is one), each group's super-group, the
    /// super-groups' nodes and records (SUPER_RECORD entries).
    node_super: Scratch,
    group_super: Scratch,
    supers: Scratch,
    super_rec: Scratch,
    /// The super-groups' frontiers (SUPER_FRONT node indices each).
    super_front: Scratch,
    /// Cut lists: each item's block of partial sums or NO_SLOT (particle and cell items),
    /// the blocks, the runs that add them.
    slots: Scratch,
    cell_slots: Scratch,
    partial: Scratch,
    runs: Scratch,
    cell_runs: Scratch,
    /// The lengths past which the walk cuts a group's particle and cell lists.
    cut: (u32, u32),
    /// Entries of a warp's scratch list (cells, spans): the longest group lists of the
    /// last two-pass walk, with room; zero until one ran.
    scratch_len: (usize, usize),
    /// Nodes the node arrays hold (grown when a build runs out).
    capacity: usize,
    /// The most nodes a super-group hands down to its groups.
    front_cap: usize,
    /// The most particles a force has been checked against the device's memory for.
    particles: usize,
    _t: core::marker::PhantomData<T>,
}

impl<T: DeviceReal> DeviceTree<T> {
    /// An empty tree; buffers come with the first force.
    pub fn new() -> Self {
        Self {
            keys: Scratch::default(),
            index: Scratch::default(),
            sorted: Scratch::default(),
            sorted_out: Scratch::default(),
            bounds: Scratch::default(),
            counters: Scratch::default(),
            tally: Scratch::default(),
            nodes: Scratch::default(),
            parent: Scratch::default(),
            arrivals: Scratch::default(),
            moments: Scratch::default(),
            cells: Scratch::default(),
            opening: Scratch::default(),
            counts: Scratch::default(),
            item_counts: Scratch::default(),
            span_at: Scratch::default(),
            item_at: Scratch::default(),
            items: Scratch::default(),
            spans: Scratch::default(),
            offset: Scratch::default(),
            cell_items: Scratch::default(),
            cell_index: Scratch::default(),
            groups: Scratch::default(),
            stack: Scratch::default(),
            temp: Scratch::default(),
            scratch: Scratch::default(),
            locals: Scratch::default(),
            node_super: Scratch::default(),
            group_super: Scratch::default(),
            supers: Scratch::default(),
            super_rec: Scratch::default(),
            super_front: Scratch::default(),
            slots: Scratch::default(),
            cell_slots: Scratch::default(),
            partial: Scratch::default(),
            runs: Scratch::default(),
            cell_runs: Scratch::default(),
            cut: (CUT_SOURCES, CUT_CELLS),
            scratch_len: (0, 0),
            capacity: 0,
            front_cap: SUPER_FRONT,
            particles: 0,
            _t: core::marker::PhantomData,
        }
    }

    /// An empty tree whose first build starts with room for `nodes` nodes (it grows
    /// when a build needs more; mostly for tests of that path).
    ///
    /// ```
    /// let tree = nbody_cuda::DeviceTree::<f32>::with_node_capacity(8);
    /// # drop(tree);
    /// ```
    pub fn with_node_capacity(nodes: usize) -> Self {
        Self { capacity: nodes.max(1), ..Self::new() }
    }

    /// An empty tree whose super-groups hand down at most `nodes` nodes each to their
    /// groups (2048 otherwise); a super-group with more lets its groups walk from the root
    /// and leave out what it took (mostly for tests of that path).
    ///
    /// ```
    /// let tree = nbody_cuda::DeviceTree::<f32>::with_front_capacity(0);
    /// # drop(tree);
    /// ```
    pub fn with_front_capacity(nodes: usize) -> Self {
        Self { front_cap: nodes, ..Self::new() }
    }

    /// An empty tree whose walks cut every group's particle list longer than `sources`
    /// and cell list longer than `cells` into pieces (0: never), instead of past 4096
    /// sources and 2048 cells (mostly for tests of that path). A piece is its own work
    /// item with its own partial sums, which a run adds in order, so one long list does
    /// not hold up the kernel's end; the cut depends on the list alone, so forces are
    /// the same from one walk to the next, but not from one cut to another.
    ///
    /// ```
    /// let tree = nbody_cuda::DeviceTree::<f32>::with_list_cut(256, 128);
    /// # drop(tree);
    /// ```
    pub fn with_list_cut(sources: u32, cells: u32) -> Self {
        Self { cut: (sources, cells), ..Self::new() }
    }

    /// An estimate of the device memory a force on `n` particles takes (bytes): the
    /// per-particle buffers, CUB's scratch, nodes for leaves half full, and lists of
    /// about 256 bytes a particle (a Plummer sphere's at theta 1 with groups of 64, 2^24
    /// particles; smaller theta, larger lists: the lists are sized after the counting
    /// walk, and a shortfall there is an error before any force is computed).
    ///
    /// ```
    /// use nbody_cuda::{DeviceTree, TreeSettings};
    /// let bytes = DeviceTree::<f32>::bytes_for(1 << 24, &TreeSettings::new(0.5));
    /// assert!(bytes > 2 << 30 && bytes < 8 << 30);
    /// ```
    pub fn bytes_for(n: usize, settings: &TreeSettings) -> usize {
        let v4 = size_of::<Particle<T>>();
        // The lists, and for cut lists (long lists at small theta) their pieces' items
        // and partial sums: about 48 bytes a particle when every list is cut in two.
        let per_particle = 16 + 8 + 2 * v4 + 24 + LIST_BYTES + 48;
        let nodes = 2 * n / settings.leaf_size.clamp(1, n.max(1)) + 64;
        let per_node =
            16 + 4 + 4 + MOMENTS * 8 + size_of::<Cell<T>>() + v4 + 8 + 4 * 8 + LOCAL_RECORD * size_of::<T>() + 3 * 4;
        // A record and a frontier for each super-group, taking them to hold a quarter of
        // `supers` particles on average (they hold from `group_size` to `supers`).
        let supers = if settings.super_groups() { n / (settings.supers / 4).max(1) + 1 } else { 0 };
        let supers = supers.saturating_mul(SUPER_RECORD * size_of::<T>() + SUPER_FRONT * 4);
        n.saturating_mul(per_particle).saturating_add(nodes.saturating_mul(per_node)).saturating_add(supers)
    }

    /// Per-particle and per-node buffers for `n` particles and `capacity` nodes.
    fn reserve(&mut self, n: usize, capacity: usize) -> Result<(), Error> {
        let v4 = size_of::<Particle<T>>();
        self.keys.reserve(2 * n * 8)?;
        self.index.reserve(2 * n * 4)?;
        self.sorted.reserve(n * v4)?;
        self.sorted_out.reserve(n * v4)?;
        self.bounds.reserve(6 * 8)?;
        self.counters.reserve(COUNTERS * 4)?;
        self.tally.reserve(TALLIES * 8)?;
        self.nodes.reserve(capacity * 16)?;
        self.parent.reserve(capacity * 4)?;
        self.arrivals.reserve(capacity * 4)?;
        self.moments.reserve(capacity * MOMENTS * 8)?;
        self.cells.reserve(capacity * size_of::<Cell<T>>())?;
        self.opening.reserve(capacity * v4)?;
        self.groups.reserve(capacity * 8)?;
        self.locals.reserve(capacity * LOCAL_RECORD * size_of::<T>())?;
        for s in [&mut self.node_super, &mut self.group_super, &mut self.supers] {
            s.reserve(capacity * 4)?;
        }
        self.capacity = capacity;
        Ok(())
    }

    /// `args` with the walk's list buffers (items, spans, offsets, cell items, cell
    /// indices) as reserved now.
    fn with_lists(&self, args: TreeArgs<T>) -> TreeArgs<T> {
        TreeArgs {
            items: at(&self.items),
            spans: at(&self.spans),
            offset: at(&self.offset),
            cell_items: at(&self.cell_items),
            cell_index: at(&self.cell_index),
            slots: at(&self.slots),
            cell_slots: at(&self.cell_slots),
            runs: at(&self.runs),
            cell_runs: at(&self.cell_runs),
            cap_slots: entries(&self.partial, partial_bytes::<T>(1)),
            cap_runs: entries(&self.runs, 16),
            cap_cell_runs: entries(&self.cell_runs, 16),
            ..args
        }
    }

    /// The walk's per-group counts and their scans.
    fn reserve_groups(&mut self, groups: usize) -> Result<(), Error> {
        for s in [&mut self.counts, &mut self.item_counts, &mut self.span_at, &mut self.item_at] {
            s.reserve(groups * 8)?;
        }
        Ok(())
    }
}

/// Entries of `entry` bytes a scratch buffer holds, as a kernel's i32 capacity.
fn entries(s: &Scratch, entry: usize) -> i32 {
    s.buf_ref().map_or(0, |b| (b.len() / entry).min(i32::MAX as usize) as i32)
}

/// The address of a reserved scratch buffer (null before its first reservation).
pub(crate) fn at(s: &Scratch) -> Ptr {
    s.buf_ref().map_or_else(null, |b| ptr(b))
}

/// A cudaError_t from sort.cu as an nbody error.
fn runtime(code: c_int, during: &'static str) -> Result<(), Error> {
    match code {
        0 => Ok(()),
        // cudaErrorMemoryAllocation
        2 => Err(Error::OutOfMemory { bytes: 0 }),
        code => Err(Error::Device { during, code: code as u32 }),
    }
}

/// Scratch bytes CUB's sort of `n` keys needs.
pub(crate) fn sort_bytes(n: usize) -> Result<usize, Error> {
    let mut bytes = 0usize;
    let (k, v) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: a null scratch only asks for its size; nothing is read or written.
    let r = unsafe { nbody_cub_sort_pairs(std::ptr::null_mut(), &mut bytes, k, k, v, v, count(n)?, 63, k.cast()) };
    runtime(r, "sizing CUB's sort").map(|_| bytes)
}

/// Queues CUB's radix sort of `n` keys and indices (the first halves of `keys` and
/// `index`) into their second halves, with `temp` (at least [`sort_bytes`]).
pub(crate) fn sort_pairs(temp: &Scratch, keys: Ptr, index: Ptr, n: usize, stream: *mut c_void) -> Result<(), Error> {
    let (keys, index) = (keys.as_raw() as usize, index.as_raw() as usize);
    let (k_in, k_out) = (keys as *const u64, (keys + n * 8) as *mut u64);
    let (v_in, v_out) = (index as *const u32, (index + n * 4) as *mut u32);
    let mut bytes = temp.buf_ref().map_or(0, |b| b.len());
    // SAFETY: keys and index hold 2n entries each (the callers' reservations), the
    // scratch `bytes` (at least what sort_bytes asked for); the sort runs on the
    // executor's stream, in its primary context, which the static runtime picks up.
    let r = unsafe {
        nbody_cub_sort_pairs(
            at(temp).as_raw() as *mut c_void,
            &mut bytes,
            k_in,
            k_out,
            v_in,
            v_out,
            count(n)?,
            63,
            stream,
        )
    };
    runtime(r, "sorting the Morton keys")
}

/// Blocks for a grid-stride kernel over at most `items` items.
pub(crate) fn grid(items: usize) -> u32 {
    items.div_ceil(THREADS as usize).clamp(1, 4096) as u32
}

impl CudaExecutor {
    /// Adds the tree-code field of device-resident `particles` on themselves into `out`
    /// (the same order); every particle is a target and a source, so `params.overlap` is
    /// not read. Plummer softening (one ε, or ε = 0 masked); the spline is
    /// [`Error::Unsupported`] here. Returns once the forces are computed, with what the
    /// tree held and the phases' GPU times.
    pub fn tree_forces<T: DeviceReal>(
        &mut self,
        tree: &mut DeviceTree<T>,
        particles: &DeviceParticles<T>,
        settings: &TreeSettings,
        params: &Params<T>,
        out: &mut DeviceFields<T>,
    ) -> Result<TreeReport, Error> {
        self.tree_forces_with(tree, particles, None, settings, params, out)
    }

    /// [`CudaExecutor::tree_forces`] after an earlier force `previous` on the same
    /// particles (same order), which the relative criterion scales its test by (a
    /// leapfrog passes its last step's field; the geometric test does not read it).
    /// `previous` and `out` must be different buffers.
    ///
    /// ```no_run
    /// use nbody_core::{cell::Criterion, Params};
    /// use nbody_cuda::{CudaExecutor, DeviceTree, TreeSettings};
    /// let mut gpu = CudaExecutor::new()?;
    /// let (bodies, _) = nbody_integrators::ics::plummer::<f32>(1 << 16, 1);
    /// let (set, params) = (gpu.upload(&bodies)?, Params::softened(0.01));
    /// let settings = TreeSettings::new(0.5).with_criterion(Criterion::Relative { alpha: 0.003 });
    /// let (mut first, mut second) = (gpu.zeroed_fields::<f32>(bodies.len())?, gpu.zeroed_fields::<f32>(bodies.len())?);
    /// let mut tree = DeviceTree::new();
    /// gpu.tree_forces(&mut tree, &set, &settings, &params, &mut first)?; // geometric
    /// gpu.tree_forces_after(&mut tree, &set, &first, &settings, &params, &mut second)?;
    /// # Ok::<(), nbody_core::Error>(())
    /// ```
    pub fn tree_forces_after<T: DeviceReal>(
        &mut self,
        tree: &mut DeviceTree<T>,
        particles: &DeviceParticles<T>,
        previous: &DeviceFields<T>,
        settings: &TreeSettings,
        params: &Params<T>,
        out: &mut DeviceFields<T>,
    ) -> Result<TreeReport, Error> {
        validate::length("previous field", particles.len(), previous.len())?;
        self.tree_forces_with(tree, particles, Some(previous), settings, params, out)
    }

    pub(crate) fn tree_forces_with<T: DeviceReal>(
        &mut self,
        tree: &mut DeviceTree<T>,
        particles: &DeviceParticles<T>,
        previous: Option<&DeviceFields<T>>,
        settings: &TreeSettings,
        params: &Params<T>,
        out: &mut DeviceFields<T>,
    ) -> Result<TreeReport, Error> {
        validate::params(params)?;
        validate::length("output", particles.len(), out.len())?;
        settings.check()?;
        // Its cell kernel is Plummer's: every other kernel is refused.
        if params.softening != Softening::Plummer {
            return Err(Error::Unsupported {
                operation: "the device tree with another softening than Plummer's",
                reason: "its cell kernel softens with Plummer's rule only",
            });
        }
        let n = particles.len();
        if n == 0 {
            return Ok(TreeReport::default());
        }
        let n_int = count(n)?;
        self.gpu.make_current()?;
        if n > tree.particles {
            // Before anything is allocated or launched: will it fit?
            self.check_tree_memory::<T>(n, settings, 0)?;
            tree.particles = n;
        }
        if tree.capacity == 0 {
            tree.capacity = (n / settings.leaf_size.min(n)).max(64) * 2;
        }
        let events: Vec<Event> = (0..6)
            .map(|_| Event::new(EventFlags::DEFAULT).map_err(cuda("creating an event")))
            .collect::<Result<_, _>>()?;
        let stream = self.gpu.stream().as_inner() as *mut c_void;
        let mark =
            |k: usize, exec: &CudaExecutor| events[k].record(exec.gpu.stream()).map_err(cuda("recording an event"));
        // Build until the node array holds the tree (a second pass only when it grew).
        let mut counters = [0u32; COUNTERS];
        loop {
            tree.reserve(n, tree.capacity)?;
            // CUB's scratch for the sort of n keys and the scans of at most `capacity`
            // counts, reserved before either is queued.
            let bytes = sort_bytes(n)?.max(Self::scan_bytes(tree.capacity)?);
            tree.temp.reserve(bytes.max(1))?;
            let args = self.tree_args(tree, particles, previous, out, settings, params, n_int)?;
            mark(0, self)?;
            self.tree_step(TreeStep::Reset, 1, 1, args)?;
            self.tree_step(TreeStep::Bounds, grid(n), THREADS, args)?;
            self.tree_step(TreeStep::Keys, grid(n), THREADS, args)?;
            sort_pairs(&tree.temp, at(&tree.keys), at(&tree.index), n, stream)?;
            let sorted_index = TreeArgs { index: at(&tree.index).wrapping_add(n * 4), ..args };
            self.tree_step(TreeStep::Gather, grid(n), THREADS, sorted_index)?;
            mark(1, self)?;
            let sorted_keys = TreeArgs { keys: at(&tree.keys).wrapping_add(n * 8), ..args };
            // Eight threads a node, as many blocks as fill the GPU once (a level's nodes
            // are not known here, and the deep levels are often empty).
            let split_blocks = grid(8 * n.min(tree.capacity)).min(self.gpu.info().sm_count * 8).max(1);
            for level in 0..DEPTH {
                self.tree_step(TreeStep::Split, split_blocks, THREADS, TreeArgs { level, ..sorted_keys })?;
            }
            if settings.super_groups() {
                // Here, so the counters read next count them too.
                self.tree_step(TreeStep::Supers, grid(n.min(tree.capacity)), THREADS, args)?;
            }
            mark(2, self)?;
            self.read_counters(tree, &mut counters)?;
            if counters[OVERFLOW] == 0 {
                break;
            }
            tree.capacity = (counters[NODES] as usize).max(tree.capacity) * 3 / 2;
        }
        let nodes = counters[NODES] as usize;
        let args = TreeArgs {
            index: at(&tree.index).wrapping_add(n * 4),
            ..self.tree_args(tree, particles, previous, out, settings, params, n_int)?
        };
        // Every node's moments, leaves first and then up the tree, in one launch.
        self.tree_step(TreeStep::Moments, grid(nodes), THREADS, args)?;
        mark(3, self)?;
        // Groups, then the counting walk over every node's slot (at most one group per
        // node; the slots past the groups stay zero for the scans). One warp walks one
        // group at a time, with its own stack.
        // Sized for the node array, not this tree's nodes: a simulation's node count
        // changes from step to step, and a regrowth frees and allocates.
        tree.reserve_groups(tree.capacity)?;
        let supers = counters[SUPERS] as usize;
        if supers > 0 {
            tree.super_rec.reserve(supers * SUPER_RECORD * size_of::<T>())?;
            tree.super_front.reserve(supers * tree.front_cap.max(1) * 4)?;
        }
        let args = TreeArgs {
            super_rec: at(&tree.super_rec),
            super_front: at(&tree.super_front),
            counts: at(&tree.counts),
            item_counts: at(&tree.item_counts),
            span_at: at(&tree.span_at),
            item_at: at(&tree.item_at),
            ..args
        };
        self.tree_step(TreeStep::Groups, grid(nodes), THREADS, args)?;
        let walk_blocks = nodes.div_ceil(4).min(self.gpu.info().sm_count as usize * WALK_BLOCKS_PER_SM).max(1);
        tree.stack.reserve(walk_blocks * 4 * WARP_STACK * 4)?;
        let args = TreeArgs { stack: at(&tree.stack), ..args };
        let walk_blocks = walk_blocks as u32;
        if supers > 0 {
            // Before the groups' walks, which read the super-groups' records.
            self.tree_step(TreeStep::SuperWalk, walk_blocks, 128, args)?;
        }
        let mut tally = [0u64; TALLIES];
        let mut walks = 0;
        let args = match self.walk_once(tree, walk_blocks, args, &mut counters, &mut tally, &mut walks)? {
            Some(args) => args,
            None => {
                walks += 2;
                self.walk_twice(tree, nodes, walk_blocks, args, &mut counters, &mut tally)?
            }
        };
        let (runs, cell_runs) = (counters[RUNS] as usize, counters[CELL_RUNS] as usize);
        let (spans, cells) = (counters[SPANS] as usize, counters[CELLS] as usize);
        let (items, cell_items) = (counters[ITEMS] as usize, counters[CELL_ITEMS] as usize);
        mark(4, self)?;
        let v4 = size_of::<Particle<T>>();
        // SAFETY: sorted_out holds n fields; ordered on this stream.
        let r = unsafe { cust::sys::cuMemsetD8Async(at(&tree.sorted_out).as_raw(), 0, n * v4, stream.cast()) };
        driver(r, "clearing the tree's outputs")?;
        // Every particle lies in exactly one of its group's leaf spans: one self term
        // each, which the last pass over the targets takes off (finish_target).
        let bufs = Buffers {
            particles: at(&tree.sorted),
            items: args.items,
            spans: args.spans,
            offsets: args.offset,
            self_counts: null(),
            out: at(&tree.sorted_out),
            lengths: null(),
            // A cut list's pieces write partial sums, which its runs add in order; every
            // other item adds atomically (no slots read when nothing was cut).
            slots: if runs > 0 { at(&tree.slots) } else { null() },
            partial: at(&tree.partial),
            runs: at(&tree.runs),
            n_runs: runs,
        };
        self.launch_batch(&bufs, items, n, params, None)?;
        if cell_items > 0 {
            let cell_bufs = Buffers {
                items: args.cell_items,
                spans: args.cell_index,
                offsets: null(),
                slots: if cell_runs > 0 { at(&tree.cell_slots) } else { null() },
                runs: at(&tree.cell_runs),
                n_runs: cell_runs,
                ..bufs
            };
            self.launch_cells(&cell_bufs, args.cells, cell_items, n, &params.with_overlap(Overlap::Disjoint), true)?;
        }
        if settings.local > 0.0 {
            // A warp per group.
            let groups = counters[GROUPS] as usize;
            // It also adds every group's targets into the caller's order.
            self.tree_step(TreeStep::Local, grid(groups * 32), THREADS, args)?;
        } else {
            self.tree_step(TreeStep::Scatter, grid(n), THREADS, args)?;
        }
        mark(5, self)?;
        events[5].synchronize().map_err(cuda("running the device tree"))?;
        download(tree.tally.buf_ref().expect("reserved"), bytemuck::cast_slice_mut(&mut tally))?;
        let secs = |a: usize, b: usize| -> Result<f64, Error> {
            let ms = events[b].elapsed_time_f32(&events[a]).map_err(cuda("reading an event"))?;
            Ok(ms as f64 * 1e-3)
        };
        Ok(TreeReport {
            nodes,
            groups: counters[GROUPS] as usize,
            spans: spans + cells,
            interactions: tally[0],
            cell_interactions: tally[1],
            local_cells: tally[4],
            super_groups: supers,
            super_cells: tally[5],
            items,
            cell_items,
            longest_list: counters[MOST_SOURCES] as usize,
            cut_lists: runs + cell_runs,
            walks,
            times: TreeTimes {
                sort: secs(0, 1)?,
                build: secs(1, 2)?,
                moments: secs(2, 3)?,
                walk: secs(3, 4)?,
                kernels: secs(4, 5)?,
            },
        })
    }

    /// [`CudaExecutor::tree_forces`] for host slices: uploads `particles`, runs the
    /// device tree and adds its field into `out`.
    pub fn tree_forces_host<T: DeviceReal>(
        &mut self,
        tree: &mut DeviceTree<T>,
        particles: &[Particle<T>],
        settings: &TreeSettings,
        params: &Params<T>,
        out: &mut [Field<T>],
    ) -> Result<TreeReport, Error> {
        validate::length("output", particles.len(), out.len())?;
        let set = self.upload(particles)?;
        let mut fields = self.zeroed_fields::<T>(particles.len())?;
        let report = self.tree_forces(tree, &set, settings, params, &mut fields)?;
        let mut got = vec![Field::zero(); particles.len()];
        self.download(&fields, &mut got)?;
        for (o, f) in out.iter_mut().zip(&got) {
            let phi = if params.potential { o.phi + f.phi } else { o.phi };
            *o = Field::new(o.ax + f.ax, o.ay + f.ay, o.az + f.az, phi);
        }
        Ok(report)
    }

    /// The one-pass walk (see the module's step 4), when an earlier two-pass walk sized
    /// the lists and the scratch fits in memory: the walked arguments, or None when the
    /// walk must run in two passes (no sizes yet, or a list that did not fit).
    fn walk_once<T: DeviceReal>(
        &self,
        tree: &mut DeviceTree<T>,
        walk_blocks: u32,
        args: TreeArgs<T>,
        counters: &mut [u32; COUNTERS],
        tally: &mut [u64; TALLIES],
        walks: &mut u32,
    ) -> Result<Option<TreeArgs<T>>, Error> {
        let (s_cells, s_spans) = tree.scratch_len;
        if s_cells == 0 {
            return Ok(None);
        }
        let words = s_cells + 3 * s_spans;
        if tree.scratch.reserve(walk_blocks as usize * 4 * words * 4).is_err() {
            // Short of memory for it: the two passes need none.
            tree.scratch.release();
            return Ok(None);
        }
        let args = TreeArgs {
            scratch: at(&tree.scratch),
            scratch_cells: count(s_cells)?,
            scratch_spans: count(s_spans)?,
            cap_spans: entries(&tree.spans, 8).min(entries(&tree.offset, 4)),
            cap_cells: entries(&tree.cell_index, 4),
            cap_items: entries(&tree.items, 16).min(entries(&tree.slots, 4)),
            cap_cell_items: entries(&tree.cell_items, 16).min(entries(&tree.cell_slots, 4)),
            ..tree.with_lists(args)
        };
        self.tree_step(TreeStep::Once, walk_blocks, 128, args)?;
        *walks += 1;
        self.walked(tree, counters, tally)?;
        // The u32 totals wrap past 2^32 entries: the 64-bit tallies must agree with them.
        let fits = counters[LIST_OVERFLOW] == 0
            && tally[2] == u64::from(counters[SPANS])
            && tally[3] == u64::from(counters[CELLS]);
        if fits {
            return Ok(Some(args));
        }
        // The two passes count again from zero (the super-group walk's tally stays).
        let stream = self.gpu.stream().as_inner() as *mut c_void;
        // SAFETY: tally holds TALLIES u64s; ordered on this stream.
        let r = unsafe { cust::sys::cuMemsetD8Async(at(&tree.tally).as_raw(), 0, (TALLIES - 1) * 8, stream.cast()) };
        driver(r, "clearing the walk's tallies")?;
        Ok(None)
    }

    /// A walk's counters and 64-bit tallies, read back; a stack that overflowed is an
    /// error.
    fn walked<T: DeviceReal>(
        &self,
        tree: &DeviceTree<T>,
        counters: &mut [u32; COUNTERS],
        tally: &mut [u64; TALLIES],
    ) -> Result<(), Error> {
        self.read_counters(tree, counters)?;
        if counters[STACK_OVERFLOW] != 0 {
            return Err(Error::Device { during: "walking the tree (stack overflow)", code: 0 });
        }
        download(tree.tally.buf_ref().expect("reserved"), bytemuck::cast_slice_mut(tally))
    }

    /// The two-pass walk: counts, scans, list buffers sized, lists written. Records the
    /// longest group lists for later one-pass walks' scratch.
    fn walk_twice<T: DeviceReal>(
        &self,
        tree: &mut DeviceTree<T>,
        nodes: usize,
        walk_blocks: u32,
        args: TreeArgs<T>,
        counters: &mut [u32; COUNTERS],
        tally: &mut [u64; TALLIES],
    ) -> Result<TreeArgs<T>, Error> {
        let stream = self.gpu.stream().as_inner() as *mut c_void;
        for buf in [args.counts, args.item_counts] {
            // SAFETY: both hold `nodes` u64s; ordered on this stream.
            let r = unsafe { cust::sys::cuMemsetD8Async(buf.as_raw(), 0, nodes * 8, stream.cast()) };
            driver(r, "clearing the walk's counts")?;
        }
        // The cut lists' counters (a failed one-pass walk took some), which the count sums.
        self.clear_counters(tree, SLOTS, 3)?;
        self.tree_step(TreeStep::Count, walk_blocks, 128, args)?;
        Self::scan(&tree.temp, args.counts, args.span_at, nodes, stream)?;
        Self::scan(&tree.temp, args.item_counts, args.item_at, nodes, stream)?;
        self.tree_step(TreeStep::Totals, 1, 1, TreeArgs { capacity: count(nodes)?, ..args })?;
        self.walked(tree, counters, tally)?;
        if tally[2].max(tally[3]) > u64::from(u32::MAX) {
            return Err(Error::Unsupported {
                operation: "a device tree force with more than 2^32 list entries",
                reason: "the lists index with 32 bits: raise theta (or alpha), or split the targets into several calls",
            });
        }
        let (spans, cells) = (counters[SPANS] as usize, counters[CELLS] as usize);
        let (items, cell_items) = (counters[ITEMS] as usize, counters[CELL_ITEMS] as usize);
        // An eighth of room beyond the need: a simulation's lists grow a little from
        // step to step, and each regrowth frees and allocates gigabytes (a device-wide
        // synchronisation).
        let roomy = |bytes: usize| bytes + bytes / 8;
        tree.spans.reserve(roomy(spans * 8))?;
        tree.offset.reserve(roomy(spans * 4))?;
        tree.cell_index.reserve(roomy(cells * 4))?;
        // Items with a slot each; the cut lists' blocks of partial sums and runs (at
        // least one, so every buffer the walk is handed exists).
        tree.items.reserve(roomy(items * 16))?;
        tree.slots.reserve(roomy(items * 4))?;
        tree.cell_items.reserve(roomy(cell_items * 16))?;
        tree.cell_slots.reserve(roomy(cell_items * 4))?;
        let at_least_one = |k: usize| roomy(counters[k] as usize).max(1);
        tree.partial.reserve(partial_bytes::<T>(at_least_one(SLOTS)))?;
        tree.runs.reserve(at_least_one(RUNS) * 16)?;
        tree.cell_runs.reserve(at_least_one(CELL_RUNS) * 16)?;
        // The scratch of later one-pass walks: the longest lists with room, in whole
        // warps' worth (even, so the spans stay 8-byte aligned).
        let scratch = |most: u32| roomy(most as usize).div_ceil(32).max(1) * 32;
        tree.scratch_len = (scratch(counters[MOST_CELLS]), scratch(counters[MOST_SPANS]));
        let args = tree.with_lists(args);
        // The fill takes the cut lists' places again (and could only overflow them if
        // the count were wrong: then nothing it wrote is used).
        self.clear_counters(tree, SLOTS, 3)?;
        self.clear_counters(tree, LIST_OVERFLOW, 1)?;
        self.tree_step(TreeStep::Fill, walk_blocks, 128, args)?;
        let mut filled = [0u32; COUNTERS];
        self.read_counters(tree, &mut filled)?;
        if filled[LIST_OVERFLOW] != 0 {
            return Err(Error::Device { during: "filling the tree's lists (more than counted)", code: 0 });
        }
        Ok(args)
    }

    /// Zeroes `len` of the tree's counters from `first` (queued on the stream).
    fn clear_counters<T: DeviceReal>(&self, tree: &DeviceTree<T>, first: usize, len: usize) -> Result<(), Error> {
        let stream = self.gpu.stream().as_inner() as *mut c_void;
        debug_assert!(first + len <= COUNTERS);
        let at = at(&tree.counters).as_raw() + (first * 4) as u64;
        // SAFETY: the counters hold COUNTERS u32s, and first + len is at most that.
        let r = unsafe { cust::sys::cuMemsetD32Async(at, 0, len, stream.cast()) };
        driver(r, "clearing the tree's counters")
    }

    /// Refuses, before any work, a tree force on `n` particles (plus `extra` bytes the
    /// caller is about to allocate) that would not fit in the device's free memory.
    pub(crate) fn check_tree_memory<T: DeviceReal>(
        &self,
        n: usize,
        settings: &TreeSettings,
        extra: usize,
    ) -> Result<(), Error> {
        let need = DeviceTree::<T>::bytes_for(n, settings).saturating_add(extra);
        if need > self.free_memory()? {
            return Err(Error::OutOfMemory { bytes: need });
        }
        Ok(())
    }

    /// The arguments every tree kernel shares (the unsorted keys and indices; the walk's
    /// list buffers null until they are sized).
    #[allow(clippy::too_many_arguments)]
    fn tree_args<T: DeviceReal>(
        &self,
        tree: &DeviceTree<T>,
        particles: &DeviceParticles<T>,
        previous: Option<&DeviceFields<T>>,
        out: &DeviceFields<T>,
        settings: &TreeSettings,
        params: &Params<T>,
        n: i32,
    ) -> Result<TreeArgs<T>, Error> {
        Ok(TreeArgs {
            particles: ptr(&particles.buf),
            sorted: at(&tree.sorted),
            sorted_out: at(&tree.sorted_out),
            out: ptr(&out.buf),
            keys: at(&tree.keys),
            index: at(&tree.index),
            bounds: at(&tree.bounds),
            counters: at(&tree.counters),
            tally: at(&tree.tally),
            nodes: at(&tree.nodes),
            parent: at(&tree.parent),
            arrivals: at(&tree.arrivals),
            moments: at(&tree.moments),
            cells: at(&tree.cells),
            opening: at(&tree.opening),
            groups: at(&tree.groups),
            previous: previous.map_or_else(null, |p| ptr(&p.buf)),
            locals: at(&tree.locals),
            node_super: at(&tree.node_super),
            group_super: at(&tree.group_super),
            supers: at(&tree.supers),
            super_rec: at(&tree.super_rec),
            theta: T::from_f64(settings.theta),
            alpha: T::from_f64(match settings.criterion {
                Criterion::Relative { alpha } => alpha,
                Criterion::Geometric => 0.0,
            }),
            g: params.g,
            eps2: params.eps * params.eps,
            local_theta: T::from_f64(settings.local),
            n,
            capacity: count(tree.capacity)?,
            leaf_size: count(settings.leaf_size.min(i32::MAX as usize))?,
            group_size: count(settings.group_size.min(i32::MAX as usize))?,
            level: 0,
            opening_side: settings.side as i32,
            quadrupole: settings.quadrupole as i32,
            relative: (previous.is_some() && matches!(settings.criterion, Criterion::Relative { .. })) as i32,
            potential: params.potential as i32,
            super_size: if settings.super_groups() { count(settings.supers.min(i32::MAX as usize))? } else { 0 },
            front_cap: count(tree.front_cap.min(i32::MAX as usize))?,
            // The batched kernel's self term in its arithmetic (none where it masks).
            self_term: match self.kernel_eps2(params)? {
                (_, true) => 0,
                _ if self.family::<T>() == crate::Family::Mixed => 2,
                _ => 1,
            },
            split_sources: tree.cut.0.min(i32::MAX as u32) as i32,
            split_cells: tree.cut.1.min(i32::MAX as u32) as i32,
            ..TreeArgs::<T>::bare(n)
        })
    }

    pub(crate) fn tree_step<T: DeviceReal>(
        &self,
        step: TreeStep,
        blocks: u32,
        threads: u32,
        args: TreeArgs<T>,
    ) -> Result<(), Error> {
        let kernel = Kernel::Tree { tag: T::FAMILY, step };
        // SAFETY: every address in `args` is a buffer reserved for the sizes the kernels
        // index (n particles, a tree's `capacity` nodes, its sized lists), or null where
        // the step does not read it.
        unsafe { self.launch(kernel, blocks, threads, args, "launching a device tree kernel") }
    }

    /// Scratch bytes CUB's exclusive sum of `len` u64s needs.
    fn scan_bytes(len: usize) -> Result<usize, Error> {
        let mut bytes = 0usize;
        let p = std::ptr::null_mut();
        // SAFETY: a null scratch only asks for its size; nothing is read or written.
        let r = unsafe { nbody_cub_exclusive_sum(std::ptr::null_mut(), &mut bytes, p, p, count(len)?, p.cast()) };
        runtime(r, "sizing CUB's scan").map(|_| bytes)
    }

    /// CUB's exclusive sum of `len` u64s from `input` into `output`.
    fn scan(temp: &Scratch, input: Ptr, output: Ptr, len: usize, stream: *mut c_void) -> Result<(), Error> {
        let (i, o) = (input.as_raw() as *const u64, output.as_raw() as *mut u64);
        let mut bytes = temp.buf_ref().map_or(0, |b| b.len());
        // SAFETY: input and output hold at least `len` u64s, the scratch at least what
        // scan_bytes asked for `capacity >= len`.
        let r =
            unsafe { nbody_cub_exclusive_sum(at(temp).as_raw() as *mut c_void, &mut bytes, i, o, count(len)?, stream) };
        runtime(r, "scanning the walk's counts")
    }

    /// Waits for the stream and reads the counters.
    fn read_counters<T: DeviceReal>(&self, tree: &DeviceTree<T>, into: &mut [u32; COUNTERS]) -> Result<(), Error> {
        self.gpu.stream().synchronize().map_err(cuda("building the device tree"))?;
        download(tree.counters.buf_ref().expect("reserved"), bytemuck::cast_slice_mut(into))
    }
}
